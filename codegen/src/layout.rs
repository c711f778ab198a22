//! `prmc layout --json`: every structure's resolved layout as JSON.
//!
//! This document is a stable contract for tools (see `docs/spec-format.md`, "Layout JSON"):
//! keys documented there are never renamed or removed within a `format_version`; new keys may
//! be added. Nested structures and unions appear both as one entry and expanded into dotted
//! paths with absolute offsets, so a consumer can look up `qpc.primary_address_path.pkey_index`
//! directly, as the kernel's `MLX5_GET` does.

use crate::ir::{Access, ArrayCount, Field, FieldType, Ir, Struct, Union, Word};
use serde::Serialize;

/// Version of the JSON layout contract.
pub const FORMAT_VERSION: u32 = 2;

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
    /// Enumerations.
    pub enums: Vec<EnumLayout>,
    /// Commands.
    pub commands: Vec<CommandLayout>,
    /// Access registers.
    pub access_registers: Vec<AccessRegisterLayout>,
    /// Named constants.
    pub constants: Vec<NamedValue>,
    /// State machines.
    pub state_machines: Vec<StateMachineLayout>,
}

/// One access register.
#[derive(Debug, Serialize)]
pub struct AccessRegisterLayout {
    /// Name.
    pub name: String,
    /// Register id.
    pub id: u64,
    /// The structure of its image.
    pub layout: String,
    /// `read`, `write` or `read_write`.
    pub access: crate::ir::RegAccess,
    /// The fields that select one instance.
    pub index: Vec<String>,
}

/// One state machine.
#[derive(Debug, Serialize)]
pub struct StateMachineLayout {
    /// Name.
    pub name: String,
    /// The enum of its states.
    pub states: String,
    /// The input field holding the optional-parameter mask.
    pub mask_field: Option<String>,
    /// The input field naming the object a transition moves (`qpn`).
    pub object_field: Option<String>,
    /// Where the device reports the state: a structure and a field in it (`null` without).
    pub state_field: Option<StateFieldLayout>,
    /// Transitions.
    pub transitions: Vec<TransitionLayout>,
}

/// Where a state machine's current state is read.
#[derive(Debug, Serialize)]
pub struct StateFieldLayout {
    /// The structure holding the state (`qpc`).
    pub structure: String,
    /// Dotted path inside it, with offset and width from its start.
    #[serde(flatten)]
    pub field: PathLayout,
}

/// One transition.
#[derive(Debug, Serialize)]
pub struct TransitionLayout {
    /// Name.
    pub name: String,
    /// Source states; empty means any.
    pub from: Vec<String>,
    /// Target state.
    pub to: String,
    /// The command.
    pub command: String,
    /// Required input fields.
    pub requires: Vec<PathLayout>,
    /// Optional input fields with their mask bits.
    pub optional: Vec<PathLayout>,
}

/// An input field of a transition.
#[derive(Debug, Serialize)]
pub struct PathLayout {
    /// Dotted path in the command's input.
    pub path: String,
    /// Absolute bit offset in the input.
    pub bit_offset: u64,
    /// Width in bits.
    pub width: u64,
    /// Optional fields: the mask bit's name and value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask: Option<NamedValue>,
}

/// A name and a number (enumerators, op_mod values, constants).
#[derive(Debug, Serialize)]
pub struct NamedValue {
    /// Name.
    pub name: String,
    /// Value.
    pub value: u64,
}

/// One enumeration.
#[derive(Debug, Serialize)]
pub struct EnumLayout {
    /// Name.
    pub name: String,
    /// Declared width in bits, if any.
    pub width: Option<u64>,
    /// Enumerators in spec order.
    pub values: Vec<NamedValue>,
}

/// One command.
#[derive(Debug, Serialize)]
pub struct CommandLayout {
    /// Name.
    pub name: String,
    /// Opcode.
    pub opcode: u64,
    /// Input layout (a structure name).
    #[serde(rename = "in")]
    pub input: String,
    /// Output layout (a structure name).
    #[serde(rename = "out")]
    pub output: String,
    /// Named op_mod values.
    pub op_mod: Vec<NamedValue>,
}

/// The field that selects a union's member.
#[derive(Debug, Serialize)]
pub struct SelectorLayout {
    /// Structure holding the field.
    pub structure: String,
    /// Dotted path of the field in that structure.
    pub field: String,
    /// Right shift applied before comparing with `when`.
    pub shift: u64,
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
    /// Fields by offset; each nested structure's or union's expansion follows its entry.
    pub fields: Vec<FieldLayout>,
    /// Words written as one store (doorbells), in spec order.
    pub words: Vec<WordLayout>,
}

/// A word written whole: a dword or an aligned 64-bit pair.
#[derive(Debug, Serialize)]
pub struct WordLayout {
    /// Name.
    pub name: String,
    /// MSB-first bit offset of the word's first bit.
    pub bit_offset: u64,
    /// 32 or 64.
    pub width: u64,
    /// The structure's fields that lie inside the word, by offset.
    pub fields: Vec<String>,
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
    /// Register blocks: `ro`, `rw` or `wo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
    /// Where the field is in the top structure, in the PRM's notation (`0x54[15:0]`,
    /// `0x18..0x100` for what spans dwords; `null` for a trailing array).
    pub position: Option<String>,
    /// The spec's documentation of the field (`null` without one).
    pub doc: Option<String>,
    /// Where the field is defined: the spec file relative to the spec directory, and the line
    /// (`qp.yaml:225`).
    pub source: String,
}

/// One union.
#[derive(Debug, Serialize)]
pub struct UnionLayout {
    /// Name.
    pub name: String,
    /// Size in bits.
    pub size_bits: u64,
    /// The field that picks the member, if the spec names one.
    pub selector: Option<SelectorLayout>,
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
        unions: ir.unions.iter().map(union_layout).collect(),
        enums: ir
            .enums
            .iter()
            .map(|e| EnumLayout {
                name: e.name.clone(),
                width: e.width,
                values: e.values.iter().map(|v| named(&v.name, v.value)).collect(),
            })
            .collect(),
        commands: ir
            .commands
            .iter()
            .map(|c| CommandLayout {
                name: c.name.clone(),
                opcode: c.opcode,
                input: c.input.clone(),
                output: c.output.clone(),
                op_mod: c.op_mods.iter().map(|m| named(&m.name, m.value)).collect(),
            })
            .collect(),
        access_registers: ir
            .access_registers
            .iter()
            .map(|r| AccessRegisterLayout {
                name: r.name.clone(),
                id: r.id,
                layout: r.layout.clone(),
                access: r.access,
                index: r.index.clone(),
            })
            .collect(),
        constants: ir
            .constants
            .iter()
            .map(|c| named(&c.name, c.value))
            .collect(),
        state_machines: ir
            .state_machines
            .iter()
            .map(|m| StateMachineLayout {
                name: m.name.clone(),
                states: m.states.clone(),
                mask_field: m.mask_field.clone(),
                object_field: m.object_field.clone(),
                state_field: m.state_field.as_ref().map(|(s, r)| StateFieldLayout {
                    structure: s.clone(),
                    field: path_layout(r, None),
                }),
                transitions: m
                    .transitions
                    .iter()
                    .map(|t| TransitionLayout {
                        name: t.name.clone(),
                        from: t.from.clone(),
                        to: t.to.clone(),
                        command: t.command.clone(),
                        requires: t.requires.iter().map(|r| path_layout(r, None)).collect(),
                        optional: t
                            .optional
                            .iter()
                            .map(|(r, b)| path_layout(r, Some(named(&b.name, b.value))))
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn path_layout(r: &crate::ir::FieldRef, mask: Option<NamedValue>) -> PathLayout {
    PathLayout {
        path: r.path.clone(),
        bit_offset: r.bit_offset,
        width: r.width,
        mask,
    }
}

/// The document restricted to one structure or union, `None` when there is no such item.
pub fn layout_of(ir: &Ir, name: &str) -> Option<Layout> {
    let structs: Vec<_> = ir
        .find_struct(name)
        .map(|s| struct_layout(ir, s))
        .into_iter()
        .collect();
    let unions: Vec<_> = ir.find_union(name).map(union_layout).into_iter().collect();
    (!structs.is_empty() || !unions.is_empty()).then(|| Layout {
        format_version: FORMAT_VERSION,
        structs,
        unions,
        enums: Vec::new(),
        commands: Vec::new(),
        access_registers: Vec::new(),
        constants: Vec::new(),
        state_machines: Vec::new(),
    })
}

fn named(name: &str, value: u64) -> NamedValue {
    NamedValue {
        name: name.to_string(),
        value,
    }
}

fn union_layout(u: &Union) -> UnionLayout {
    UnionLayout {
        name: u.name.clone(),
        size_bits: u.size * 8,
        selector: u.selector.as_ref().map(|s| SelectorLayout {
            structure: s.structure.clone(),
            field: s.field.clone(),
            shift: s.shift,
        }),
        members: u
            .members
            .iter()
            .map(|m| MemberLayout {
                name: m.name.clone(),
                ty: m.ty.clone(),
                when: m.when,
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
        words: s.words.iter().map(|w| word_layout(s, w)).collect(),
    }
}

fn word_layout(s: &Struct, w: &Word) -> WordLayout {
    let mut inside: Vec<&Field> = s
        .fields
        .iter()
        .filter(|f| f.span_bits() > 0 && f.bit_offset >= w.bit_offset && f.end_bit() <= w.end_bit())
        .collect();
    inside.sort_by_key(|f| f.bit_offset);
    WordLayout {
        name: w.name.clone(),
        bit_offset: w.bit_offset,
        width: w.width,
        fields: inside.iter().map(|f| f.name.clone()).collect(),
    }
}

fn entry(ir: &Ir, s: &Struct, f: &Field, name: String, base: u64) -> FieldLayout {
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
        access: f.access,
        position: match f.count {
            Some(ArrayCount::Trailing) => None,
            _ => crate::position::prm_notation(base + f.bit_offset, f.span_bits().max(1)),
        },
        doc: f.doc.clone(),
        source: format!(
            "{}:{}",
            ir.modules.get(s.module).map_or("", |m| m.relative.as_str()),
            f.spans.name.line
        ),
    }
}

fn expand(ir: &Ir, s: &Struct, prefix: &str, base: u64, depth: usize, out: &mut Vec<FieldLayout>) {
    for f in &s.fields {
        let name = format!("{prefix}{}", f.name);
        out.push(entry(ir, s, f, name.clone(), base));
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
                        access: None,
                        position: crate::position::prm_notation(at, inner.size * 8),
                        doc: m.doc.clone(),
                        source: format!(
                            "{}:{}",
                            ir.modules.get(u.module).map_or("", |m| m.relative.as_str()),
                            m.span.line
                        ),
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

/// One line per field, tab-separated (`struct field bit_offset width kind type`), for grep and
/// awk.
pub fn to_text(doc: &Layout) -> String {
    let mut out = String::new();
    for s in &doc.structs {
        for f in &s.fields {
            out.push_str(&format!(
                "{}\t{}\t0x{:x}\t{}\t{}\t{}\n",
                s.name, f.name, f.bit_offset, f.width, f.kind, f.ty
            ));
        }
        for w in &s.words {
            out.push_str(&format!(
                "{}\t{}\t0x{:x}\t{}\tword\t{}\n",
                s.name,
                w.name,
                w.bit_offset,
                w.width,
                w.fields.join(",")
            ));
        }
    }
    for u in &doc.unions {
        for m in &u.members {
            out.push_str(&format!(
                "{}\t{}\t0x0\t{}\tmember\t{}\n",
                u.name, m.name, u.size_bits, m.ty
            ));
        }
    }
    out
}
