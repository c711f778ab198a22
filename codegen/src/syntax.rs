//! The spec files as written: one value per YAML entry, each with the place it came from.
//!
//! Nothing here is resolved or checked beyond its own shape; `lower` turns it into the IR and
//! the passes judge the result.

use crate::position::Position;
use crate::source::Span;

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Its place in the spec.
    pub span: Span,
}

/// One spec file.
#[derive(Debug, Clone, Default)]
pub struct SpecFile {
    /// Index in the [`crate::source::SourceMap`].
    pub file: usize,
    /// What the file covers.
    pub doc: Option<String>,
    /// `constants:`.
    pub constants: Vec<ConstDecl>,
    /// `enums:`.
    pub enums: Vec<EnumDecl>,
    /// `structs:` and `registers:`.
    pub structs: Vec<StructDecl>,
    /// `unions:`.
    pub unions: Vec<UnionDecl>,
    /// `commands:`.
    pub commands: Vec<CommandDecl>,
    /// `access_registers:`.
    pub access_registers: Vec<AccessRegisterDecl>,
    /// `state_machines:`.
    pub state_machines: Vec<StateMachineDecl>,
}

/// A named constant.
#[derive(Debug, Clone)]
pub struct ConstDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Value.
    pub value: Spanned<u64>,
    /// Meaning.
    pub doc: Option<String>,
}

/// An enumeration of field values.
#[derive(Debug, Clone)]
pub struct EnumDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Meaning.
    pub doc: Option<String>,
    /// Declared width in bits, if any.
    pub width: Option<Spanned<u64>>,
    /// Named values in spec order.
    pub values: Vec<EnumValueDecl>,
}

/// One enumerator.
#[derive(Debug, Clone)]
pub struct EnumValueDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Value.
    pub value: Spanned<u64>,
    /// Meaning.
    pub doc: Option<String>,
}

/// A structure (`structs:`) or an MMIO register block (`registers:`).
#[derive(Debug, Clone)]
pub struct StructDecl {
    /// Name.
    pub name: Spanned<String>,
    /// True when declared under `registers:`.
    pub register_block: bool,
    /// Size in bytes.
    pub size: Option<Spanned<u64>>,
    /// Meaning.
    pub doc: Option<String>,
    /// Fields in spec order.
    pub fields: Vec<FieldDecl>,
    /// Words written as one store, in spec order.
    pub words: Vec<WordDecl>,
    /// True when some field could not be read (its problem is already reported).
    pub incomplete: bool,
}

/// A word of a structure that is written whole, as one store: a dword or a 64-bit pair,
/// composed from the fields inside it (a doorbell, say).
#[derive(Debug, Clone)]
pub struct WordDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Its position (`0x20[63:0]`, `0x40[31:0]`).
    pub at: Spanned<Position>,
    /// Meaning.
    pub doc: Option<String>,
}

/// Access rights of a register-block field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read only.
    Ro,
    /// Read and write.
    Rw,
    /// Write only.
    Wo,
}

/// How many elements an array field has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// A fixed number.
    Fixed(u64),
    /// As many as the buffer holds after the fixed part.
    Trailing,
}

/// One field.
#[derive(Debug, Clone)]
pub struct FieldDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Where it sits (the first element, for arrays).
    pub at: Spanned<Position>,
    /// The type, if written.
    pub ty: Option<Spanned<String>>,
    /// Array count, if an array.
    pub count: Option<Spanned<Count>>,
    /// Meaning.
    pub doc: Option<String>,
    /// Access, for register blocks.
    pub access: Option<Spanned<Access>>,
}

/// A union: members that share one span.
#[derive(Debug, Clone)]
pub struct UnionDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Size in bytes.
    pub size: Option<Spanned<u64>>,
    /// Meaning.
    pub doc: Option<String>,
    /// Which field picks the member.
    pub selector: Option<SelectorDecl>,
    /// Members in spec order.
    pub members: Vec<MemberDecl>,
}

/// `selector: { field: struct.path, shift: N }`.
#[derive(Debug, Clone)]
pub struct SelectorDecl {
    /// `struct.field[.sub...]`.
    pub field: Spanned<String>,
    /// Right shift applied to the field value before comparing with `when`.
    pub shift: Option<Spanned<u64>>,
    /// Where the selector was declared.
    pub span: Span,
}

/// One union member.
#[derive(Debug, Clone)]
pub struct MemberDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Its struct type.
    pub ty: Spanned<String>,
    /// The selector value that picks it: a number or an enumerator name.
    pub when: Option<Spanned<String>>,
    /// Meaning.
    pub doc: Option<String>,
}

/// A command: opcode plus mailbox layouts.
#[derive(Debug, Clone)]
pub struct CommandDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Meaning.
    pub doc: Option<String>,
    /// The opcode.
    pub opcode: Option<Spanned<u64>>,
    /// Input struct name.
    pub input: Option<Spanned<String>>,
    /// Output struct name.
    pub output: Option<Spanned<String>>,
    /// Named op_mod values.
    pub op_mods: Vec<(Spanned<String>, Spanned<u64>)>,
}

/// An access register: a register id of ACCESS_REGISTER, the layout of its image, the
/// directions it may be accessed in, and the fields that select one instance of it.
#[derive(Debug, Clone)]
pub struct AccessRegisterDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Meaning.
    pub doc: Option<String>,
    /// The register id.
    pub id: Option<Spanned<u64>>,
    /// Struct name of the register image.
    pub layout: Option<Spanned<String>>,
    /// `read`, `write` or `read_write`.
    pub access: Option<Spanned<String>>,
    /// Fields of the layout that select the instance (`local_port`, a counter group).
    pub index: Vec<Spanned<String>>,
}

/// A state machine: which command moves an object between which states, and which context
/// fields each move requires or may set.
#[derive(Debug, Clone)]
pub struct StateMachineDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Meaning.
    pub doc: Option<String>,
    /// The enum whose values are the states.
    pub states: Option<Spanned<String>>,
    /// `struct.field` where the device reports the current state.
    pub state_field: Option<Spanned<String>>,
    /// The field of a transition command's input that holds the optional-parameter mask.
    pub mask_field: Option<Spanned<String>>,
    /// The field of every transition command's input that names the object moved (`qpn`).
    pub object_field: Option<Spanned<String>>,
    /// Names of the mask's bits.
    pub optional_bits: Vec<(Spanned<String>, Spanned<u64>)>,
    /// The transitions.
    pub transitions: Vec<TransitionDecl>,
}

/// One transition of a state machine.
#[derive(Debug, Clone)]
pub struct TransitionDecl {
    /// Name.
    pub name: Spanned<String>,
    /// Meaning.
    pub doc: Option<String>,
    /// Source states; empty means any state.
    pub from: Vec<Spanned<String>>,
    /// Target state.
    pub to: Option<Spanned<String>>,
    /// The command that performs it.
    pub command: Option<Spanned<String>>,
    /// Field paths (in the command's input) the transition requires.
    pub requires: Vec<Spanned<String>>,
    /// Field paths it may set, each with the name of its optional-parameter mask bit.
    pub optional: Vec<(Spanned<String>, Spanned<String>)>,
}
