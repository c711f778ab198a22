//! A field's width must suit its type: one bit for `bool`, whole bytes for `bytes`, at most 64
//! bits for numbers and enums, exactly N bits for `uN`.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{FieldType, Ir};

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        for f in &s.fields {
            let span = f.spans.ty.unwrap_or(f.spans.at);
            let problem = match &f.ty {
                FieldType::Bool if f.width != 1 => Some((
                    format!("`{}` is a bool but spans {} bits", f.name, f.width),
                    "a bool is one bit, e.g. `0x00[31]`; use uint for wider flags".to_string(),
                )),
                FieldType::Bytes if f.bit_offset % 8 != 0 || f.width % 8 != 0 => Some((
                    format!(
                        "`{}` holds bytes but is not made of whole bytes (bit 0x{:x}, {} bits)",
                        f.name, f.bit_offset, f.width
                    ),
                    "byte fields start and end on byte boundaries; use uint for bit fields"
                        .to_string(),
                )),
                FieldType::Uint | FieldType::Enum(_) if f.width > 64 => Some((
                    format!(
                        "`{}` is {} bits wide, too wide for a number",
                        f.name, f.width
                    ),
                    "use `type: bytes` for opaque data, or an array (`count:`) of smaller elements"
                        .to_string(),
                )),
                FieldType::Uint => match f.type_name.as_deref() {
                    Some(t @ ("u8" | "u16" | "u32" | "u64")) => {
                        let want: u64 = t[1..].parse().unwrap_or(0);
                        (want != f.width).then(|| {
                            (
                                format!("`{}` is declared {t} but its position spans {} bits", f.name, f.width),
                                format!("make the position {want} bits wide, or write `uint` to take the width from the position"),
                            )
                        })
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some((message, hint)) = problem {
                diags.push(
                    Diagnostic::error("field-type", span, message)
                        .with_path(format!("{}.fields.{}", super::struct_path(s), f.name))
                        .with_hint(hint),
                );
            }
        }
    }
}
