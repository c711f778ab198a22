//! The resolved layout IR: what the generator and every tool consume.
//!
//! Every field has an absolute bit offset counted from the most significant bit of byte 0 of
//! its structure and a width in bits: the numbering `mlx5_ifc.h` uses, so any structure can be
//! compared with the kernel header field by field. Types are resolved to the item they name.
//! Spans are kept (not serialized) so the checks can point back into the spec.

mod access_register;

use crate::source::Span;
pub use crate::syntax::{Access, Count};
pub use access_register::{AccessRegister, RegAccess};
use serde::Serialize;
use std::collections::HashMap;

/// The whole compilation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ir {
    /// One per spec file, in load order.
    pub modules: Vec<Module>,
    /// Named constants.
    pub constants: Vec<Constant>,
    /// Enumerations.
    pub enums: Vec<Enum>,
    /// Structures and register blocks.
    pub structs: Vec<Struct>,
    /// Unions.
    pub unions: Vec<Union>,
    /// Commands.
    pub commands: Vec<Command>,
    /// Access registers (ACCESS_REGISTER's register ids).
    pub access_registers: Vec<AccessRegister>,
    /// State machines.
    pub state_machines: Vec<StateMachine>,
    /// Name lookup, rebuilt by [`Ir::reindex`]; the first definition of a name wins.
    #[serde(skip)]
    pub index: HashMap<String, Item>,
}

/// What a type name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// `structs[i]`.
    Struct(usize),
    /// `unions[i]`.
    Union(usize),
    /// `enums[i]`.
    Enum(usize),
}

/// A spec file.
#[derive(Debug, Clone, Serialize)]
pub struct Module {
    /// Module name (file stem).
    pub name: String,
    /// Path as loaded.
    pub path: String,
    /// Path relative to the spec directory (the path as loaded when compiled from memory).
    pub relative: String,
    /// What the file covers.
    pub doc: Option<String>,
}

/// A named constant.
#[derive(Debug, Clone, Serialize)]
pub struct Constant {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Value.
    pub value: u64,
    /// Meaning.
    pub doc: Option<String>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
}

/// An enumeration.
#[derive(Debug, Clone, Serialize)]
pub struct Enum {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Meaning.
    pub doc: Option<String>,
    /// Declared width in bits.
    pub width: Option<u64>,
    /// Enumerators in spec order.
    pub values: Vec<EnumValue>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the width was written.
    #[serde(skip)]
    pub width_span: Option<Span>,
}

/// One enumerator.
#[derive(Debug, Clone, Serialize)]
pub struct EnumValue {
    /// Name.
    pub name: String,
    /// Value.
    pub value: u64,
    /// Meaning.
    pub doc: Option<String>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the value was written.
    #[serde(skip)]
    pub value_span: Span,
}

/// A structure or register block.
#[derive(Debug, Clone, Serialize)]
pub struct Struct {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Meaning.
    pub doc: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// True for an MMIO register block.
    pub register_block: bool,
    /// Fields sorted by bit offset (ties keep spec order).
    pub fields: Vec<Field>,
    /// Words written whole (one store each), in spec order.
    pub words: Vec<Word>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the size was written; `None` when the size is missing (already reported), in
    /// which case `size` is only an estimate and size checks are skipped.
    #[serde(skip)]
    pub size_span: Option<Span>,
    /// True when some field could not be read or resolved (already reported): checks that
    /// look for a field's absence skip such structures rather than report it twice.
    #[serde(skip)]
    pub incomplete: bool,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum FieldType {
    /// An unsigned number.
    Uint,
    /// One bit.
    Bool,
    /// Opaque bytes (addresses, GIDs, strings).
    Bytes,
    /// A number with named values.
    Enum(String),
    /// A nested structure.
    Struct(String),
    /// A nested union.
    Union(String),
}

impl FieldType {
    /// The name used in tables and JSON: `uint`, `bool`, `bytes` or the named type.
    pub fn name(&self) -> &str {
        match self {
            FieldType::Uint => "uint",
            FieldType::Bool => "bool",
            FieldType::Bytes => "bytes",
            FieldType::Enum(n) | FieldType::Struct(n) | FieldType::Union(n) => n,
        }
    }

    /// The kind used in JSON: `uint`, `bool`, `bytes`, `enum`, `struct` or `union`.
    pub fn kind(&self) -> &'static str {
        match self {
            FieldType::Uint => "uint",
            FieldType::Bool => "bool",
            FieldType::Bytes => "bytes",
            FieldType::Enum(_) => "enum",
            FieldType::Struct(_) => "struct",
            FieldType::Union(_) => "union",
        }
    }
}

/// Where a field's parts were written, for diagnostics.
#[derive(Debug, Clone, Copy, Default)]
pub struct FieldSpans {
    /// The field name.
    pub name: Span,
    /// The `at:` value.
    pub at: Span,
    /// The `type:` value, if written.
    pub ty: Option<Span>,
    /// The `count:` value, if written.
    pub count: Option<Span>,
}

/// One field (or array of fields).
#[derive(Debug, Clone, Serialize)]
pub struct Field {
    /// Name.
    pub name: String,
    /// Absolute offset of the (first element's) most significant bit.
    pub bit_offset: u64,
    /// Width of one element in bits.
    pub width: u64,
    /// What it holds.
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// The type as written (`u16`, `uint`, ...), when written.
    pub type_name: Option<String>,
    /// Array count, for arrays.
    pub count: Option<ArrayCount>,
    /// Meaning.
    pub doc: Option<String>,
    /// Access rights, for register-block fields.
    pub access: Option<Access>,
    /// The position as written in the spec.
    pub position: String,
    /// Where things were written.
    #[serde(skip)]
    pub spans: FieldSpans,
}

/// An array's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArrayCount {
    /// A fixed number of elements.
    Fixed(u64),
    /// Fills the buffer after the fixed part.
    Trailing,
}

impl Field {
    /// Bits the field occupies inside the fixed part (a trailing array occupies none).
    pub fn span_bits(&self) -> u64 {
        match self.count {
            None => self.width,
            Some(ArrayCount::Fixed(n)) => self.width.saturating_mul(n),
            Some(ArrayCount::Trailing) => 0,
        }
    }

    /// One past the last bit occupied in the fixed part.
    pub fn end_bit(&self) -> u64 {
        self.bit_offset.saturating_add(self.span_bits())
    }
}

/// A word of a structure that is written as one store (a doorbell): a dword or an aligned
/// 64-bit pair, composed from the fields that lie inside it.
#[derive(Debug, Clone, Serialize)]
pub struct Word {
    /// Name.
    pub name: String,
    /// Meaning.
    pub doc: Option<String>,
    /// Absolute MSB-first bit offset of the word's first bit.
    pub bit_offset: u64,
    /// 32 or 64.
    pub width: u64,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the position was written.
    #[serde(skip)]
    pub at_span: Span,
}

impl Word {
    /// One past the word's last bit.
    pub fn end_bit(&self) -> u64 {
        self.bit_offset.saturating_add(self.width)
    }

    /// True when field `f` (a single element) lies inside the word.
    pub fn holds(&self, f: &Field) -> bool {
        f.count.is_none() && f.bit_offset >= self.bit_offset && f.end_bit() <= self.end_bit()
    }

    /// True when field `f` shares any bit with the word.
    pub fn touches(&self, f: &Field) -> bool {
        let end = if f.count == Some(ArrayCount::Trailing) {
            u64::MAX
        } else {
            f.end_bit()
        };
        f.bit_offset < self.end_bit() && self.bit_offset < end
    }
}

/// A union.
#[derive(Debug, Clone, Serialize)]
pub struct Union {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Meaning.
    pub doc: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// The field that picks the member, when known.
    pub selector: Option<Selector>,
    /// True when the spec declares a selector, even one that did not resolve.
    #[serde(skip)]
    pub selector_declared: bool,
    /// Members in spec order.
    pub members: Vec<UnionMember>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the size was written.
    #[serde(skip)]
    pub size_span: Span,
}

/// The field that picks a union member: `(value >> shift) == member.when`.
#[derive(Debug, Clone, Serialize)]
pub struct Selector {
    /// The structure that holds the field.
    pub structure: String,
    /// Dotted path of the field inside that structure.
    pub field: String,
    /// Absolute bit offset of the field in the structure.
    pub bit_offset: u64,
    /// Its width.
    pub width: u64,
    /// Right shift applied before comparing.
    pub shift: u64,
    /// Where the selector's field was written.
    #[serde(skip)]
    pub span: Span,
}

/// One union member.
#[derive(Debug, Clone, Serialize)]
pub struct UnionMember {
    /// Name.
    pub name: String,
    /// The struct it is read as.
    #[serde(rename = "type")]
    pub ty: String,
    /// The selector value that picks it.
    pub when: Option<u64>,
    /// Meaning.
    pub doc: Option<String>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the type was written.
    #[serde(skip)]
    pub ty_span: Span,
    /// Where `when` was written.
    #[serde(skip)]
    pub when_span: Option<Span>,
}

/// A command.
#[derive(Debug, Clone, Serialize)]
pub struct Command {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Meaning.
    pub doc: Option<String>,
    /// Opcode.
    pub opcode: u64,
    /// Input mailbox layout.
    pub input: String,
    /// Output mailbox layout.
    pub output: String,
    /// Named op_mod values.
    pub op_mods: Vec<OpMod>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
    /// Where the opcode was written.
    #[serde(skip)]
    pub opcode_span: Span,
}

/// A named op_mod value.
#[derive(Debug, Clone, Serialize)]
pub struct OpMod {
    /// Name.
    pub name: String,
    /// Value.
    pub value: u64,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
}

impl Ir {
    /// Rebuilds the name index after items were added.
    pub fn reindex(&mut self) {
        let mut index = HashMap::new();
        let items = self
            .structs
            .iter()
            .enumerate()
            .map(|(i, s)| (&s.name, Item::Struct(i)))
            .chain(
                self.unions
                    .iter()
                    .enumerate()
                    .map(|(i, u)| (&u.name, Item::Union(i))),
            )
            .chain(
                self.enums
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (&e.name, Item::Enum(i))),
            );
        for (name, item) in items {
            index.entry(name.clone()).or_insert(item);
        }
        self.index = index;
    }

    /// Looks up a structure or register block by name.
    pub fn find_struct(&self, name: &str) -> Option<&Struct> {
        match self.index.get(name) {
            Some(Item::Struct(i)) => self.structs.get(*i),
            _ => None,
        }
    }

    /// Looks up a union by name.
    pub fn find_union(&self, name: &str) -> Option<&Union> {
        match self.index.get(name) {
            Some(Item::Union(i)) => self.unions.get(*i),
            _ => None,
        }
    }

    /// Looks up an enum by name.
    pub fn find_enum(&self, name: &str) -> Option<&Enum> {
        match self.index.get(name) {
            Some(Item::Enum(i)) => self.enums.get(*i),
            _ => None,
        }
    }

    /// Looks up a command by name.
    pub fn find_command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// The field through which a structure's storage runs on past its fixed part: its own
    /// trailing array, or else a single nested structure that ends exactly where the fixed
    /// part ends and itself runs on (as CREATE_SQ's `ctx` does through `ctx.wq.pas`).
    /// `None` for a structure whose storage ends with its fixed part.
    pub fn tail_field<'a>(&'a self, s: &'a Struct) -> Option<&'a Field> {
        self.tail_field_within(s, 0)
    }

    /// [`Ir::tail_field`] with a bound on the nesting it follows (the cycle check runs after
    /// lowering, so a spec with a cycle must not recurse forever here).
    fn tail_field_within<'a>(&'a self, s: &'a Struct, depth: usize) -> Option<&'a Field> {
        if depth > 16 {
            return None;
        }
        if let Some(f) = s
            .fields
            .iter()
            .find(|f| f.count == Some(ArrayCount::Trailing))
        {
            return Some(f);
        }
        s.fields.iter().find(|f| {
            f.count.is_none()
                && f.end_bit() == s.size * 8
                && match &f.ty {
                    FieldType::Struct(t) => self
                        .find_struct(t)
                        .is_some_and(|inner| self.tail_field_within(inner, depth + 1).is_some()),
                    _ => false,
                }
        })
    }

    /// The nested field that runs on into the storage past `s`'s fixed part, when `s` has
    /// no trailing array of its own (see [`Ir::tail_field`]).
    pub fn open_nested<'a>(&'a self, s: &'a Struct) -> Option<&'a Field> {
        self.tail_field(s).filter(|f| f.count.is_none())
    }
}

/// A field reached by a dotted path from a structure, resolved to its absolute position.
#[derive(Debug, Clone, Serialize)]
pub struct FieldRef {
    /// The path as written (`qpc.primary_address_path.pkey_index`).
    pub path: String,
    /// Absolute MSB-first bit offset from the start of the structure.
    pub bit_offset: u64,
    /// Width in bits (the whole span, for a nested structure).
    pub width: u64,
    /// Where the path was written.
    #[serde(skip)]
    pub span: Span,
}

/// A state machine over the values of an enum.
#[derive(Debug, Clone, Serialize)]
pub struct StateMachine {
    /// Name.
    pub name: String,
    /// Module index.
    pub module: usize,
    /// Meaning.
    pub doc: Option<String>,
    /// The enum whose values are the states.
    pub states: String,
    /// Where the device reports the state: structure name and field.
    pub state_field: Option<(String, FieldRef)>,
    /// The input field holding the optional-parameter mask.
    pub mask_field: Option<String>,
    /// The input field naming the object a transition moves (`qpn`), present in every
    /// transition's input.
    pub object_field: Option<String>,
    /// Named mask bits.
    pub optional_bits: Vec<OpMod>,
    /// Transitions in spec order.
    pub transitions: Vec<Transition>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
}

/// One transition.
#[derive(Debug, Clone, Serialize)]
pub struct Transition {
    /// Name.
    pub name: String,
    /// Meaning.
    pub doc: Option<String>,
    /// Source states (enum value names); empty means any state.
    pub from: Vec<String>,
    /// Target state.
    pub to: String,
    /// The command.
    pub command: String,
    /// Fields of the command's input the transition requires.
    pub requires: Vec<FieldRef>,
    /// Fields it may set, with the mask bit that says they are given.
    pub optional: Vec<(FieldRef, OpMod)>,
    /// Where the name was written.
    #[serde(skip)]
    pub span: Span,
}
