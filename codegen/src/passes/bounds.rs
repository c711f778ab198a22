//! Every field lies inside its structure.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{ArrayCount, Ir};

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in ir.structs.iter() {
        // Without a declared size (reported by the loader) there is nothing to exceed.
        let Some(size_span) = s.size_span else {
            continue;
        };
        let size_bits = s.size.saturating_mul(8);
        for f in &s.fields {
            // A trailing array starts at the end of the fixed part; `array` checks where.
            if f.count == Some(ArrayCount::Trailing) {
                continue;
            }
            if f.end_bit() > size_bits {
                diags.push(
                    Diagnostic::error(
                        "out-of-bounds",
                        f.spans.at,
                        format!(
                            "`{}` ends at byte 0x{:x}, past the end of `{}` (0x{:x} bytes)",
                            f.name,
                            f.end_bit().div_ceil(8),
                            s.name,
                            s.size
                        ),
                    )
                    .with_path(format!("{}.fields.{}.at", super::struct_path(s), f.name))
                    .with_note(size_span, "the size is set here")
                    .with_hint("check the byte offset, or grow the structure's size"),
                );
            }
        }
    }
}
