//! The list of intended differences (`tests/kernel_differences.yaml`): each with the reason it
//! is intended, and the constant prefixes of spec enums the naming convention does not find.
//! Checking a report against it leaves what matters: differences nobody listed, and listed
//! ones that no longer occur (the list must shrink when the spec is fixed).

use super::{Difference, Report};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The file.
#[derive(Debug, Default, Deserialize)]
pub struct Expected {
    /// Every intended difference.
    pub differences: Vec<Listed>,
    /// Header constant prefixes of spec enums: enum -> prefix.
    #[serde(default)]
    pub enum_counterparts: BTreeMap<String, String>,
}

/// One intended difference.
#[derive(Debug, Clone, Deserialize)]
pub struct Listed {
    /// Layout or enum.
    pub layout: String,
    /// Field, member or value, or `*`.
    pub field: String,
    /// The kind ([`Difference::kind`]).
    pub kind: String,
    /// Why the spec differs on purpose.
    pub reason: String,
}

impl Expected {
    /// Reads the list from YAML text; the error names the file's problem.
    pub fn parse(text: &str) -> Result<Expected, String> {
        marked_yaml::from_yaml::<Expected>(0, text).map_err(|e| e.to_string())
    }

    /// What is wrong with `report` given this list: differences not listed (with the entry
    /// that would list them), listed ones without a reason or that no longer occur. Only
    /// entries for `only`'s layouts count when it is not empty.
    pub fn problems(&self, report: &Report, only: &[String]) -> Vec<String> {
        let keep = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
        let listed = |d: &Difference| {
            self.differences
                .iter()
                .any(|l| l.layout == d.layout && l.field == d.field && l.kind == d.kind)
        };
        let mut out = Vec::new();
        for l in self.differences.iter().filter(|l| keep(&l.layout)) {
            if l.reason.trim().is_empty() {
                out.push(format!(
                    "{}.{} ({}): listed without a reason",
                    l.layout, l.field, l.kind
                ));
            }
            let occurs = report
                .differences
                .iter()
                .any(|d| d.layout == l.layout && d.field == l.field && d.kind == l.kind);
            if !occurs {
                out.push(format!(
                    "{}.{} ({}): listed, but the spec and the header now agree: remove it",
                    l.layout, l.field, l.kind
                ));
            }
        }
        for d in report.differences.iter().filter(|d| !listed(d)) {
            let at = d
                .source
                .as_deref()
                .map(|s| format!("{s}: "))
                .unwrap_or_default();
            out.push(format!(
                "{at}{}.{} ({}): {}\n    fix the spec, or list it: - {{ layout: {}, field: \"{}\", kind: {}, reason: ... }}",
                d.layout, d.field, d.kind, d.detail, d.layout, d.field, d.kind
            ));
        }
        out
    }
}
