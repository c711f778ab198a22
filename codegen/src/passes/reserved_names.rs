//! `reserved_at_X` names say where the field is: X must be its real bit offset in hex. The
//! kernel header's names drift (a few dozen disagree with their true offsets); ours may not.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        for f in &s.fields {
            let Some(hex) = f.name.strip_prefix("reserved_at_") else {
                continue;
            };
            let named = u64::from_str_radix(hex, 16).ok();
            if named != Some(f.bit_offset) {
                let what = match named {
                    Some(n) => format!("says bit 0x{n:x}"),
                    None => format!("has `{hex}`, not a hex bit offset,"),
                };
                diags.push(
                    Diagnostic::error(
                        "reserved-name",
                        f.spans.name,
                        format!(
                            "`{}` {what} but the field starts at bit 0x{:x}",
                            f.name, f.bit_offset
                        ),
                    )
                    .with_path(format!("{}.fields.{}", super::struct_path(s), f.name))
                    .with_hint(format!(
                        "rename it `reserved_at_{:x}` (or drop it: gaps are reserved anyway)",
                        f.bit_offset
                    )),
                );
            }
        }
    }
}
