//! Lowering one field: its type resolved by name, its position made absolute bits; and a
//! structure's whole-word declarations.

use super::{unknown, Declared};
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::position::Position;
use crate::syntax;
use std::collections::HashMap;

pub(super) fn lower_field(
    fd: &syntax::FieldDecl,
    declared: &HashMap<&str, Declared>,
    type_names: &[&str],
    path: &str,
    diags: &mut Diagnostics,
) -> Option<Field> {
    let (ty, implied_width) = match &fd.ty {
        None if fd.at.value.is_byte_range() => (FieldType::Bytes, None),
        None => (FieldType::Uint, None),
        Some(t) => match t.value.as_str() {
            "uint" => (FieldType::Uint, None),
            "u8" => (FieldType::Uint, Some(8)),
            "u16" => (FieldType::Uint, Some(16)),
            "u32" => (FieldType::Uint, Some(32)),
            "u64" => (FieldType::Uint, Some(64)),
            "bool" => (FieldType::Bool, None),
            "bytes" => (FieldType::Bytes, None),
            name => match declared.get(name) {
                Some(Declared::Struct(Some(size))) => {
                    (FieldType::Struct(name.into()), Some(size * 8))
                }
                // The struct's missing size is reported there; a bare offset cannot be sized.
                Some(Declared::Struct(None)) if fd.at.value.bit_span().is_none() => return None,
                Some(Declared::Struct(None)) => (FieldType::Struct(name.into()), None),
                Some(Declared::Union(size)) => (FieldType::Union(name.into()), Some(size * 8)),
                Some(Declared::Enum(w)) => (FieldType::Enum(name.into()), *w),
                None => {
                    diags.push(unknown("type", t, type_names, &format!("{path}.type")));
                    return None;
                }
            },
        },
    };
    let (bit_offset, width) = match fd.at.value.bit_span() {
        Some(span) => span,
        None => {
            let Position::Offset { byte } = fd.at.value else {
                return None;
            };
            let Some(w) = implied_width else {
                let ty_name = fd.ty.as_ref().map_or("uint", |t| t.value.as_str());
                let example = if byte % 4 == 0 {
                    format!("0x{byte:02x}[31:0]")
                } else {
                    format!("0x{byte:02x}..0x{:02x}", byte + 4)
                };
                let (message, hint) = if ty_name == "bool" {
                    (
                        format!(
                            "`{}` gives only a byte offset; a bool needs the bit it lives in",
                            fd.name.value
                        ),
                        format!("write the bit, e.g. `0x{:02x}[31]`", byte & !3),
                    )
                } else {
                    (
                        format!("`{}` gives only a byte offset, and type `{ty_name}` does not fix a width", fd.name.value),
                        format!("write the bits, e.g. `{example}`, or a sized type such as u32"),
                    )
                };
                diags.push(
                    Diagnostic::error("position-width", fd.at.span, message)
                        .with_path(format!("{path}.at"))
                        .with_hint(hint),
                );
                return None;
            };
            (byte * 8, w)
        }
    };
    Some(Field {
        name: fd.name.value.clone(),
        bit_offset,
        width,
        ty,
        type_name: fd.ty.as_ref().map(|t| t.value.clone()),
        count: fd.count.as_ref().map(|c| match c.value {
            syntax::Count::Fixed(n) => ArrayCount::Fixed(n),
            syntax::Count::Trailing => ArrayCount::Trailing,
        }),
        doc: fd.doc.clone(),
        access: fd.access.as_ref().map(|a| a.value),
        position: position_text(&fd.at.value),
        spans: FieldSpans {
            name: fd.name.span,
            at: fd.at.span,
            ty: fd.ty.as_ref().map(|t| t.span),
            count: fd.count.as_ref().map(|c| c.span),
        },
    })
}

/// The position written back canonically (spacing normalised, numbers in hex).
pub(super) fn position_text(p: &Position) -> String {
    match *p {
        Position::Bits { byte, hi, lo } if hi == lo => format!("0x{byte:02x}[{hi}]"),
        Position::Bits { byte, hi, lo } => format!("0x{byte:02x}[{hi}:{lo}]"),
        Position::Bytes { start, end } => format!("0x{start:02x}..0x{end:02x}"),
        Position::Offset { byte } => format!("0x{byte:02x}"),
    }
}

/// A word's position: a whole dword `B[31:0]` or a 64-bit pair `B[63:0]`.
pub(super) fn lower_word(
    w: &syntax::WordDecl,
    owner: &str,
    diags: &mut Diagnostics,
) -> Option<Word> {
    match w.at.value {
        Position::Bits { byte, hi, lo: 0 } if hi == 31 || hi == 63 => Some(Word {
            name: w.name.value.clone(),
            doc: w.doc.clone(),
            bit_offset: byte * 8,
            width: u64::from(hi) + 1,
            span: w.name.span,
            at_span: w.at.span,
        }),
        _ => {
            diags.push(
                Diagnostic::error(
                    "word",
                    w.at.span,
                    format!(
                        "word `{}` is not a whole dword or 64-bit pair",
                        w.name.value
                    ),
                )
                .with_path(format!("{owner}.words.{}.at", w.name.value))
                .with_hint(
                    "a word is written as one store: `B[31:0]` (32 bits) or `B[63:0]` (64 bits)",
                ),
            );
            None
        }
    }
}
