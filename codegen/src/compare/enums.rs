//! Spec enums against the header's constants. A spec enum's counterpart is found by the
//! header's naming convention: the constants whose names start with `MLX5_<ENUM>_`, or with
//! `MLX5_<STRUCT>_<FIELD>_` for a field of that enum's type (`MLX5_QPC_STATE_RST` for
//! `qpc.state`), or with a prefix given for it, the first of these that names any constant.

use super::{Difference, Report};
use crate::import::enums::{with_prefix, HeaderEnum};
use crate::ir::{Enum, FieldType, Ir};
use std::collections::{BTreeMap, BTreeSet};

/// The header constants an enum is compared with: `(prefix, [(lower-case rest, value)])`.
pub fn counterpart(
    spec: &Ir,
    e: &Enum,
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

pub(super) fn compare(
    spec: &Ir,
    header: &[HeaderEnum],
    explicit: &BTreeMap<String, String>,
    keep: &dyn Fn(&str) -> bool,
    r: &mut Report,
) {
    for e in spec.enums.iter().filter(|e| keep(&e.name)) {
        let Some((prefix, theirs)) = counterpart(spec, e, header, explicit) else {
            continue;
        };
        r.enums += 1;
        let at = |line: u32| {
            spec.modules
                .get(e.module)
                .map(|m| format!("{}:{line}", m.relative))
        };
        let numbers: BTreeSet<u64> = theirs.iter().map(|(_, v)| *v).collect();
        for v in &e.values {
            let d = |kind: &str, detail: String| Difference {
                layout: e.name.clone(),
                field: v.name.clone(),
                kind: kind.into(),
                detail,
                source: at(v.span.line),
            };
            match theirs.iter().find(|(n, _)| *n == v.name) {
                Some((_, hv)) if *hv != v.value => r.differences.push(d(
                    "value",
                    format!(
                        "spec 0x{:x}, header {prefix}{} = 0x{hv:x}",
                        v.value,
                        v.name.to_ascii_uppercase()
                    ),
                )),
                Some(_) => r.values += 1,
                None if numbers.contains(&v.value) => r.values += 1,
                None => r.differences.push(d(
                    "extra",
                    format!(
                        "spec value 0x{:x}, which no {prefix}* constant has",
                        v.value
                    ),
                )),
            }
        }
        let ours: BTreeSet<u64> = e.values.iter().map(|v| v.value).collect();
        let left_out: Vec<String> = theirs
            .iter()
            .filter(|(_, v)| !ours.contains(v))
            .map(|(n, v)| format!("{prefix}{} = 0x{v:x}", n.to_ascii_uppercase()))
            .collect();
        if !left_out.is_empty() {
            r.differences.push(Difference {
                layout: e.name.clone(),
                field: "*".into(),
                kind: "missing".into(),
                detail: format!("header values not in the spec: {}", left_out.join(", ")),
                source: at(e.span.line),
            });
        }
    }
}
