//! Sizes are whole dwords: the PRM lays everything out in big-endian dwords, and a size that
//! is not a multiple of 4 bytes is almost always a typo in the spec.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use crate::source::Span;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    let items = ir
        .structs
        .iter()
        .filter_map(|s| {
            let kind = if s.register_block {
                "register block"
            } else {
                "struct"
            };
            Some((kind, &s.name, s.size, s.size_span?, super::struct_path(s)))
        })
        .chain(ir.unions.iter().map(|u| {
            (
                "union",
                &u.name,
                u.size,
                u.size_span,
                format!("unions.{}", u.name),
            )
        }));
    for (kind, name, size, span, path) in items {
        check(kind, name, size, span, &format!("{path}.size"), diags);
    }
}

fn check(kind: &str, name: &str, size: u64, span: Span, path: &str, diags: &mut Diagnostics) {
    if size == 0 {
        diags.push(
            Diagnostic::error(
                "size-alignment",
                span,
                format!("{kind} `{name}` has size 0"),
            )
            .with_path(path),
        );
    } else if size % 4 != 0 {
        diags.push(
            Diagnostic::error(
                "size-alignment",
                span,
                format!("{kind} `{name}` is 0x{size:x} bytes, not a whole number of dwords"),
            )
            .with_path(path)
            .with_hint(format!(
                "sizes are in bytes and must be multiples of 4: 0x{:x} or 0x{:x}?",
                size & !3,
                (size + 3) & !3
            )),
        );
    }
}
