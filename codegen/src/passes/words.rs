//! Words written as one store are well formed: a 64-bit pair starts on an 8-byte boundary,
//! every word lies inside its structure, words do not overlap, each holds at least one field,
//! and every field it touches lies wholly inside it and is a writable number, flag or enum
//! (what a word builder can compose).

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{Access, FieldType, Ir};

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        let owner = super::struct_path(s);
        for (i, w) in s.words.iter().enumerate() {
            let path = format!("{owner}.words.{}", w.name);
            let mut err = |span, msg: String, hint: Option<&str>| {
                let mut d = Diagnostic::error("word", span, msg).with_path(path.clone());
                if let Some(h) = hint {
                    d = d.with_hint(h);
                }
                diags.push(d);
            };
            if w.width == 64 && w.bit_offset % 64 != 0 {
                err(
                    w.at_span,
                    format!(
                        "64-bit word `{}` starts at byte 0x{:x}, not on an 8-byte boundary",
                        w.name,
                        w.bit_offset / 8
                    ),
                    Some("a 64-bit store needs an 8-byte aligned address"),
                );
            }
            if s.size_span.is_some() && w.end_bit() > s.size * 8 {
                err(
                    w.at_span,
                    format!(
                        "word `{}` ends at byte 0x{:x}, past the 0x{:x} bytes of `{}`",
                        w.name,
                        w.end_bit() / 8,
                        s.size,
                        s.name
                    ),
                    None,
                );
            }
            if let Some(other) = s.words[..i]
                .iter()
                .find(|o| o.bit_offset < w.end_bit() && w.bit_offset < o.end_bit())
            {
                err(
                    w.at_span,
                    format!("words `{}` and `{}` overlap", other.name, w.name),
                    Some("each store writes its own bytes: give every word its own dword(s)"),
                );
            }
            let mut touched = 0;
            for f in s.fields.iter().filter(|f| w.touches(f)) {
                touched += 1;
                let scalar = matches!(f.ty, FieldType::Uint | FieldType::Bool | FieldType::Enum(_));
                if !w.holds(f) || !scalar {
                    err(
                        f.spans.name,
                        format!(
                            "`{}` is in word `{}` but is not a number, flag or enum inside it",
                            f.name, w.name
                        ),
                        Some("a word is composed from the scalar fields that lie wholly inside it"),
                    );
                } else if f.access == Some(Access::Ro) {
                    err(
                        f.spans.name,
                        format!(
                            "`{}` is read-only but lies in word `{}`, which is written",
                            f.name, w.name
                        ),
                        None,
                    );
                }
            }
            if touched == 0 && !s.incomplete {
                err(w.at_span, format!("word `{}` holds no field", w.name), None);
            }
        }
    }
}
