//! `prmc diff OLD NEW`: what changed between two versions of the spec, and what it breaks.
//!
//! The comparison works on the resolved IR (absolute MSB-first bit offsets, see
//! [`crate::layout`]), one layout at a time and on its own fields only: a structure embedded in
//! others is compared once, and its report lists where it is embedded, instead of repeating
//! each change under every path that reaches it.
//!
//! Each change is judged twice, because the two audiences differ: the *wire* (does a device
//! see different bits?) and the *Rust API* of the generated crate (does a dependant stop
//! compiling, or compile and silently mean something else?). The verdict is the larger of
//! the two, in semver's terms ([`Level`]).
//!
//! - [`compare`]: layouts (structures and unions), field by field;
//! - [`items`]: enums, commands and constants;
//! - [`registers`]: access registers (id, image layout, access, index fields);
//! - [`classify`]: the Rust type of an accessor and the impact rules;
//! - [`render`]: text for people, JSON for tools;
//! - [`input`]: reading OLD and NEW (a spec directory, or a kernel header through the importer);
//! - [`generated`]: the layout tables in generated Rust, for `prmc gen --check`'s summary.

pub mod classify;
pub mod compare;
pub mod generated;
pub mod input;
pub mod items;
pub mod registers;
pub mod render;

use crate::ir::Ir;
use serde::Serialize;

/// Version of the JSON document `prmc diff --format json` prints.
pub const FORMAT_VERSION: u32 = 1;

/// A semver-like level: how much a change matters to dependants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing observable changed.
    None,
    /// Documentation only.
    Patch,
    /// Additions: old users keep working.
    Minor,
    /// Old users break, on the wire or in Rust.
    Major,
}

impl Level {
    /// The name used in text and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Patch => "patch",
            Level::Minor => "minor",
            Level::Major => "major",
        }
    }

    /// Parses `--deny`'s argument: a level name, or `breaking` (= `major`).
    pub fn parse_deny(text: &str) -> Option<Level> {
        match text {
            "breaking" | "major" => Some(Level::Major),
            "minor" => Some(Level::Minor),
            "patch" => Some(Level::Patch),
            _ => None,
        }
    }
}

/// What a change does to the bits a device reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Same bits.
    None,
    /// New bits in space that was reserved or past the old end: old software still works.
    Compatible,
    /// Bits an old user relies on moved, changed size or meaning, or went away.
    Breaking,
}

/// What a change does to dependants of the generated Rust crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rust {
    /// Same API.
    None,
    /// Documentation only.
    Doc,
    /// New items: old code still compiles.
    Additive,
    /// Old code compiles but means something else (a narrowed field, a changed value).
    Silent,
    /// Old code stops compiling.
    Breaking,
}

impl Wire {
    /// Its semver level.
    pub fn level(self) -> Level {
        match self {
            Wire::None => Level::None,
            Wire::Compatible => Level::Minor,
            Wire::Breaking => Level::Major,
        }
    }
}

impl Rust {
    /// Its semver level: a silent change of meaning is as bad as a compile error, worse to
    /// find.
    pub fn level(self) -> Level {
        match self {
            Rust::None => Level::None,
            Rust::Doc => Level::Patch,
            Rust::Additive => Level::Minor,
            Rust::Silent | Rust::Breaking => Level::Major,
        }
    }
}

/// The kind of item a change is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// A structure or register block.
    Struct,
    /// A union.
    Union,
    /// An enumeration.
    Enum,
    /// A command.
    Command,
    /// An access register.
    #[serde(rename = "access_register")]
    AccessRegister,
    /// A named constant.
    Constant,
}

impl ItemKind {
    /// The name used in text and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Struct => "struct",
            ItemKind::Union => "union",
            ItemKind::Enum => "enum",
            ItemKind::Command => "command",
            ItemKind::AccessRegister => "access register",
            ItemKind::Constant => "constant",
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// An item or member that is new.
    Added,
    /// An item or member that is gone.
    Removed,
    /// Same name, another offset.
    Moved,
    /// Same name, another width (or array length).
    Resized,
    /// Same name, another type.
    Retyped,
    /// Same offset and width (and type kind), another name.
    Renamed,
    /// A layout's size, an enum's width.
    SizeChanged,
    /// An enum value's or constant's number, an op_mod's value.
    ValueChanged,
    /// A command's opcode.
    OpcodeChanged,
    /// A command's input layout.
    InputChanged,
    /// A command's output layout.
    OutputChanged,
    /// A union's selector.
    SelectorChanged,
    /// An access register's id.
    IdChanged,
    /// An access register's image layout.
    LayoutChanged,
    /// An access register's access directions.
    AccessChanged,
    /// An access register's index fields.
    IndexChanged,
    /// Documentation.
    DocChanged,
}

/// One change.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The kind of item.
    pub item_kind: ItemKind,
    /// The item (layout, enum, command or constant name).
    pub item: String,
    /// The member (field, enum value, union member, op_mod), `None` for the item itself.
    pub member: Option<String>,
    /// What happened.
    pub kind: ChangeKind,
    /// The old state, in words (`0x00[31:16] u16`), when there was one.
    pub old: Option<String>,
    /// The new state.
    pub new: Option<String>,
    /// Wire impact.
    pub wire: Wire,
    /// Rust API impact.
    pub rust: Rust,
    /// Why, when the classification is not obvious (a silent narrowing).
    pub note: Option<String>,
    /// The larger of the two levels.
    pub level: Level,
    /// For fields: where the old one was, in numbers (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_at: Option<Place>,
    /// For fields: where the new one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_at: Option<Place>,
}

/// A field's bits and accessor type, for tools that would rather not parse `old`/`new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// Absolute MSB-first bit offset in its layout (the kernel's numbering).
    pub bit_offset: u64,
    /// Bits occupied (all elements of a fixed array; 0 for a trailing one).
    pub width: u64,
    /// The generated accessor's Rust type.
    pub rust_type: String,
}

impl Place {
    /// The place of a field.
    pub fn of(f: &crate::ir::Field) -> Place {
        Place {
            bit_offset: f.bit_offset,
            width: f.span_bits(),
            rust_type: classify::rust_type(f),
        }
    }
}

/// A layout that changed, with where it is embedded (in NEW, or in OLD when it is gone).
#[derive(Debug, Clone, Serialize)]
pub struct Embedding {
    /// The changed layout.
    pub layout: String,
    /// `struct.field` paths (one level) that hold it, in spec order.
    pub embedded_in: Vec<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// JSON contract version.
    pub format_version: u32,
    /// What OLD was (a path).
    pub old: String,
    /// What NEW was.
    pub new: String,
    /// The verdict: the largest level of any change.
    pub verdict: Level,
    /// Every change, grouped by item in NEW's order (removed items last).
    pub changes: Vec<Change>,
    /// For each changed layout that is embedded in others: where.
    pub embeddings: Vec<Embedding>,
    /// Counts by level and by kind.
    pub totals: Totals,
}

/// Counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// All changes.
    pub changes: usize,
    /// By level: major, minor, patch.
    pub major: usize,
    /// Minor changes.
    pub minor: usize,
    /// Documentation changes.
    pub patch: usize,
    /// Items (layouts, enums, commands, constants) with at least one change.
    pub items_changed: usize,
    /// Items only in NEW.
    pub items_added: usize,
    /// Items only in OLD.
    pub items_removed: usize,
}

impl Change {
    /// A change with its level computed from the two impacts.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        item_kind: ItemKind,
        item: &str,
        member: Option<&str>,
        kind: ChangeKind,
        old: Option<String>,
        new: Option<String>,
        wire: Wire,
        rust: Rust,
    ) -> Change {
        Change {
            item_kind,
            item: item.to_string(),
            member: member.map(str::to_string),
            kind,
            old,
            new,
            wire,
            rust,
            note: None,
            level: wire.level().max(rust.level()),
            old_at: None,
            new_at: None,
        }
    }

    /// The same change with the fields' places.
    pub fn at(mut self, old: Option<&crate::ir::Field>, new: Option<&crate::ir::Field>) -> Change {
        self.old_at = old.map(Place::of);
        self.new_at = new.map(Place::of);
        self
    }

    /// The same change with a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Change {
        self.note = Some(note.into());
        self
    }
}

/// Compares two IRs. `old_name` and `new_name` only label the report.
pub fn diff(old: &Ir, new: &Ir, old_name: &str, new_name: &str) -> Report {
    let mut changes = Vec::new();
    compare::layouts(old, new, &mut changes);
    items::enums(old, new, &mut changes);
    items::commands(old, new, &mut changes);
    registers::access_registers(old, new, &mut changes);
    items::constants(old, new, &mut changes);
    let embeddings = compare::embeddings(old, new, &changes);
    let totals = totals(&changes);
    Report {
        format_version: FORMAT_VERSION,
        old: old_name.to_string(),
        new: new_name.to_string(),
        verdict: changes.iter().map(|c| c.level).max().unwrap_or(Level::None),
        changes,
        embeddings,
        totals,
    }
}

fn totals(changes: &[Change]) -> Totals {
    let mut t = Totals {
        changes: changes.len(),
        ..Totals::default()
    };
    let mut last: Option<(ItemKind, &str)> = None;
    for c in changes {
        match c.level {
            Level::Major => t.major += 1,
            Level::Minor => t.minor += 1,
            Level::Patch => t.patch += 1,
            Level::None => {}
        }
        if last != Some((c.item_kind, c.item.as_str())) {
            t.items_changed += 1;
            last = Some((c.item_kind, c.item.as_str()));
        }
        if c.member.is_none() {
            match c.kind {
                ChangeKind::Added => t.items_added += 1,
                ChangeKind::Removed => t.items_removed += 1,
                _ => {}
            }
        }
    }
    t
}
