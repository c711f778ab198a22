//! Enum values fit: in the enum's declared width, and in every field that uses the enum.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{FieldType, Ir};

fn fits(value: u64, width: u64) -> bool {
    width >= 64 || value >> width == 0
}

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for e in &ir.enums {
        let Some(width) = e.width else { continue };
        for v in e.values.iter().filter(|v| !fits(v.value, width)) {
            diags.push(
                Diagnostic::error(
                    "enum-fit",
                    v.value_span,
                    format!(
                        "`{}.{}` = 0x{:x} does not fit the enum's {width} bits",
                        e.name, v.name, v.value
                    ),
                )
                .with_path(format!("enums.{}.values.{}", e.name, v.name)),
            );
        }
    }
    for s in &ir.structs {
        for f in &s.fields {
            let FieldType::Enum(name) = &f.ty else {
                continue;
            };
            let Some(e) = ir.find_enum(name) else {
                continue;
            };
            let path = format!("{}.fields.{}", super::struct_path(s), f.name);
            if let (Some(w), Some(ws)) = (e.width, e.width_span) {
                if w != f.width {
                    diags.push(
                        Diagnostic::error(
                            "enum-fit",
                            f.spans.at,
                            format!(
                                "`{}` is {} bits wide but enum `{}` is declared {w} bits",
                                f.name, f.width, e.name
                            ),
                        )
                        .with_path(format!("{path}.at"))
                        .with_note(ws, "the enum's width is declared here"),
                    );
                    continue;
                }
            }
            for v in e.values.iter().filter(|v| !fits(v.value, f.width)) {
                diags.push(
                    Diagnostic::error(
                        "enum-fit",
                        f.spans.ty.unwrap_or(f.spans.at),
                        format!(
                            "`{}` is {} bits wide, too narrow for `{}.{}` = 0x{:x}",
                            f.name, f.width, e.name, v.name, v.value
                        ),
                    )
                    .with_path(format!("{path}.type"))
                    .with_note(v.value_span, "the value is defined here"),
                );
            }
        }
    }
}
