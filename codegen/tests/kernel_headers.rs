//! `prmc import` reads the kernel's `mlx5_ifc.h` of three Debian series, bookworm's 6.1,
//! trixie's 6.12 and trixie-backports' 7.x, with no error, and what it writes checks with no
//! error; a few layouts are compared with what each header says (read by hand).
//!
//! The headers come from `scripts/kernel-headers` (which `scripts/test` runs first): the
//! `linux-headers-*-common` packages fetched with apt, unpacked into
//! `$MLX5_PRM_HEADERS` or `${XDG_CACHE_HOME:-~/.cache}/mlx5-prm/headers/<suite>/mlx5/`. A
//! missing header fails the test and names the script: a skipped check would pass silently.

use prm_codegen::ir::{ArrayCount, FieldType, Ir};
use std::path::PathBuf;

fn cache() -> PathBuf {
    if let Some(p) = std::env::var_os("MLX5_PRM_HEADERS") {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("neither XDG_CACHE_HOME nor HOME is set");
    base.join("mlx5-prm/headers")
}

/// Imports one series' header, asserts 0 errors on import and on check, prints the counts.
fn import_series(suite: &str) -> Ir {
    let dir = cache().join(suite);
    let header = dir.join("mlx5/mlx5_ifc.h");
    assert!(
        header.is_file(),
        "NO {suite} HEADER: {} is missing. Run `scripts/kernel-headers` (fetches the 6.1, \
         6.12 and 7.x linux-headers-*-common packages with apt into the cache), or set \
         MLX5_PRM_HEADERS to a directory holding <suite>/mlx5/mlx5_ifc.h",
        header.display()
    );
    let package = std::fs::read_to_string(dir.join("package")).unwrap_or_default();
    let imp = prm_codegen::import::import(std::slice::from_ref(&header)).expect("readable");
    let rendered: String = imp
        .diagnostics
        .sorted()
        .into_iter()
        .filter(|d| d.severity == prm_codegen::diag::Severity::Error)
        .map(|d| prm_codegen::diag::render_human(d, &imp.sources))
        .collect();
    assert_eq!(imp.diagnostics.error_count(), 0, "{suite}:\n{rendered}");
    let (layouts, fields, enums) = (imp.layouts, imp.fields, imp.enums.len());
    let warnings = imp.diagnostics.warning_count();
    let c = prm_codegen::compile_sources(
        imp.files
            .into_iter()
            .map(|(n, t)| (PathBuf::from(n), t))
            .collect(),
    );
    assert!(
        c.is_ok(),
        "{suite}: the import does not check:\n{}",
        c.render_human()
    );
    println!(
        "{suite} ({}): {layouts} layouts, {fields} fields, {enums} enums; 0 errors, \
         {warnings} warnings; checks clean",
        package.trim()
    );
    c.ir
}

/// `(bit offset, bits spanned, count)` of `layout.field`.
fn at(ir: &Ir, layout: &str, field: &str) -> (u64, u64, Option<ArrayCount>) {
    let s = ir
        .find_struct(layout)
        .unwrap_or_else(|| panic!("no {layout}"));
    let f = s
        .fields
        .iter()
        .find(|f| f.name == field)
        .unwrap_or_else(|| panic!("no {layout}.{field}"));
    (f.bit_offset, f.span_bits(), f.count)
}

/// rqtc in each series: 0xe0 + 0x6a0 = 0x780 bits (0xf0 bytes) of fixed part, then the list
/// of RQ numbers (6.1: `rq_num[]`; 6.12 and 7.x: `DECLARE_FLEX_ARRAY` in a union, whose
/// first member is written).
fn rqtc_ends_in_rq_num(ir: &Ir) {
    assert_eq!(ir.find_struct("rqtc").expect("rqtc").size, 0xf0);
    assert_eq!(
        at(ir, "rqtc", "rq_num"),
        (0x780, 0, Some(ArrayCount::Trailing))
    );
}

#[test]
fn bookworm_6_1_imports_clean() {
    let ir = import_series("bookworm");
    rqtc_ends_in_rq_num(&ir);
    // 6.1: host_params_context at 0x80, 0x200 bits; host_sf_enable[][0x40] trails at 0x80 bytes.
    assert_eq!(
        at(&ir, "query_esw_functions_out", "host_params_context"),
        (0x80, 0x200, None)
    );
    assert_eq!(
        ir.find_struct("query_esw_functions_out").unwrap().size,
        0x80
    );
}

#[test]
fn trixie_6_12_imports_clean() {
    let ir = import_series("trixie");
    rqtc_ends_in_rq_num(&ir);
    assert_eq!(
        at(&ir, "query_esw_functions_out", "host_params_context"),
        (0x80, 0x200, None)
    );
}

#[test]
fn trixie_backports_7_x_imports_clean() {
    let ir = import_series("trixie-backports");
    rqtc_ends_in_rq_num(&ir);
    // 7.x: `union { u8 reserved_at_80[0x380]; DECLARE_FLEX_ARRAY(union
    // mlx5_ifc_net_function_params_bits, net_function_params); }` after 0x80 bits of header:
    // the size stays 0x400 bits (0x80 bytes); one 0x200-bit element fits the room.
    let s = ir.find_struct("query_esw_functions_out").unwrap();
    assert_eq!(s.size, 0x80);
    assert_eq!(
        at(&ir, "query_esw_functions_out", "net_function_num"),
        (0x60, 8, None)
    );
    assert_eq!(
        at(&ir, "query_esw_functions_out", "net_function_params"),
        (0x80, 0x200, Some(ArrayCount::Fixed(1)))
    );
    let f = s
        .fields
        .iter()
        .find(|f| f.name == "net_function_params")
        .unwrap();
    assert_eq!(f.ty, FieldType::Union("net_function_params".into()));
}

/// `prmc diff` from one series' header to the next, 6.1 → 6.12 and 6.12 → 7.x: the reports
/// are snapshots (a change of importer, differ or header pin shows in review), and a few
/// entries are checked against the headers by hand.
#[test]
fn diffs_between_kernel_series() {
    let cache = cache();
    let header = |suite: &str| {
        let h = cache.join(suite).join("mlx5/mlx5_ifc.h");
        assert!(
            h.is_file(),
            "NO {suite} HEADER: run `scripts/kernel-headers`"
        );
        h
    };
    let diff = |a: &str, b: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_prmc"))
            .arg("diff")
            .arg(header(a))
            .arg(header(b))
            .output()
            .expect("prmc runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .replace(&cache.display().to_string(), "<headers>")
    };
    let (a, b) = (
        diff("bookworm", "trixie"),
        diff("trixie", "trixie-backports"),
    );
    println!("{}", a.lines().next().unwrap_or(""));
    println!("{}", b.lines().next().unwrap_or(""));
    // By hand, from the headers: 6.12 added flow_table_fields_supported_2's inner_l4_type at
    // bit 2 (after reserved_at_0[0x2]), one bit, and MLX5_CMD_OP_ALLOW_OTHER_VHCA_ACCESS =
    // 0xb16 with its mailboxes; 7.x added MLX5_CMD_OP_PSP_ROTATE_KEY = 0xb11.
    assert!(
        a.contains("  minor added            inner_l4_type: 0x00[29] (bit 0x2, 1 bit) bool"),
        "{a}"
    );
    assert!(
        a.contains("command allow_other_vhca_access\n  minor added            opcode 0xb16"),
        "{a}"
    );
    assert!(
        b.contains("command psp_rotate_key\n  minor added            opcode 0xb11"),
        "{b}"
    );
    assert!(
        !b.contains("command allow_other_vhca_access\n"),
        "in both: {b}"
    );
    insta::assert_snapshot!("diff_6_1_to_6_12", a);
    insta::assert_snapshot!("diff_6_12_to_7", b);
}
