//! The spec against an independent source: the Linux kernel's `mlx5_ifc.h`. The header is
//! imported with `prmc import`, and every structure of `spec/` that the header also defines is
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

use prm_codegen::import::enums::{with_prefix, HeaderEnum};
use prm_codegen::ir::{ArrayCount, FieldType, Ir, Struct};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
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

/// The header's enums.
fn header_enums() -> Vec<HeaderEnum> {
    prm_codegen::import::import(&[header()])
        .expect("header readable")
        .enums
}

/// The kernel header, imported and compiled like a spec.
fn kernel() -> Ir {
    let imp = prm_codegen::import::import(&[header()]).expect("header readable");
    assert_eq!(
        imp.diagnostics.error_count(),
        0,
        "importing the header failed"
    );
    let c = prm_codegen::compile_sources(
        imp.files
            .into_iter()
            .map(|(n, t)| (PathBuf::from(n), t))
            .collect(),
    );
    assert!(
        c.is_ok(),
        "the imported header does not check:\n{}",
        c.render_human()
    );
    c.ir
}

/// `tests/kernel_differences.yaml`.
#[derive(Debug, Deserialize)]
struct ListFile {
    differences: Vec<Listed>,
    /// Header constant prefixes of spec enums that the naming convention does not find.
    #[serde(default)]
    enum_counterparts: BTreeMap<String, String>,
}

/// One intended difference, as listed in `tests/kernel_differences.yaml`.
#[derive(Debug, Deserialize)]
struct Listed {
    layout: String,
    field: String,
    kind: String,
    reason: String,
}

/// What a field looks like for the comparison: `(bit offset, width of one element, count)`.
fn shape(f: &prm_codegen::ir::Field) -> (u64, u64, String) {
    let count = match f.count {
        None => "1".to_string(),
        Some(ArrayCount::Fixed(n)) => n.to_string(),
        Some(ArrayCount::Trailing) => "trailing".into(),
    };
    // Byte strings compare by their whole span: the kernel writes them as [N][0x8].
    if matches!(f.ty, prm_codegen::ir::FieldType::Bytes) && f.count.is_none() {
        return (f.bit_offset, f.width, count);
    }
    (f.bit_offset, f.width, count)
}

fn normalise(s: &Struct) -> BTreeMap<String, (u64, u64, String)> {
    s.fields
        .iter()
        .map(|f| (f.name.clone(), shape(f)))
        .collect()
}

/// `(layout, field, kind) -> detail` for every difference found.
fn differences(
    spec: &Ir,
    kernel: &Ir,
) -> (BTreeMap<(String, String, String), String>, usize, usize) {
    let mut out = BTreeMap::new();
    let (mut layouts, mut fields) = (0, 0);
    for s in &spec.structs {
        let Some(k) = kernel.find_struct(&s.name) else {
            continue;
        };
        layouts += 1;
        if s.size != k.size {
            out.insert(
                (s.name.clone(), "*".into(), "size".into()),
                format!("spec 0x{:x} bytes, header 0x{:x}", s.size, k.size),
            );
        }
        let (ours, theirs) = (normalise(s), normalise(k));
        for (name, shape) in &theirs {
            match ours.get(name) {
                None => {
                    out.insert(
                        (s.name.clone(), name.clone(), "missing".into()),
                        format!("header has it at {shape:?}"),
                    );
                }
                Some(o) if o != shape => {
                    out.insert(
                        (s.name.clone(), name.clone(), "position".into()),
                        format!("spec (bit, width, count) {o:?}, header {shape:?}"),
                    );
                }
                Some(_) => fields += 1,
            }
        }
        for (name, shape) in &ours {
            if !theirs.contains_key(name) {
                out.insert(
                    (s.name.clone(), name.clone(), "extra".into()),
                    format!("spec has it at {shape:?}"),
                );
            }
        }
    }
    for u in &spec.unions {
        let Some(k) = kernel.find_union(&u.name) else {
            continue;
        };
        layouts += 1;
        if u.size != k.size {
            out.insert(
                (u.name.clone(), "*".into(), "size".into()),
                format!("spec 0x{:x}, header 0x{:x}", u.size, k.size),
            );
        }
        let theirs: BTreeMap<&str, &str> = k
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.ty.as_str()))
            .collect();
        for m in &u.members {
            match theirs.get(m.name.as_str()) {
                Some(t) if *t == m.ty => fields += 1,
                Some(t) => {
                    out.insert(
                        (u.name.clone(), m.name.clone(), "position".into()),
                        format!("spec type {}, header {t}", m.ty),
                    );
                }
                None => {
                    out.insert(
                        (u.name.clone(), m.name.clone(), "extra".into()),
                        "not a member in the header".into(),
                    );
                }
            }
        }
        let ours: BTreeSet<&str> = u.members.iter().map(|m| m.name.as_str()).collect();
        let left_out: Vec<&str> = theirs
            .keys()
            .filter(|n| !ours.contains(*n))
            .copied()
            .collect();
        if !left_out.is_empty() {
            out.insert(
                (u.name.clone(), "*".into(), "members".into()),
                format!("header members not in the spec: {}", left_out.join(", ")),
            );
        }
    }
    (out, layouts, fields)
}

/// The header constants an enum is compared with: `(prefix, [(lower-case rest, value)])`.
fn counterpart(
    spec: &Ir,
    e: &prm_codegen::ir::Enum,
    header: &[HeaderEnum],
    explicit: &BTreeMap<String, String>,
) -> Option<(String, Vec<(String, u64)>)> {
    let mut prefixes = Vec::new();
    prefixes.extend(explicit.get(&e.name).cloned());
    prefixes.push(format!("MLX5_{}_", e.name.to_ascii_uppercase()));
    for s in &spec.structs {
        for f in &s.fields {
            if f.ty == FieldType::Enum(e.name.clone()) {
                prefixes.push(format!("MLX5_{}_{}_", s.name, f.name).to_ascii_uppercase());
            }
        }
    }
    prefixes.into_iter().find_map(|p| {
        let c = with_prefix(header, &p);
        (!c.is_empty()).then_some((p, c))
    })
}

/// Differences between the spec's enums and their header counterparts, as for layouts;
/// returns them with the number of enums and of values that agree.
fn enum_differences(
    spec: &Ir,
    header: &[HeaderEnum],
    explicit: &BTreeMap<String, String>,
) -> (BTreeMap<(String, String, String), String>, usize, usize) {
    let mut out = BTreeMap::new();
    let (mut enums, mut values) = (0, 0);
    for e in &spec.enums {
        let Some((prefix, theirs)) = counterpart(spec, e, header, explicit) else {
            continue;
        };
        enums += 1;
        let numbers: BTreeSet<u64> = theirs.iter().map(|(_, v)| *v).collect();
        for v in &e.values {
            match theirs.iter().find(|(n, _)| *n == v.name) {
                Some((_, hv)) if *hv != v.value => {
                    out.insert(
                        (e.name.clone(), v.name.clone(), "value".into()),
                        format!(
                            "spec 0x{:x}, header {prefix}{} = 0x{hv:x}",
                            v.value,
                            v.name.to_ascii_uppercase()
                        ),
                    );
                }
                Some(_) => values += 1,
                None if numbers.contains(&v.value) => values += 1,
                None => {
                    out.insert(
                        (e.name.clone(), v.name.clone(), "extra".into()),
                        format!(
                            "spec value 0x{:x}, which no {prefix}* constant has",
                            v.value
                        ),
                    );
                }
            }
        }
        let ours: BTreeSet<u64> = e.values.iter().map(|v| v.value).collect();
        let left_out: Vec<String> = theirs
            .iter()
            .filter(|(_, v)| !ours.contains(v))
            .map(|(n, v)| format!("{prefix}{} = 0x{v:x}", n.to_ascii_uppercase()))
            .collect();
        if !left_out.is_empty() {
            out.insert(
                (e.name.clone(), "*".into(), "missing".into()),
                format!("header values not in the spec: {}", left_out.join(", ")),
            );
        }
    }
    (out, enums, values)
}

#[test]
fn spec_matches_the_kernel_header() {
    let kernel = kernel();
    let spec = prm_codegen::compile_dir(&prm_tests::spec_dir()).unwrap();
    assert!(spec.is_ok(), "{}", spec.render_human());
    let (found, layouts, fields) = differences(&spec.ir, &kernel);

    let listed_path = prm_tests::workspace_root().join("tests/kernel_differences.yaml");
    let text = std::fs::read_to_string(&listed_path).unwrap();
    let list = marked_yaml::from_yaml::<ListFile>(0, &text)
        .unwrap_or_else(|e| panic!("{}: {e}", listed_path.display()));
    let listed: Vec<Listed> = list.differences;
    let header_enums = header_enums();
    let (enum_found, enums, values) =
        enum_differences(&spec.ir, &header_enums, &list.enum_counterparts);
    let mut found = found;
    found.extend(enum_found);
    for (name, prefix) in &list.enum_counterparts {
        if spec.ir.find_enum(name).is_none() || with_prefix(&header_enums, prefix).is_empty() {
            panic!(
                "enum_counterparts: `{name}: {prefix}` names no spec enum or no header constant"
            );
        }
    }
    let mut problems = Vec::new();
    for l in &listed {
        if l.reason.trim().is_empty() {
            problems.push(format!(
                "{}.{} ({}): listed without a reason",
                l.layout, l.field, l.kind
            ));
        }
        if !found.contains_key(&(l.layout.clone(), l.field.clone(), l.kind.clone())) {
            problems.push(format!(
                "{}.{} ({}): listed, but the spec and the header now agree: remove it",
                l.layout, l.field, l.kind
            ));
        }
    }
    for ((layout, field, kind), detail) in &found {
        if !listed
            .iter()
            .any(|l| &l.layout == layout && &l.field == field && &l.kind == kind)
        {
            problems.push(format!(
                "{layout}.{field} ({kind}): {detail}\n    fix the spec, or list it: - {{ layout: {layout}, field: \"{field}\", kind: {kind}, reason: ... }}"
            ));
        }
    }
    let not_in_header: Vec<&str> = spec
        .ir
        .structs
        .iter()
        .filter(|s| kernel.find_struct(&s.name).is_none())
        .map(|s| s.name.as_str())
        .collect();
    eprintln!(
        "compared {layouts} layouts and {fields} matching fields, {enums} enums and {values} matching \
         values with {}; {} listed differences; not in the header (checked against other \
         sources): {}",
        header().display(),
        listed.len(),
        not_in_header.join(", ")
    );
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(layouts > 0 && fields > 0, "nothing was compared");
    assert!(enums > 0 && values > 0, "no enum was compared");
}
