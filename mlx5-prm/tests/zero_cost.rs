//! Accessors cost nothing: a getter on the fixed-size form compiles to a load, a byte swap, a
//! shift and a mask, with no bounds check and no call, the same code as the hand-written
//! shift and mask. Reads the assembly of `examples/asm_probe.rs` built in release mode and
//! snapshots each function's instructions (x86-64 only; the instructions are the contract).
//! The probe is always built in release mode, in its own target directory, whatever profile
//! runs this test.

#![cfg(target_arch = "x86_64")]

use std::path::PathBuf;
use std::process::Command;

fn assembly() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = manifest.parent().unwrap().join("target/asm-probe");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .args([
            "rustc",
            "--quiet",
            "--release",
            "--example",
            "asm_probe",
            "--",
            "--emit",
            "asm",
            "-C",
            "codegen-units=1",
        ])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the probe failed");
    let dir = target.join("release/examples");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "s")
                && p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("asm_probe")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("an assembly file");
    std::fs::read_to_string(file).unwrap()
}

/// The instructions of one function, without directives, labels or comments.
fn body(asm: &str, name: &str) -> Vec<String> {
    let start = asm
        .lines()
        .position(|l| l.trim_end() == format!("{name}:"))
        .unwrap_or_else(|| panic!("{name} not found"));
    asm.lines()
        .skip(start + 1)
        .take_while(|l| {
            !l.trim_start().starts_with(".cfi_endproc") && !l.trim_start().starts_with(".Lfunc_end")
        })
        .map(|l| l.split('#').next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('.') && !l.ends_with(':'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn getters_compile_to_load_swap_shift_mask() {
    let asm = assembly();
    for name in [
        "probe_get_log_cq_size",
        "probe_get_oi",
        "probe_get_dbr_addr",
        "probe_get_uar_page",
        "probe_set_log_cq_size",
    ] {
        let code = body(&asm, name);
        assert!(
            !code
                .iter()
                .any(|i| i.starts_with("call") || i.contains("panic")),
            "{name} calls out:\n{}",
            code.join("\n")
        );
        assert!(
            !code.iter().any(|i| i.starts_with("j")),
            "{name} branches (a bounds check?):\n{}",
            code.join("\n")
        );
        insta::assert_snapshot!(name, code.join("\n"));
    }
    // The generated getter is the hand-written code, instruction for instruction: so much so
    // that LLVM merges the two functions into one symbol.
    let merged = asm
        .lines()
        .any(|l| l.trim() == "probe_hand_log_cq_size = probe_get_log_cq_size");
    assert!(merged || body(&asm, "probe_get_log_cq_size") == body(&asm, "probe_hand_log_cq_size"));
}
