//! `prmc layout --json`: every structure's resolved layout as JSON.
//!
//! This document is a stable contract for tools (see `docs/spec-format.md`, "Layout JSON"):
//! keys documented there are never renamed or removed within a `format_version`; new keys may
//! be added. Nested structures and unions appear both as one entry and expanded into dotted
//! paths with absolute offsets, so a consumer can look up `qpc.primary_address_path.pkey_index`
//! directly, as the kernel's `MLX5_GET` does.

use crate::ir::{ArrayCount, Field, FieldType, Ir, Struct};
use serde::Serialize;

/// Version of the JSON layout contract.
pub const FORMAT_VERSION: u32 = 1;

/// Nesting depth beyond which expansion stops (real PRM nesting is under 6 levels).
const MAX_DEPTH: usize = 16;

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Layout {
    /// Contract version.
    pub format_version: u32,
    /// Structures and register blocks, in spec order.
    pub structs: Vec<StructLayout>,
    /// Unions.
    pub unions: Vec<UnionLayout>,
}

/// One structure.
#[derive(Debug, Serialize)]
pub struct StructLayout {
    /// Name.
    pub name: String,
    /// Size in bits.
    pub size_bits: u64,
    /// True for an MMIO register block.
    pub register_block: bool,
    /// Fields and expanded nested fields, by offset.
    pub fields: Vec<FieldLayout>,
}

/// One field entry.
#[derive(Debug, Serialize)]
pub struct FieldLayout {
    /// Name; nested entries use dotted paths.
    pub name: String,
    /// Absolute MSB-first bit offset from the start of the top structure.
    pub bit_offset: u64,
    /// Bits occupied in the fixed part (for arrays, all elements; for trailing arrays, 0).
    pub width: u64,
    /// `uint`, `bool`, `enum`, `bytes`, `struct`, `union` or `array`.
    pub kind: &'static str,
    /// Type name: `uint`, `bool`, `bytes`, or the enum/struct/union name (for arrays, the
    /// element's type).
    #[serde(rename = "type")]
    pub ty: String,
    /// Arrays: number of elements (`null` for a trailing array).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<Option<u64>>,
    /// Arrays: bits per element.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub element_width: Option<u64>,
    /// Arrays: the element's kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub element_kind: Option<&'static str>,
}

/// One union.
#[derive(Debug, Serialize)]
pub struct UnionLayout {
    /// Name.
    pub name: String,
    /// Size in bits.
    pub size_bits: u64,
    /// Members.
    pub members: Vec<MemberLayout>,
}

/// One union member.
#[derive(Debug, Serialize)]
pub struct MemberLayout {
    /// Name.
    pub name: String,
    /// Struct type.
    #[serde(rename = "type")]
    pub ty: String,
    /// Selector value.
    pub when: Option<u64>,
}

/// Builds the layout document.
pub fn layout(ir: &Ir) -> Layout {
    Layout {
        format_version: FORMAT_VERSION,
        structs: ir.structs.iter().map(|s| struct_layout(ir, s)).collect(),
        unions: ir
            .unions
            .iter()
            .map(|u| UnionLayout {
                name: u.name.clone(),
                size_bits: u.size * 8,
                members: u
                    .members
                    .iter()
                    .map(|m| MemberLayout {
                        name: m.name.clone(),
                        ty: m.ty.clone(),
                        when: m.when,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// One structure's layout with nested entries expanded.
pub fn struct_layout(ir: &Ir, s: &Struct) -> StructLayout {
    let mut fields = Vec::new();
    expand(ir, s, "", 0, 0, &mut fields);
    StructLayout {
        name: s.name.clone(),
        size_bits: s.size * 8,
        register_block: s.register_block,
        fields,
    }
}

fn entry(f: &Field, name: String, base: u64) -> FieldLayout {
    let (kind, count, element_width, element_kind) = match f.count {
        None => (f.ty.kind(), None, None, None),
        Some(ArrayCount::Fixed(n)) => ("array", Some(Some(n)), Some(f.width), Some(f.ty.kind())),
        Some(ArrayCount::Trailing) => ("array", Some(None), Some(f.width), Some(f.ty.kind())),
    };
    FieldLayout {
        name,
        bit_offset: base + f.bit_offset,
        width: f.span_bits(),
        kind,
        ty: f.ty.name().to_string(),
        count,
        element_width,
        element_kind,
    }
}

fn expand(ir: &Ir, s: &Struct, prefix: &str, base: u64, depth: usize, out: &mut Vec<FieldLayout>) {
    for f in &s.fields {
        let name = format!("{prefix}{}", f.name);
        out.push(entry(f, name.clone(), base));
        if f.count.is_some() || depth >= MAX_DEPTH {
            continue;
        }
        let at = base + f.bit_offset;
        match &f.ty {
            FieldType::Struct(t) => {
                if let Some(inner) = ir.find_struct(t) {
                    expand(ir, inner, &format!("{name}."), at, depth + 1, out);
                }
            }
            FieldType::Union(t) => {
                let Some(u) = ir.find_union(t) else { continue };
                for m in &u.members {
                    let Some(inner) = ir.find_struct(&m.ty) else {
                        continue;
                    };
                    let mname = format!("{name}.{}", m.name);
                    out.push(FieldLayout {
                        name: mname.clone(),
                        bit_offset: at,
                        width: inner.size * 8,
                        kind: "struct",
                        ty: inner.name.clone(),
                        count: None,
                        element_width: None,
                        element_kind: None,
                    });
                    expand(ir, inner, &format!("{mname}."), at, depth + 1, out);
                }
            }
            _ => {}
        }
    }
}

/// The document as pretty-printed JSON.
pub fn to_json(ir: &Ir) -> String {
    serde_json::to_string_pretty(&layout(ir)).expect("layout serializes") + "\n"
}
