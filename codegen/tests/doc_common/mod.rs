//! What the reference's tests share: running `prmc doc`, reading the IR, and where the IR says
//! each field must be drawn (the diagram checks compare against this, never against the
//! diagram code).

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

use prm_codegen::ir::{ArrayCount, Ir, Struct};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `prmc doc --spec SPEC --out OUT` and returns the output directory (kept alive).
pub fn doc(spec: &Path) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new(env!("CARGO_BIN_EXE_prmc"))
        .args(["doc", "--spec"])
        .arg(spec)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("prmc runs");
    assert!(
        run.status.success(),
        "prmc doc failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

pub fn ir_of(spec: &Path) -> Ir {
    let c = prm_codegen::compile_dir(spec).expect("spec reads");
    assert!(c.is_ok(), "{}", c.render_human());
    c.ir
}

pub fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Where a field's bits must be drawn, from the IR alone: `(field, dword, hi, lo)` for each
/// piece of `[bit_offset, end)` cut at dword boundaries, with bits numbered 31 (left) to 0.
pub fn expected_pieces(s: &Struct) -> BTreeSet<(String, u64, u64, u64)> {
    let mut out = BTreeSet::new();
    let size_bits = s.size * 8;
    for f in &s.fields {
        if f.count == Some(ArrayCount::Trailing) {
            continue;
        }
        let end = f.end_bit().min(size_bits);
        let mut b = f.bit_offset;
        while b < end {
            let dw = b / 32;
            let stop = end.min((dw + 1) * 32);
            out.insert((
                f.name.clone(),
                dw,
                31 - (b - dw * 32),
                31 - (stop - 1 - dw * 32),
            ));
            b = stop;
        }
    }
    out
}

/// Parses a row's offset label: `0x08` or a run `0x10–0x1c` into a dword range.
pub fn row_dwords(label: &str) -> (u64, u64) {
    let parse = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    match label.split_once('–') {
        Some((a, b)) => (parse(a) / 4, parse(b) / 4),
        None => (parse(label) / 4, parse(label) / 4),
    }
}
