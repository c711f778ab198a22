//! The `prmc` binary: exit statuses and output streams as documented.

mod run_prmc;

use run_prmc::prmc;

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
    assert_eq!(
        code, 1,
        "a name the spec does not have is bad input, not bad usage"
    );
    assert!(err.contains("did you mean `toy_port`?"), "{err}");
    let (code, out, _) = prmc(&["layout", "--json", "--spec", "tests/good"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format_version"], 2);
}

/// `show` names anything in the spec: enums, commands (by name or opcode), field paths through
/// nested layouts, and filters big tables. Positions checked by hand against the PRM notation:
/// `0x10[4:0]` is bits 128 + (31 - 4) = 155 = 0x9b in the kernel's numbering.
#[test]
fn show_enums_commands_field_paths_and_filters() {
    let show = |args: &[&str]| {
        let mut a = vec!["show"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--spec", "../spec"]);
        prmc(&a)
    };
    let (code, out, err) = show(&["cqe_size"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("enum cqe_size: 3 bits, "), "{out}");
    assert!(out.contains("0x1  bytes_128"), "{out}");
    assert!(out.contains("fields of this type: cqc.cqe_sz"), "{out}");

    let (code, by_name, _) = show(&["create_cq"]);
    assert_eq!(code, 0);
    assert!(
        by_name.starts_with("command create_cq: opcode 0x400, "),
        "{by_name}"
    );
    assert!(
        by_name.contains("input:   create_cq_in (0x110 bytes)"),
        "{by_name}"
    );
    assert!(
        by_name.contains("output:  create_cq_out (0x10 bytes)"),
        "{by_name}"
    );
    let (_, by_opcode, _) = show(&["0x400"]);
    assert_eq!(by_opcode, by_name, "an opcode names its command");

    // An access register, by name or id: its facts, then its image.
    let (code, reg, _) = show(&["ppcnt"]);
    assert_eq!(code, 0);
    assert!(
        reg.starts_with("access register ppcnt: id 0x5008, read, "),
        "{reg}"
    );
    assert!(reg.contains("index: local_port, grp, prio_tc"), "{reg}");
    assert!(reg.contains("struct ppcnt_reg: 0x100 bytes"), "{reg}");
    assert_eq!(show(&["0x5008"]).1, reg, "a register id names its register");
    let (_, image, _) = show(&["ppcnt_reg.grp"]);
    assert!(
        image.contains("ppcnt_reg is the image of access register: ppcnt (0x5008)"),
        "{image}"
    );

    let (code, out, _) = show(&["cmd_hca_cap.log_max_qp"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("position: 0x10[4:0] of cmd_hca_cap (kernel bit offset 0x9b)"),
        "{out}"
    );
    assert!(out.contains("width:    5 bits"), "{out}");
    assert!(
        out.contains("hca_cap_union"),
        "where the layout is used: {out}"
    );

    // Through two nested layouts (the kernel's mlx5_ifc.h): qpc at bit 0xc0 of create_qp_in,
    // primary_address_path at bit 0xc0 of qpc, rmac_47_32 at bit 0x130 of ads: 0x2b0 in all,
    // byte 0x54, the low half of that dword.
    let (code, out, err) = show(&["create_qp_in.qpc.primary_address_path.rmac_47_32"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("position: 0x54[15:0] of create_qp_in (kernel bit offset 0x2b0)"),
        "{out}"
    );
    assert!(out.contains("in ads: 0x24[15:0]"), "{out}");
    assert!(
        out.contains("create_qp_in is the mailbox of: create_qp (0x500)"),
        "{out}"
    );

    let (code, out, _) = show(&["cmd_hca_cap", "--filter", "LOG_MAX_QP"]);
    assert_eq!(code, 0);
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("0x")).collect();
    assert_eq!(rows.len(), 2, "log_max_qp_sz and log_max_qp: {out}");
    assert!(!out.contains("(reserved)"), "{out}");

    let (code, _, err) = show(&["cmd_hca_cap.log_max_qpp"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no layout, enum, command or field path"),
        "{err}"
    );
    let (code, _, err) = show(&["cqe_sise"]);
    assert_eq!(code, 1);
    assert!(err.contains("did you mean `cqe_size`?"), "{err}");
}

/// A file that is not UTF-8 is one diagnostic at its first bad byte; the other files are
/// still checked (here one with an overlap error of its own). `check FILE` reports only that
/// file's problems, and says how many it left out.
#[test]
fn a_non_utf8_file_is_one_diagnostic_and_one_file_can_be_checked() {
    let dir = std::env::temp_dir().join(format!("prmc-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.yaml"),
        b"structs:\n  a:\n    size: 4\n    fields:\n      f: \"0x00[31:0]\"\n\xc3\x28 x\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.yaml"),
        "structs:\n  b:\n    size: 4\n    fields:\n      f: \"0x00[31:16]\"\n      g: \"0x00[20:0]\"\n",
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let (code, _, err) = prmc(&["check", d]);
    assert_eq!(code, 1);
    assert!(
        err.contains("a.yaml:6:1: error: byte 0xc3 is not UTF-8"),
        "{err}"
    );
    assert!(
        err.contains("b.yaml:6:10: error: `g` overlaps `f`"),
        "{err}"
    );
    assert!(err.contains("2 errors"), "{err}");

    let (code, _, err) = prmc(&["check", dir.join("b.yaml").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("`g` overlaps `f`") && !err.contains("UTF-8"),
        "{err}"
    );
    assert!(err.contains("1 error in other files"), "{err}");
    std::fs::write(
        dir.join("b.yaml"),
        "structs:\n  b:\n    size: 4\n    fields:\n      f: \"0x00[31:0]\"\n",
    )
    .unwrap();
    let (code, _, err) = prmc(&["check", dir.join("b.yaml").to_str().unwrap()]);
    assert_eq!(code, 0, "b.yaml is clean now: {err}");
    let (code, _, err) = prmc(&["check", "Cargo.toml"]);
    assert_eq!(code, 2, "not a spec file: {err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `prmc compare`: 0 when the spec and the header agree, 1 with each difference (the spec's
/// file:line, both positions), 2 on a usage error.
#[test]
fn compare_reports_differences_with_positions_and_exit_codes() {
    let dir = std::env::temp_dir().join(format!("prmc-compare-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("spec")).unwrap();
    std::fs::write(
        dir.join("toy_ifc.h"),
        "struct mlx5_ifc_toy_bits {\n\tu8         a[0x10];\n\tu8         b[0x10];\n};\n",
    )
    .unwrap();
    let spec = |b: &str| {
        std::fs::write(
            dir.join("spec/toy.yaml"),
            format!("structs:\n  toy:\n    size: 4\n    fields:\n      a: \"0x00[31:16]\"\n      b: \"{b}\"\n"),
        )
        .unwrap();
    };
    let (h, s) = (dir.join("toy_ifc.h"), dir.join("spec"));
    let args = |extra: &[&str]| {
        let mut a = vec![
            "compare",
            "--header",
            h.to_str().unwrap(),
            "--spec",
            s.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        prmc(&a)
    };
    spec("0x00[15:0]");
    let (code, out, err) = args(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("compared 1 layouts (2 fields agree)"), "{out}");
    spec("0x00[14:0]");
    let (code, out, _) = args(&[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("toy.yaml:6: toy.b (position): spec 0x00[14:0] (bit 0x11, 15 bits), header 0x00[15:0] (bit 0x10, 16 bits)"),
        "{out}"
    );
    let (code, out, _) = args(&["--format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["report"]["differences"][0]["kind"], "position");
    let (code, _, err) = prmc(&["compare", "--spec", s.to_str().unwrap()]);
    assert_eq!(code, 2, "no --header: {err}");

    // `import --only` writes the header's layout as a spec file that checks and compares clean.
    let (code, only, err) = prmc(&["import", h.to_str().unwrap(), "--only", "toy"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        only.starts_with("structs:\n  toy:\n    size: 0x4\n"),
        "{only}"
    );
    std::fs::write(dir.join("spec/toy.yaml"), &only).unwrap();
    assert_eq!(args(&[]).0, 0, "the imported layout agrees with its header");
    let (code, _, err) = prmc(&["import", h.to_str().unwrap(), "--only", "nope"]);
    assert_eq!(code, 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
