//! Arrays: a fixed count is at least 1; a trailing array starts exactly where the fixed part
//! ends (the structure's size), and a structure has at most one, counting one that a nested
//! structure at its end brings along (whose storage then runs on past the fixed part).

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{ArrayCount, FieldType, Ir};

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
        // A nested structure at the end whose storage runs on would share the tail with the
        // structure's own trailing array.
        if let Some(own) = trailing {
            let nested = s.fields.iter().find(|f| {
                f.count.is_none()
                    && f.end_bit() == s.size * 8
                    && matches!(&f.ty, FieldType::Struct(t)
                        if ir.find_struct(t).is_some_and(|inner| ir.tail_field(inner).is_some()))
            });
            if let Some(f) = nested {
                let tail = match &f.ty {
                    FieldType::Struct(t) => ir.find_struct(t).and_then(|i| ir.tail_field(i)),
                    _ => None,
                };
                let mut d = Diagnostic::error(
                    "array",
                    f.spans.name,
                    format!(
                        "`{}` ends `{}` and runs on past it (through `{}`), but `{}` has a trailing array of its own",
                        f.name,
                        s.name,
                        tail.map_or("?", |t| t.name.as_str()),
                        s.name
                    ),
                )
                .with_path(format!("{}.fields.{}", super::struct_path(s), f.name))
                .with_note(own, "the trailing array");
                d = d.with_hint("both would claim the bytes past the fixed part: keep one of them");
                diags.push(d);
            }
        }
    }
}
