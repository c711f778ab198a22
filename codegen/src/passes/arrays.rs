//! Arrays: a fixed count is at least 1; a trailing array starts exactly where the fixed part
//! ends (the structure's size), and a structure has at most one.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{ArrayCount, Ir};

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        let mut trailing = None;
        for f in &s.fields {
            let path = format!("{}.fields.{}", super::struct_path(s), f.name);
            let count_span = f.spans.count.unwrap_or(f.spans.at);
            match f.count {
                Some(ArrayCount::Fixed(0)) => diags.push(
                    Diagnostic::error(
                        "array",
                        count_span,
                        format!("array `{}` has no elements", f.name),
                    )
                    .with_path(format!("{path}.count"))
                    .with_hint("use `count: trailing` for an array that follows the fixed part"),
                ),
                Some(ArrayCount::Trailing) => {
                    if s.size_span.is_some() && f.bit_offset != s.size * 8 {
                        diags.push(
                            Diagnostic::error(
                                "array",
                                f.spans.at,
                                format!(
                                    "trailing array `{}` starts at byte 0x{:x}, but the fixed part of `{}` ends at 0x{:x}",
                                    f.name,
                                    f.bit_offset / 8,
                                    s.name,
                                    s.size
                                ),
                            )
                            .with_path(format!("{path}.at"))
                            .with_hint(format!("place it at `0x{:x}`", s.size)),
                        );
                    }
                    if let Some(first) = trailing.replace(f.spans.name) {
                        diags.push(
                            Diagnostic::error(
                                "array",
                                f.spans.name,
                                format!("`{}` is a second trailing array in `{}`", f.name, s.name),
                            )
                            .with_path(path)
                            .with_note(first, "the first trailing array"),
                        );
                    }
                }
                _ => {}
            }
        }
    }
}
