//! A field stays inside one big-endian dword, unless it is made of whole, aligned dwords (a
//! 64-bit address, a 128-bit GID read as words). This is the rule the kernel's accessors
//! enforce; a field that straddles two dwords at some other offset is a typo. Byte fields are
//! exempt: they are copied, not shifted. Nested structures and unions start on a dword.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{ArrayCount, Field, FieldType, Ir};

fn crosses(start: u64, width: u64) -> bool {
    let in_dword = start % 32;
    in_dword + width > 32 && !(in_dword == 0 && width % 32 == 0)
}

/// The first element of `f` (by index) that crosses a dword boundary, if any.
fn first_crossing(f: &Field) -> Option<u64> {
    let count = match f.count {
        None => 1,
        Some(ArrayCount::Fixed(n)) => n,
        Some(ArrayCount::Trailing) => u64::MAX,
    };
    // Element offsets repeat modulo 32 after at most 32 elements.
    (0..count.min(32)).find(|i| crosses(f.bit_offset + i * f.width, f.width))
}

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        for f in &s.fields {
            let path = format!("{}.fields.{}.at", super::struct_path(s), f.name);
            match &f.ty {
                FieldType::Bytes => {}
                FieldType::Struct(t) | FieldType::Union(t) => {
                    if f.bit_offset % 32 != 0 {
                        diags.push(
                            Diagnostic::error(
                                "dword-boundary",
                                f.spans.at,
                                format!("`{}` (a `{t}`) must start on a dword boundary, not at bit 0x{:x}", f.name, f.bit_offset),
                            )
                            .with_path(path),
                        );
                    }
                }
                _ => {
                    if let Some(i) = first_crossing(f) {
                        let start = f.bit_offset + i * f.width;
                        let what = if f.count.is_some() {
                            format!("element {i} of `{}`", f.name)
                        } else {
                            format!("`{}`", f.name)
                        };
                        diags.push(
                            Diagnostic::error(
                                "dword-boundary",
                                f.spans.at,
                                format!(
                                    "{what} crosses the dword boundary at byte 0x{:x}: {}",
                                    (start / 32 + 1) * 4,
                                    super::bits(start, start + f.width)
                                ),
                            )
                            .with_path(path)
                            .with_hint("split it into one field per dword (e.g. `_hi` / `_lo`), or align it to whole dwords"),
                        );
                    }
                }
            }
        }
    }
}
