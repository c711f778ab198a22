//! Unions: every member fits the union's size; with a selector, every member has a distinct
//! `when` value that fits the selector field; without one, no member has `when`.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use std::collections::HashMap;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for u in &ir.unions {
        let path = format!("unions.{}", u.name);
        let mut seen: HashMap<u64, &str> = HashMap::new();
        for m in &u.members {
            let mpath = format!("{path}.members.{}", m.name);
            if let Some(s) = ir.find_struct(&m.ty) {
                if s.size > u.size {
                    diags.push(
                        Diagnostic::error(
                            "union",
                            m.ty_span,
                            format!("member `{}` (`{}`, 0x{:x} bytes) is larger than union `{}` (0x{:x} bytes)", m.name, m.ty, s.size, u.name, u.size),
                        )
                        .with_path(format!("{mpath}.type"))
                        .with_note(u.size_span, "the union's size is set here"),
                    );
                }
            }
            match (&u.selector, m.when, m.when_span) {
                (Some(sel), Some(when), Some(ws)) => {
                    let field_bits = sel.width.saturating_sub(sel.shift);
                    if field_bits < 64 && when >> field_bits != 0 {
                        diags.push(
                            Diagnostic::error(
                                "union",
                                ws,
                                format!(
                                    "`when: 0x{when:x}` cannot be selected: `{}.{}` >> {} has only {field_bits} bits",
                                    sel.structure, sel.field, sel.shift
                                ),
                            )
                            .with_path(format!("{mpath}.when")),
                        );
                    }
                    if let Some(other) = seen.insert(when, &m.name) {
                        diags.push(
                            Diagnostic::error(
                                "union",
                                ws,
                                format!(
                                    "members `{other}` and `{}` are both selected by 0x{when:x}",
                                    m.name
                                ),
                            )
                            .with_path(format!("{mpath}.when")),
                        );
                    }
                }
                (Some(_), None, None) => diags.push(
                    Diagnostic::error(
                        "union",
                        m.span,
                        format!(
                            "member `{}` has no `when`, but union `{}` has a selector",
                            m.name, u.name
                        ),
                    )
                    .with_path(mpath)
                    .with_hint("give the selector value that picks this member"),
                ),
                (None, Some(_), Some(ws)) if !u.selector_declared => diags.push(
                    Diagnostic::error(
                        "union",
                        ws,
                        format!(
                            "member `{}` has `when`, but union `{}` has no selector",
                            m.name, u.name
                        ),
                    )
                    .with_path(format!("{mpath}.when"))
                    .with_hint("add `selector: { field: struct.field }` to the union"),
                ),
                _ => {}
            }
        }
    }
}
