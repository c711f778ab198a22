//! `prmc compare`: the spec against a kernel `mlx5_ifc.h`, the independent source its layouts
//! are checked with. Every structure and union of the spec that the header also defines is
//! compared field by field (name, bit offset, width, count), and every enum of the spec that
//! has a counterpart among the header's constants value by value ([`enums`]). Each difference
//! carries both positions in the PRM's notation and where the spec writes the field, so a
//! person can go and fix it; a list of intended differences ([`expected`]) turns the report
//! into a gate: what is not listed fails, and so does a listed difference that went away.

pub mod enums;
pub mod expected;
mod layouts;

use crate::import::enums::HeaderEnum;
use crate::ir::Ir;
use serde::Serialize;
use std::collections::BTreeMap;

/// One difference between the spec and the header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The structure's, union's or enum's name.
    pub layout: String,
    /// The field, member or value (`*` for the whole layout).
    pub field: String,
    /// `missing`, `extra`, `position`, `size`, `members` (layouts) or `value`, `extra`,
    /// `missing` (enums): the kinds `tests/kernel_differences.yaml` lists.
    pub kind: String,
    /// What differs, in words, with PRM positions.
    pub detail: String,
    /// Where the spec writes it (`qp.yaml:225`), when the spec has it.
    pub source: Option<String>,
}

/// The comparison of a spec with a header.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Every difference, by layout, field and kind.
    pub differences: Vec<Difference>,
    /// Layouts both define.
    pub layouts: usize,
    /// Fields and union members that agree.
    pub fields: usize,
    /// Enums with a counterpart in the header.
    pub enums: usize,
    /// Enum values that agree.
    pub values: usize,
    /// The spec's structures the header does not define (checked against other sources).
    pub not_in_header: Vec<String>,
}

/// Compares `spec` with the header imported as `kernel` (and its enum constants
/// `header_enums`); `enum_counterparts` names the constant prefix of spec enums the naming
/// convention does not find; `only`, when not empty, restricts the report to those layouts
/// and enums.
pub fn compare(
    spec: &Ir,
    kernel: &Ir,
    header_enums: &[HeaderEnum],
    enum_counterparts: &BTreeMap<String, String>,
    only: &[String],
) -> Report {
    let keep = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let mut report = Report::default();
    layouts::compare(spec, kernel, &keep, &mut report);
    enums::compare(spec, header_enums, enum_counterparts, &keep, &mut report);
    report
        .differences
        .sort_by(|a, b| (&a.layout, &a.field, &a.kind).cmp(&(&b.layout, &b.field, &b.kind)));
    report.not_in_header = spec
        .structs
        .iter()
        .filter(|s| keep(&s.name) && kernel.find_struct(&s.name).is_none())
        .map(|s| s.name.clone())
        .collect();
    report
}

/// The header `path` imported and compiled like a spec: its layouts, and its enum constants.
/// The error is the import's or the check's diagnostics, rendered.
pub fn import_header(path: &std::path::Path) -> Result<(Ir, Vec<HeaderEnum>), String> {
    let imp = crate::import::import(&[path.to_path_buf()])
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if imp.diagnostics.error_count() > 0 {
        let text: String = imp
            .diagnostics
            .sorted()
            .into_iter()
            .filter(|d| d.severity == crate::diag::Severity::Error)
            .map(|d| crate::diag::render_human(d, &imp.sources))
            .collect();
        return Err(format!("the header does not import:\n{text}"));
    }
    let c = crate::compile_sources(
        imp.files
            .into_iter()
            .map(|(n, t)| (std::path::PathBuf::from(n), t))
            .collect(),
    );
    if !c.is_ok() {
        return Err(format!(
            "the imported header does not check:\n{}",
            c.render_human()
        ));
    }
    Ok((c.ir, imp.enums))
}

/// The report for people: each difference with where the spec writes it, then `problems`
/// (when a list of intended differences was given) and a summary line.
pub fn render_text(r: &Report, header: &str, problems: Option<&[String]>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    match problems {
        None => {
            for d in &r.differences {
                let at = d
                    .source
                    .as_deref()
                    .map(|s| format!("{s}: "))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{at}{}.{} ({}): {}",
                    d.layout, d.field, d.kind, d.detail
                );
            }
        }
        Some(p) => {
            for line in p {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    let _ = writeln!(
        out,
        "compared {} layouts ({} fields agree) and {} enums ({} values agree) with {header}: \
         {} differences{}",
        r.layouts,
        r.fields,
        r.enums,
        r.values,
        r.differences.len(),
        match problems {
            Some(p) => format!(", {} not as listed", p.len()),
            None => String::new(),
        }
    );
    out
}
