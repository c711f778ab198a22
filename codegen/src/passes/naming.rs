//! Names are snake_case, the way the PRM and the kernel header spell them; the generator
//! derives Rust names (CamelCase types, SCREAMING constants) from them.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use crate::source::Span;

/// True for `lower_case_with_digits`: a lowercase letter first, single underscores between
/// non-empty parts.
pub fn is_snake_case(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && !name.ends_with('_')
        && !name.contains("__")
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

/// A snake_case spelling of `name`, for the hint.
pub fn to_snake_case(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            out.push('_');
            prev_lower = false;
        }
    }
    let mut s: String = out
        .split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        s.insert_str(0, "n_");
    }
    s
}

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    let mut check = |kind: &str, name: &str, span: Span, path: String| {
        if !is_snake_case(name) {
            diags.push(
                Diagnostic::error(
                    "naming",
                    span,
                    format!("{kind} name `{name}` is not snake_case"),
                )
                .with_path(path)
                .with_hint(format!("write `{}`", to_snake_case(name))),
            );
        }
    };
    for s in &ir.structs {
        let path = super::struct_path(s);
        let kind = if s.register_block {
            "register block"
        } else {
            "struct"
        };
        check(kind, &s.name, s.span, path.clone());
        for f in &s.fields {
            check(
                "field",
                &f.name,
                f.spans.name,
                format!("{path}.fields.{}", f.name),
            );
        }
        for w in &s.words {
            check("word", &w.name, w.span, format!("{path}.words.{}", w.name));
        }
    }
    for u in &ir.unions {
        check("union", &u.name, u.span, format!("unions.{}", u.name));
        for m in &u.members {
            check(
                "union member",
                &m.name,
                m.span,
                format!("unions.{}.members.{}", u.name, m.name),
            );
        }
    }
    for e in &ir.enums {
        check("enum", &e.name, e.span, format!("enums.{}", e.name));
        for v in &e.values {
            check(
                "enum value",
                &v.name,
                v.span,
                format!("enums.{}.values.{}", e.name, v.name),
            );
        }
    }
    for c in &ir.commands {
        check("command", &c.name, c.span, format!("commands.{}", c.name));
        for m in &c.op_mods {
            check(
                "op_mod",
                &m.name,
                m.span,
                format!("commands.{}.op_mod.{}", c.name, m.name),
            );
        }
    }
    for r in &ir.access_registers {
        check(
            "access register",
            &r.name,
            r.span,
            format!("access_registers.{}", r.name),
        );
    }
    for c in &ir.constants {
        check("constant", &c.name, c.span, format!("constants.{}", c.name));
    }
    for m in &ir.state_machines {
        check(
            "state machine",
            &m.name,
            m.span,
            format!("state_machines.{}", m.name),
        );
        for t in &m.transitions {
            check(
                "transition",
                &t.name,
                t.span,
                format!("state_machines.{}.transitions.{}", m.name, t.name),
            );
        }
        for b in &m.optional_bits {
            check(
                "mask bit",
                &b.name,
                b.span,
                format!("state_machines.{}.optional_bits.{}", m.name, b.name),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case() {
        for ok in ["a", "log_max_qp", "reserved_at_1c0", "cqe64", "x2"] {
            assert!(is_snake_case(ok), "{ok}");
        }
        for bad in ["", "A", "logMaxQp", "_a", "a_", "a__b", "2a", "a-b"] {
            assert!(!is_snake_case(bad), "{bad}");
        }
        assert_eq!(to_snake_case("logMaxQP"), "log_max_qp");
        assert_eq!(to_snake_case("Byte-Count"), "byte_count");
        assert_eq!(to_snake_case("2x"), "n_2x");
    }
}
