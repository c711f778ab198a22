//! Fields of one structure do not share bits. (Union members share by design; they live in
//! `unions:` and are not fields.)

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{ArrayCount, Field, Ir};

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        // Fields are sorted by offset: sweep, remembering the field that reaches furthest.
        let mut furthest: Option<&Field> = None;
        for f in s
            .fields
            .iter()
            .filter(|f| f.count != Some(ArrayCount::Trailing))
        {
            if let Some(prev) = furthest {
                if f.bit_offset < prev.end_bit() && f.span_bits() > 0 {
                    let end = f.end_bit().min(prev.end_bit());
                    diags.push(
                        Diagnostic::error(
                            "overlap",
                            f.spans.at,
                            format!(
                                "`{}` overlaps `{}` at {}",
                                f.name,
                                prev.name,
                                super::bits(f.bit_offset, end)
                            ),
                        )
                        .with_path(format!("{}.fields.{}.at", super::struct_path(s), f.name))
                        .with_note(prev.spans.at, format!("`{}` is placed here", prev.name))
                        .with_hint("fields may not share bits; alternative layouts of one span belong in a union"),
                    );
                }
            }
            if furthest.is_none_or(|p| f.end_bit() > p.end_bit()) {
                furthest = Some(f);
            }
        }
    }
}
