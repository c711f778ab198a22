//! The enums of a header (`enum tag? { NAME = value, NAME, ... };`), read for the kernel-header
//! cross-check of the spec's enums. Values are evaluated like array sizes, against the
//! header's `#define`s and the enum constants before them; a constant without a value is one
//! more than the one before it. A constant whose value cannot be evaluated (a function-like
//! macro, say) is left out, and so are those that count on from it.

use super::expr::{self, Defines};
use super::Rule;
use pest::iterators::Pair;

/// One `enum { ... };` of a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderEnum {
    /// The tag, for `enum tag { ... };`.
    pub tag: Option<String>,
    /// Its constants with their values, in order.
    pub constants: Vec<(String, u64)>,
}

/// Reads an `enum_def` pair; its constants become names later expressions may use.
pub(super) fn read(pair: Pair<Rule>, defines: &mut Defines) -> HeaderEnum {
    let mut tag = None;
    let mut constants = Vec::new();
    let mut next: Option<u64> = Some(0);
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::ident => tag = Some(p.as_str().to_string()),
            Rule::enumerator => {
                let mut it = p.into_inner();
                let Some(name) = it.next().map(|n| n.as_str().to_string()) else {
                    continue;
                };
                let value = match it.next() {
                    Some(v) => expr::evaluate(super::runs_text(v).trim(), defines).ok(),
                    None => next,
                };
                next = value.and_then(|v| v.checked_add(1));
                if let Some(v) = value {
                    defines.insert(name.clone(), v.to_string());
                    constants.push((name, v));
                }
            }
            _ => {}
        }
    }
    HeaderEnum { tag, constants }
}

/// Every constant of `enums` whose name starts with `prefix`, by the rest of its name in lower
/// case (`MLX5_QPC_STATE_RST` with prefix `MLX5_QPC_STATE_` → `rst`).
pub fn with_prefix(enums: &[HeaderEnum], prefix: &str) -> Vec<(String, u64)> {
    enums
        .iter()
        .flat_map(|e| &e.constants)
        .filter_map(|(n, v)| {
            n.strip_prefix(prefix)
                .filter(|rest| !rest.is_empty())
                .map(|rest| (rest.to_ascii_lowercase(), *v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_of_a_header() {
        let imp = super::super::import_sources(vec![(
            "t.h".into(),
            "#define BASE 4\nenum { MLX5_X_A = 0x1, MLX5_X_B, MLX5_X_C = BASE << 1, MLX5_X_D = F(2), MLX5_X_E, };\n\
             enum mlx5_y { MLX5_Y_Z = MLX5_X_C + 1 };\nstruct mlx5_ifc_t_bits { u8 a[0x20]; };\n"
                .into(),
        )]);
        assert_eq!(imp.diagnostics.error_count(), 0);
        assert_eq!(imp.layouts, 1);
        assert_eq!(imp.enums.len(), 2);
        assert_eq!(
            with_prefix(&imp.enums, "MLX5_X_"),
            [("a".into(), 1), ("b".into(), 2), ("c".into(), 8)]
        );
        assert_eq!(imp.enums[1].tag.as_deref(), Some("mlx5_y"));
        assert_eq!(with_prefix(&imp.enums, "MLX5_Y_"), [("z".into(), 9)]);
    }
}
