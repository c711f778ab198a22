//! A field typed as a structure or union covers exactly that type's size.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{FieldType, Ir};

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        for f in &s.fields {
            let (kind, size, decl) = match &f.ty {
                FieldType::Struct(t) => match ir.find_struct(t) {
                    Some(n) => match n.size_span {
                        Some(span) => ("struct", n.size, span),
                        None => continue,
                    },
                    None => continue,
                },
                FieldType::Union(t) => match ir.find_union(t) {
                    Some(n) => ("union", n.size, n.size_span),
                    None => continue,
                },
                _ => continue,
            };
            if f.width != size * 8 {
                diags.push(
                    Diagnostic::error(
                        "nested-span",
                        f.spans.at,
                        format!(
                            "`{}` spans 0x{:x} bytes but {kind} `{}` is 0x{size:x} bytes",
                            f.name,
                            f.width / 8,
                            f.ty.name()
                        ),
                    )
                    .with_path(format!("{}.fields.{}.at", super::struct_path(s), f.name))
                    .with_note(decl, format!("`{}` has its size set here", f.ty.name()))
                    .with_hint(
                        "write just the start offset (e.g. `0x10`) and the type gives the span",
                    ),
                );
            }
        }
    }
}
