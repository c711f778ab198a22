//! Access registers: each register id belongs to one register and fits the 16-bit
//! `register_id`; the image has a fixed size (ACCESS_REGISTER carries exactly the layout);
//! each index field is one number (a key a caller sets), not a structure or an array.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{AccessRegister, FieldType, Ir};
use crate::lower::find_field_path;
use std::collections::HashMap;

const CODE: &str = "access-register";

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    let mut seen: HashMap<u64, &AccessRegister> = HashMap::new();
    for r in &ir.access_registers {
        let path = format!("access_registers.{}", r.name);
        if r.id > 0xffff {
            diags.push(
                Diagnostic::error(
                    CODE,
                    r.id_span,
                    format!(
                        "register id 0x{:x} of `{}` does not fit the 16-bit register_id",
                        r.id, r.name
                    ),
                )
                .with_path(format!("{path}.id")),
            );
        }
        match seen.get(&r.id) {
            Some(first) => diags.push(
                Diagnostic::error(
                    CODE,
                    r.id_span,
                    format!(
                        "register id 0x{:x} of `{}` is already used by `{}`",
                        r.id, r.name, first.name
                    ),
                )
                .with_path(format!("{path}.id"))
                .with_note(first.id_span, format!("`{}` uses it here", first.name)),
            ),
            None => {
                seen.insert(r.id, r);
            }
        }
        let Some(layout) = ir.find_struct(&r.layout) else {
            continue;
        };
        if let Some(f) = layout
            .fields
            .iter()
            .find(|f| matches!(f.count, Some(crate::ir::ArrayCount::Trailing)))
        {
            diags.push(
                Diagnostic::error(
                    CODE,
                    r.layout_span,
                    format!(
                        "the image of `{}` must have a fixed size, but `{}` ends in the trailing array `{}`",
                        r.name, layout.name, f.name
                    ),
                )
                .with_path(format!("{path}.layout"))
                .with_hint("give the array a fixed `count`"),
            );
        }
        for (name, &span) in r.index.iter().zip(&r.index_spans) {
            let Some((_, f)) = find_field_path(ir, layout, name) else {
                continue;
            };
            let scalar = f.count.is_none()
                && !matches!(
                    f.ty,
                    FieldType::Struct(_) | FieldType::Union(_) | FieldType::Bytes
                );
            if !scalar {
                diags.push(
                    Diagnostic::error(
                        CODE,
                        span,
                        format!(
                            "index field `{name}` of `{}` is not a single number (it is {})",
                            r.name,
                            if f.count.is_some() {
                                "an array".to_string()
                            } else {
                                format!("a `{}`", f.ty.name())
                            }
                        ),
                    )
                    .with_path(format!("{path}.index"))
                    .with_hint(
                        "index fields select an instance: name numeric, bool or enum fields",
                    ),
                );
            }
        }
    }
}
