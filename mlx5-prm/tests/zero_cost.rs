//! Accessors cost nothing: a getter on the fixed-size form compiles to a load, a byte swap, a
//! shift and a mask, with no bounds check and no call, the same code as the hand-written
//! shift and mask. Reads the assembly of `examples/asm_probe.rs` built in release mode and
//! snapshots each function's instructions (x86-64 only; the instructions are the contract).
//! The probe is always built in release mode, in its own target directory, whatever profile
//! runs this test, as the binary of `mlx5-prm/asm-probe` (the example's source, without the
//! dev-dependencies an example's build drags in).

// Not under coverage (`cargo llvm-cov` sets `--cfg coverage`): it instruments the probe too,
// and counters are not the contract.
#![cfg(all(target_arch = "x86_64", not(coverage)))]

use std::path::PathBuf;
use std::process::Command;

fn assembly() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = manifest.parent().unwrap().join("target/asm-probe");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        // The instructions of a plain release build are the contract: flags of the build
        // running this test (coverage instrumentation by cargo-llvm-cov, a sanitizer, a
        // target CPU) are not passed on.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .args([
            "rustc",
            "--quiet",
            "--release",
            "-p",
            "mlx5-prm-asm-probe",
            "--bin",
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
    let dir = target.join("release/deps");
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
// Under Miri: this test builds and reads assembly with child processes, which Miri cannot
// spawn (and what it checks is the compiled code, not the interpreted one).
#[cfg_attr(miri, ignore)]
fn getters_compile_to_load_swap_shift_mask() {
    let asm = assembly();
    for name in [
        "probe_get_log_cq_size",
        "probe_get_oi",
        "probe_get_dbr_addr",
        "probe_get_uar_page",
        "probe_set_log_cq_size",
        "probe_set_uar_page",
    ] {
        let code = code_of(&asm, name);
        straight(name, &code);
        insta::assert_snapshot!(name, code.join("\n"));
    }
    // The generated getter is the hand-written code, instruction for instruction: so much so
    // that LLVM merges the two functions into one symbol.
    let merged = asm
        .lines()
        .any(|l| l.trim() == "probe_hand_log_cq_size = probe_get_log_cq_size");
    assert!(merged || body(&asm, "probe_get_log_cq_size") == body(&asm, "probe_hand_log_cq_size"));
}

/// The identity of two probes: LLVM merged them into one symbol, or their instructions match.
fn same(asm: &str, a: &str, b: &str) -> bool {
    let merged = asm
        .lines()
        .any(|l| l.trim() == format!("{a} = {b}") || l.trim() == format!("{b} = {a}"));
    merged || body(asm, a) == body(asm, b)
}

/// The instructions of a probe, following an alias LLVM made of it (`a = b`).
fn code_of(asm: &str, name: &str) -> Vec<String> {
    let alias = asm.lines().find_map(|l| {
        l.trim()
            .strip_prefix(&format!("{name} = "))
            .map(|t| t.trim().to_string())
    });
    body(asm, alias.as_deref().unwrap_or(name))
}

#[test]
// Under Miri: this test builds and reads assembly with child processes, which Miri cannot
// spawn (and what it checks is the compiled code, not the interpreted one).
#[cfg_attr(miri, ignore)]
fn word_builders_compile_to_the_hand_written_shifts_and_ors() {
    let asm = assembly();
    for (built, hand) in [
        ("probe_build_cq_arm", "probe_hand_cq_arm"),
        ("probe_build_eq_arm", "probe_hand_eq_arm"),
        ("probe_build_cq_record_arm", "probe_hand_cq_record_arm"),
    ] {
        let code = code_of(&asm, built);
        assert!(
            !code
                .iter()
                .any(|i| i.starts_with("call") || i.starts_with('j') || i.contains("panic")),
            "{built} calls out or branches:\n{}",
            code.join("\n")
        );
        // The 32-bit words come out identical to the hand-written code. For the 64-bit
        // doorbell LLVM shifts every field into a 64-bit register where the hand-written
        // code builds the high dword and shifts it once: the same number of instructions.
        let hand_code = code_of(&asm, hand);
        assert!(
            same(&asm, built, hand)
                || (built == "probe_build_cq_arm" && code.len() <= hand_code.len()),
            "{built} differs from {hand}:\n{}\n---\n{}",
            code.join("\n"),
            hand_code.join("\n")
        );
        insta::assert_snapshot!(built, code.join("\n"));
        insta::assert_snapshot!(hand, hand_code.join("\n"));
    }
    // The driver's former hand composition left the CQ number unmasked, where the builder
    // masks it to the field's 24 bits; the unmasked version still needs a move to
    // zero-extend it, so the builder is no longer.
    let driver = code_of(&asm, "probe_driver_cq_arm");
    let built = code_of(&asm, "probe_build_cq_arm");
    assert!(built.len() <= driver.len(), "{built:?}\n{driver:?}");
    insta::assert_snapshot!("probe_driver_cq_arm", driver.join("\n"));
}

/// No call, no branch (a bounds check), no panic: straight-line code.
fn straight(name: &str, code: &[String]) {
    assert!(
        !code
            .iter()
            .any(|i| i.starts_with("call") || i.starts_with('j') || i.contains("panic")),
        "{name} calls out or branches:\n{}",
        code.join("\n")
    );
}

#[test]
// Under Miri: this test builds and reads assembly with child processes, which Miri cannot
// spawn (and what it checks is the compiled code, not the interpreted one).
#[cfg_attr(miri, ignore)]
fn views_from_slices_compile_to_the_owned_code() {
    let asm = assembly();
    // A view over `&[u8; 64]` / `&mut [u8; 64]` (`from_slice`, `from_slice_mut`) is the owned
    // view's code, instruction for instruction: over `&[u8]` each access would compare the
    // slice's length first and branch to a panic.
    for (borrowed, owned) in [
        ("probe_get_log_cq_size_ref", "probe_get_log_cq_size"),
        ("probe_set_log_cq_size_mut", "probe_set_log_cq_size"),
    ] {
        let code = code_of(&asm, borrowed);
        straight(borrowed, &code);
        assert_eq!(
            code,
            code_of(&asm, owned),
            "{borrowed} differs from {owned}"
        );
    }
}

#[test]
// Under Miri: this test builds and reads assembly with child processes, which Miri cannot
// spawn (and what it checks is the compiled code, not the interpreted one).
#[cfg_attr(miri, ignore)]
fn a_field_within_one_byte_is_set_with_a_byte_read_modify_write() {
    let asm = assembly();
    // `log_cq_size` is bits 4..0 of byte 12: load the byte, clear the field, mask the value,
    // or them, store the byte, return. The dword's read-modify-write took 11 and the return.
    let code = code_of(&asm, "probe_set_log_cq_size");
    straight("probe_set_log_cq_size", &code);
    assert!(code.len() <= 6, "too long:\n{}", code.join("\n"));
    // Memory is touched twice, a byte each time: a load of byte 12 and a store to it.
    let memory: Vec<_> = code.iter().filter(|i| i.contains("(%rdi)")).collect();
    assert!(
        memory.len() == 2
            && memory[0].starts_with("movzbl 12(%rdi),")
            && memory[1].starts_with("movb ")
            && memory[1].ends_with(", 12(%rdi)"),
        "not a byte load and a byte store at 12:\n{}",
        code.join("\n")
    );
    // A field over three bytes keeps the dword's read-modify-write, one 32-bit store.
    let wide = code_of(&asm, "probe_set_uar_page");
    assert!(
        wide.iter()
            .any(|i| i.starts_with("movl") && i.ends_with(", 12(%rdi)")),
        "{wide:?}"
    );
}
