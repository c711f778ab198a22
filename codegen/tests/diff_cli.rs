//! `prmc diff` and `prmc gen --check` as commands: exit statuses, located errors for malformed
//! specs and headers, headers through the importer, what `--check` prints when the generated
//! code is out of date, and a reader that closes the pipe early.

mod run_prmc;

use run_prmc::prmc;

#[test]
fn exit_statuses() {
    let (code, out, _) = prmc(&["diff", "../spec", "../spec", "--deny", "patch"]);
    assert_eq!(code, 0);
    assert!(out.contains("verdict none (0 changes"), "{out}");
    let (code, _, err) = prmc(&[
        "diff",
        "tests/diff/old",
        "tests/diff/new",
        "--deny",
        "breaking",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("verdict major reaches --deny breaking"),
        "{err}"
    );
    let (code, _, _) = prmc(&["diff", "tests/diff/old", "tests/diff/new"]);
    assert_eq!(code, 0);
    let (code, out, _) = prmc(&[
        "diff",
        "tests/diff/old",
        "tests/diff/new",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "major");
    assert_eq!(v["format_version"], 1);
    // Usage errors.
    assert_eq!(prmc(&["diff", "tests/diff/old"]).0, 2);
    assert_eq!(
        prmc(&["diff", "tests/diff/old", "tests/diff/new", "--deny", "huge"]).0,
        2
    );
    let (code, _, err) = prmc(&["diff", "tests/diff/old", "/nonexistent/x"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("neither a spec directory nor a header"),
        "{err}"
    );
}

/// A fresh directory, removed when the test is done with it (pass or fail).
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("prmc-diff-{tag}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn malformed_input_is_located_and_exits_1() {
    let d = temp_dir("bad");
    std::fs::write(
        d.path().join("x.yaml"),
        "structs:\n  a:\n    size: 4\n    fields:\n      f: \"0x00[31:16\"\n",
    )
    .unwrap();
    let (code, _, err) = prmc(&["diff", "tests/diff/old", d.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("x.yaml:5:"), "{err}");
    let h = d.path().join("bad.h");
    std::fs::write(&h, "struct mlx5_ifc_x_bits {\n\tu8 a[0x8];\n\tu8 b[;\n};\n").unwrap();
    let (code, _, err) = prmc(&["diff", h.to_str().unwrap(), "tests/diff/old"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bad.h:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn headers_through_the_importer() {
    let (code, out, err) = prmc(&[
        "diff",
        "tests/diff/old_ifc.h",
        "tests/diff/new_ifc.h",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    let changes = r["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{out}");
    let c = &changes[0];
    assert_eq!(
        (&c["item"], &c["member"]),
        (&"toy_counter".into(), &"counter".into())
    );
    assert_eq!(
        (&c["kind"], &c["wire"], &c["rust"]),
        (&"resized".into(), &"breaking".into(), &"breaking".into())
    );
    // 0x18 bits after 8 bits (MSB-first bit 8): 0x00[23:0]; 0x10 bits after 0x10: 0x00[15:0].
    assert_eq!(c["old"], "0x00[23:0] (bit 0x8, 24 bits) u32");
    assert_eq!(c["new"], "0x00[15:0] (bit 0x10, 16 bits) u16");
    let c = &changes[1];
    assert_eq!(
        (&c["member"], &c["kind"], &c["wire"]),
        (&"limit".into(), &"added".into(), &"compatible".into())
    );
    assert_eq!(c["new"], "0x04[31:16] (bit 0x20, 16 bits) u16");
    // Embedded twice in toy_query_out, reported once, with both places.
    assert_eq!(
        r["embeddings"],
        serde_json::json!([{ "layout": "toy_counter", "embedded_in": ["toy_query_out.first", "toy_query_out.second"] }])
    );
    let (code, out, _) = prmc(&["diff", "tests/diff/old_ifc.h", "tests/diff/old_ifc.h"]);
    assert_eq!(code, 0);
    assert!(out.contains("verdict none (0 changes"), "{out}");
}

fn copy_spec(tag: &str) -> tempfile::TempDir {
    let d = temp_dir(tag);
    for e in std::fs::read_dir("../spec").unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.path().join(p.file_name().unwrap())).unwrap();
    }
    d
}

#[test]
fn gen_check_prints_the_field_changes_and_the_command_with_its_directories() {
    let d = copy_spec("gencheck");
    let cq = d.path().join("cq.yaml");
    let text = std::fs::read_to_string(&cq).unwrap();
    let narrowed = text.replace(
        "log_cq_size:     { at: \"0x0c[28:24]\"",
        "log_cq_size:     { at: \"0x0c[27:24]\"",
    );
    assert_ne!(text, narrowed, "spec/cq.yaml changed; update this test");
    std::fs::write(&cq, narrowed).unwrap();
    let spec = d.path().to_str().unwrap();
    let (code, _, err) = prmc(&["gen", spec, "--out", "../mlx5-prm/src/generated", "--check"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("out of date: ../mlx5-prm/src/generated/cq.rs"),
        "{err}"
    );
    // 0x0c[28:24] is MSB-first bit 3 * 32 + (31 - 28) = 0x63, five bits; [27:24] is 0x64, four.
    assert!(
        err.contains("major resized          log_cq_size: 0x0c[28:24] (bit 0x63, 5 bits) u8 -> 0x0c[27:24] (bit 0x64, 4 bits) u8 [wire breaking, rust silent]"),
        "{err}"
    );
    assert!(
        err.contains("struct cqc (embedded in create_cq_in.cq_context"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "run `cargo run -p prm-codegen -- gen {spec} --out ../mlx5-prm/src/generated`"
        )),
        "{err}"
    );
    // Exactly one field changed.
    assert!(err.contains("(1 changes: 1 major"), "{err}");
}

#[test]
fn gen_check_without_layout_changes_says_so() {
    let d = temp_dir("gencode");
    for e in std::fs::read_dir("../mlx5-prm/src/generated").unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.path().join(p.file_name().unwrap())).unwrap();
    }
    let cq = d.path().join("cq.rs");
    let mut text = std::fs::read_to_string(&cq).unwrap();
    text.push_str("// an edit by hand\n");
    std::fs::write(&cq, text).unwrap();
    let out = d.path().to_str().unwrap();
    let (code, _, err) = prmc(&["gen", "../spec", "--out", out, "--check"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no layout changed"), "{err}");
    assert!(
        err.contains(&format!(
            "run `cargo run -p prm-codegen -- gen ../spec --out {out}`"
        )),
        "{err}"
    );
    let empty = temp_dir("genempty");
    let (code, _, err) = prmc(&[
        "gen",
        "../spec",
        "--out",
        empty.path().to_str().unwrap(),
        "--check",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("holds no generated layouts yet"), "{err}");
}

#[test]
fn a_reader_that_stops_early_is_no_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_prmc"))
        .args(["diff", "tests/diff/old", "tests/diff/new"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before prmc has written anything (as `| head -0` would).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}
