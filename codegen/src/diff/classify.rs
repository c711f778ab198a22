//! The rules that turn a field-level difference into wire and Rust impacts.
//!
//! The Rust side follows what [`crate::gen`] emits rather than re-deriving it: numbers and
//! enums' raw accessors use [`crate::gen::names::uint_type`] of the width, flags are `bool`,
//! bytes are `[u8; N]`, nested layouts are views named after their type (the CamelCase of
//! [`crate::gen::names::camel`], computed here without building an identifier), and arrays wrap their
//! element's type. Two fields whose [`rust_type`]s differ cannot be used by the same code.

use super::{Rust, Wire};
use crate::gen::names::uint_type;
use crate::ir::{ArrayCount, Field, FieldType};
use crate::position::prm_notation;
use heck::ToUpperCamelCase;

/// The Rust type a generated accessor uses for `f` (its getter's return type, for enums the
/// enum and its raw number's type).
pub fn rust_type(f: &Field) -> String {
    let elem = match &f.ty {
        FieldType::Bool => "bool".to_string(),
        FieldType::Uint => uint_type(f.width).to_string(),
        FieldType::Enum(e) => format!("{} (raw {})", e.to_upper_camel_case(), uint_type(f.width)),
        FieldType::Bytes => format!("[u8; {}]", f.width / 8),
        FieldType::Struct(t) | FieldType::Union(t) => t.to_upper_camel_case(),
    };
    match f.count {
        None => elem,
        Some(ArrayCount::Fixed(n)) => format!("[{elem}; {n}]"),
        Some(ArrayCount::Trailing) => format!("[{elem}]"),
    }
}

/// A field's place and type in words: `0x00[31:16] (bit 0x0, 16 bits) u16`.
pub fn describe(f: &Field) -> String {
    format!("{} {}", place(f.bit_offset, f.span_bits()), rust_type(f))
}

/// A span in the PRM notation and the kernel's bit numbering.
pub fn place(bit_offset: u64, width: u64) -> String {
    let bits = if width == 1 { "bit" } else { "bits" };
    match prm_notation(bit_offset, width) {
        Some(n) => format!("{n} (bit 0x{bit_offset:x}, {width} {bits})"),
        None => format!("bit 0x{bit_offset:x}, {width} {bits}"),
    }
}

/// The impacts of a field whose width changed (same name, same type kind).
///
/// On the wire every resize breaks: the device reads other bits. In Rust, a width that maps
/// to another integer type breaks compilation; a narrowing within the same type compiles and
/// silently truncates (values that fit before now overflow), so it is flagged as silent; a
/// widening within the same type only accepts more values.
pub fn resize(old: &Field, new: &Field) -> (Wire, Rust, Option<String>) {
    let (ot, nt) = (rust_type(old), rust_type(new));
    if ot != nt {
        return (
            Wire::Breaking,
            Rust::Breaking,
            Some(format!("the accessor's type changes from {ot} to {nt}")),
        );
    }
    if new.width < old.width {
        return (
            Wire::Breaking,
            Rust::Silent,
            Some(format!(
                "narrowed from {} to {} bits within {nt}: code compiles, larger values no longer fit",
                old.width, new.width
            )),
        );
    }
    (Wire::Breaking, Rust::None, None)
}

/// The impacts of a field whose type changed (same name).
///
/// The bits may stay where they were (an enum given to a plain number), so the wire is
/// untouched when offset and width are; Rust breaks whenever the accessor's type changes.
pub fn retype(old: &Field, new: &Field) -> (Wire, Rust) {
    let same_bits = old.bit_offset == new.bit_offset && old.span_bits() == new.span_bits();
    let wire = if same_bits {
        Wire::None
    } else {
        Wire::Breaking
    };
    let rust = if rust_type(old) == rust_type(new) {
        Rust::None
    } else {
        Rust::Breaking
    };
    (wire, rust)
}

/// True when the bits `[start, end)` overlap no field of `fields` (so a new field there was
/// reserved space before).
pub fn in_reserved_space(fields: &[Field], start: u64, end: u64) -> bool {
    fields
        .iter()
        .all(|f| f.span_bits() == 0 || f.end_bit() <= start || f.bit_offset >= end)
}
