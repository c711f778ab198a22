//! The `prmc` binary: exit statuses and output streams as documented.

use std::process::Command;

fn prmc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_prmc"))
        .args(args)
        .output()
        .expect("prmc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_clean_spec_exits_0() {
    let (code, _, err) = prmc(&["check", "tests/good"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("0 errors"), "{err}");
}

#[test]
fn check_the_real_spec() {
    let (code, _, err) = prmc(&["check", "../spec"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn check_bad_spec_exits_1_with_located_errors() {
    let dir = std::env::temp_dir().join(format!("prmc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("x.yaml"),
        "structs:\n  a:\n    size: 6\n    fields:\n      f: \"0x00[31:16]\"\n      g: \"0x00[20:0]\"\n",
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let (code, _, err) = prmc(&["check", d]);
    assert_eq!(code, 1);
    assert!(err.contains("x.yaml:3:11: error:"), "{err}");
    assert!(
        err.contains("x.yaml:6:10: error: `g` overlaps `f`"),
        "{err}"
    );
    assert!(err.contains("2 errors"), "{err}");

    let (code, out, _) = prmc(&["check", d, "--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["errors"], 2);
    assert_eq!(v["diagnostics"][0]["code"], "size-alignment");
    assert_eq!(v["diagnostics"][1]["line"], 6);
    assert_eq!(v["diagnostics"][1]["column"], 10);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(prmc(&["frobnicate"]).0, 2);
    assert_eq!(prmc(&["check", "--format", "xml"]).0, 2);
    let (code, _, err) = prmc(&["check", "/nonexistent/spec"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn show_and_layout() {
    let (code, out, _) = prmc(&["show", "toy_port", "--spec", "tests/good"]);
    assert_eq!(code, 0);
    assert!(out.contains("0x00        0        0x1f  up"), "{out}");
    let (code, _, err) = prmc(&["show", "toy_prot", "--spec", "tests/good"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean `toy_port`?"), "{err}");
    let (code, out, _) = prmc(&["layout", "--json", "--spec", "tests/good"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format_version"], 1);
}
