//! The header's enums written as spec enums, so the crate generated from a whole `mlx5_ifc.h`
//! names values (`CmdOp::QueryHcaCap`) instead of leaving the user to copy numbers. An enum is
//! named by its tag (`enum mlx5_port_status` → `port_status`) or, for the header's many
//! anonymous enums, by its constants' common prefix (`MLX5_CMD_OP_` → `cmd_op`); its values by
//! what follows the prefix. An enum whose names do not make a valid spec enum (a name taken by
//! a layout or an earlier enum, two values with one name, a name the spec cannot spell) is left
//! out: the header's constants stay available to the cross-check either way.

use super::enums::HeaderEnum;
use crate::passes::naming::{is_snake_case, to_snake_case};
use std::collections::HashSet;

/// One enum ready to write.
pub struct SpecEnum {
    /// Its spec name.
    pub name: String,
    /// `(value name, value)` in the header's order.
    pub values: Vec<(String, u64)>,
}

/// The longest prefix ending just after a `_` that nearly all names share (nine in ten: the
/// header's opcode enum has one `MLX5_CMD_OPCODE_` among its `MLX5_CMD_OP_` constants).
fn common_prefix(names: &[&str]) -> String {
    let need = (names.len() * 9).div_ceil(10);
    let mut best = String::new();
    for n in names {
        for (i, _) in n.match_indices('_') {
            let p = &n[..=i];
            if p.len() > best.len() && names.iter().filter(|m| m.starts_with(p)).count() >= need {
                best = p.to_string();
            }
        }
    }
    best
}

fn strip_mlx5(s: &str) -> &str {
    s.strip_prefix("mlx5_ifc_")
        .or_else(|| s.strip_prefix("mlx5_"))
        .unwrap_or(s)
}

/// The spec enums of `enums`, leaving out names in `taken` (the layouts) and each other's.
pub fn spec_enums(enums: &[HeaderEnum], taken: &HashSet<String>) -> Vec<SpecEnum> {
    let mut used: HashSet<String> = taken.clone();
    let mut out = Vec::new();
    for e in enums {
        let names: Vec<&str> = e.constants.iter().map(|(n, _)| n.as_str()).collect();
        if names.is_empty() {
            continue;
        }
        let prefix = if names.len() == 1 {
            // One constant: the prefix is all but its last word.
            names[0]
                .rfind('_')
                .map_or(String::new(), |i| names[0][..=i].to_string())
        } else {
            common_prefix(&names)
        };
        let name = match &e.tag {
            Some(t) => strip_mlx5(&t.to_ascii_lowercase()).to_string(),
            None => strip_mlx5(&prefix.to_ascii_lowercase())
                .trim_end_matches('_')
                .to_string(),
        };
        if !is_snake_case(&name) || used.contains(&name) {
            continue;
        }
        let mut seen = HashSet::new();
        let values: Option<Vec<(String, u64)>> = e
            .constants
            .iter()
            .map(|(n, v)| {
                // A constant without the prefix keeps its name (without `MLX5_`).
                let rest = match n.strip_prefix(prefix.as_str()) {
                    Some(r) => r.to_ascii_lowercase(),
                    None => strip_mlx5(&n.to_ascii_lowercase()).to_string(),
                };
                let rest = if rest.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("v{rest}")
                } else {
                    rest
                };
                let value_name = to_snake_case(&rest);
                (is_snake_case(&value_name) && seen.insert(value_name.clone()))
                    .then_some((value_name, *v))
            })
            .collect();
        let Some(values) = values else { continue };
        used.insert(name.clone());
        out.push(SpecEnum { name, values });
    }
    out
}

/// The `enums:` section for `enums`.
pub fn section(enums: &[SpecEnum]) -> String {
    let mut s = String::from("\nenums:\n");
    for e in enums {
        s.push_str(&format!("  {}:\n    values:\n", e.name));
        for (n, v) in &e.values {
            s.push_str(&format!("      {n}: {{ value: 0x{v:x} }}\n"));
        }
    }
    s
}
