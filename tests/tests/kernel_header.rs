//! The spec against an independent source: the Linux kernel's `mlx5_ifc.h`, through
//! `prmc compare`'s library (`prm_codegen::compare`). The header is imported with `prmc
//! import`, and every structure of `spec/` that the header also defines is
//! compared field by field (name, bit offset, width), and every enum of `spec/` that has a
//! counterpart among the header's enum constants is compared value by value. Every intended
//! difference is listed with its reason in `tests/kernel_differences.yaml`; the test fails on
//! any other difference and on a listed difference that no longer occurs.
//!
//! An enum's counterpart is found by the header's naming convention, `MLX5_<STRUCT>_<FIELD>_`
//! for the values of a field (`MLX5_QPC_STATE_RST` for `qpc.state`): the constants whose names
//! start with `MLX5_<ENUM>_`, or with the prefix `enum_counterparts` in the list file gives, or
//! with `MLX5_<STRUCT>_<FIELD>_` for a field of that enum's type, the first of these that names
//! any constant.
//!
//! The header is Linux 6.12's, the guest kernel's (Debian's 6.12.x), which the spec and
//! `tests/kernel_differences.yaml` follow: the path in `MLX5_IFC_H`, else the newest
//! `/usr/src/linux-headers-6.12*/include/linux/mlx5/mlx5_ifc.h`, which
//! `scripts/install-kernel-headers` installs (Debian's pinned
//! `linux-headers-6.12.118+deb12-common`). Headers of other kernels there (bookworm's 6.1) are
//! not used: the list is written for 6.12, and against another header the test would fail on
//! differences that are not the spec's.

use prm_codegen::compare::expected::Expected;
use prm_codegen::import::enums::with_prefix;
use std::path::PathBuf;

/// The kernel series the spec and the list of differences follow.
const SERIES: &str = "6.12";

fn header() -> PathBuf {
    if let Some(p) = std::env::var_os("MLX5_IFC_H") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "MLX5_IFC_H={} is not a file", p.display());
        return p;
    }
    let mut found: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir("/usr/src")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let dir = e.file_name().to_string_lossy().into_owned();
            let version = dir.strip_prefix("linux-headers-")?;
            let rest = version.strip_prefix(SERIES)?;
            // `6.12`, `6.12-…` or `6.12.<n>…`, not `6.120`.
            if !(rest.is_empty() || rest.starts_with(['.', '-', '+'])) {
                return None;
            }
            let p = e.path().join("include/linux/mlx5/mlx5_ifc.h");
            p.is_file().then(|| (version_key(version), p))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).unwrap_or_else(|| {
        panic!(
            "no Linux {SERIES} mlx5_ifc.h under /usr/src/linux-headers-{SERIES}*: run \
             `scripts/install-kernel-headers` (installs Debian's pinned \
             linux-headers-{SERIES}.<x>+deb12-common), or set MLX5_IFC_H to a {SERIES} copy of \
             the header. Other kernels' headers are not used: tests/kernel_differences.yaml is \
             written for {SERIES}"
        )
    })
}

/// The numbers of a version string, for sorting (`6.12.118+deb12-common` -> 6, 12, 118, 12).
fn version_key(v: &str) -> Vec<u64> {
    v.split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect()
}

#[test]
fn spec_matches_the_kernel_header() {
    // The comparison is `prmc compare`'s (prm_codegen::compare), with the list of intended
    // differences; this test only finds the pinned header and fails on what is not as listed.
    let header = header();
    let (kernel, header_enums) =
        prm_codegen::compare::import_header(&header).unwrap_or_else(|e| panic!("{e}"));
    let spec = prm_codegen::compile_dir(&prm_tests::spec_dir()).unwrap();
    assert!(spec.is_ok(), "{}", spec.render_human());
    let listed_path = prm_tests::workspace_root().join("tests/kernel_differences.yaml");
    let text = std::fs::read_to_string(&listed_path).unwrap();
    let list = Expected::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", listed_path.display()));
    for (name, prefix) in &list.enum_counterparts {
        if spec.ir.find_enum(name).is_none() || with_prefix(&header_enums, prefix).is_empty() {
            panic!(
                "enum_counterparts: `{name}: {prefix}` names no spec enum or no header constant"
            );
        }
    }
    let report = prm_codegen::compare::compare(
        &spec.ir,
        &kernel,
        &header_enums,
        &list.enum_counterparts,
        &[],
    );
    let problems = list.problems(&report, &[]);
    eprint!(
        "{}",
        prm_codegen::compare::render_text(&report, &header.display().to_string(), Some(&problems))
    );
    eprintln!(
        "{} listed differences; not in the header (checked against other sources): {}",
        list.differences.len(),
        report.not_in_header.join(", ")
    );
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(
        report.layouts > 0 && report.fields > 0,
        "nothing was compared"
    );
    assert!(
        report.enums > 0 && report.values > 0,
        "no enum was compared"
    );
}

/// A difference the list does not have fails, with the spec's file:line and both positions
/// in PRM notation; a listed difference that no longer occurs fails too.
#[test]
fn an_unlisted_or_stale_difference_is_reported_with_positions() {
    let (kernel, header_enums) =
        prm_codegen::compare::import_header(&header()).unwrap_or_else(|e| panic!("{e}"));
    // A cqc whose log_cq_size is one bit wider than the header's 0x0c[28:24] (a one-field
    // spec written for this test).
    let spec = prm_codegen::compile_str(
        "mine.yaml",
        "structs:\n  cqc:\n    size: 0x40\n    fields:\n      log_cq_size: \"0x0c[29:24]\"\n",
    );
    assert!(spec.is_ok(), "{}", spec.render_human());
    let report = prm_codegen::compare::compare(
        &spec.ir,
        &kernel,
        &header_enums,
        &Default::default(),
        &["cqc".to_string()],
    );
    let d = report
        .differences
        .iter()
        .find(|d| d.field == "log_cq_size")
        .expect("the wider field differs");
    assert_eq!(d.kind, "position");
    assert_eq!(d.source.as_deref(), Some("mine.yaml:5"));
    assert!(
        d.detail.contains("spec 0x0c[29:24] (bit 0x62, 6 bits)")
            && d.detail.contains("header 0x0c[28:24] (bit 0x63, 5 bits)"),
        "{}",
        d.detail
    );
    let list = Expected::parse(
        "differences:\n  - { layout: cqc, field: \"uar_page\", kind: extra, reason: made up }\n",
    )
    .unwrap();
    let problems = list.problems(&report, &["cqc".to_string()]);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("uar_page (extra): listed, but")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("mine.yaml:5: cqc.log_cq_size (position)")),
        "{problems:?}"
    );
}
