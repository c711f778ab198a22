//! The layout table inside generated Rust, read back for `prmc gen --check`.
//!
//! When the checked-in bindings drift from the spec, naming the files is not enough: the
//! reader wants to know which fields moved. The generated code carries a reflection table per
//! structure (`LayoutAccess { name, size, fields: [FieldAccess { name, bit_offset, width,
//! count, trailing, .. }], nested: [NestedAccess { .. }] }`, behind the `reflect` feature but
//! always in the text). Reading that table from both the checked-in files and a fresh
//! generation, and comparing the two with [`super::diff`], gives a field-level summary that
//! sees offsets, widths, counts, nested layouts and what a field holds (number, flag, enum
//! by name, bytes; `kind: ValueKind::..`), though not the values of the enums themselves.
//!
//! The reader is line-based and lenient: the text is our own generator's output, and anything
//! it does not recognise is skipped, never a panic.

use crate::gen::GeneratedFile;
use crate::ir::{ArrayCount, Field, FieldSpans, FieldType, Ir, Struct};
use crate::source::Span;
use std::path::Path;

/// What an entry of the table describes while it is being read.
enum Entry {
    None,
    Layout,
    Field(Part),
    Nested(Part),
}

/// One field or nested entry's values.
#[derive(Default)]
struct Part {
    name: Option<String>,
    bit_offset: Option<u64>,
    width: Option<u64>,
    count: Option<u64>,
    trailing: bool,
    layout: Option<String>,
    union: bool,
    /// What a scalar entry holds, from its `kind:`.
    ty: Option<FieldType>,
    /// True after `kind: ValueKind::Enum {`: the next `name:` is the enum's.
    enum_name_next: bool,
}

fn string_value(v: &str) -> Option<String> {
    let v = v.trim_end_matches(',').trim();
    v.strip_prefix('"')?.strip_suffix('"').map(str::to_string)
}

fn number_value(v: &str) -> Option<u64> {
    let v = v.trim_end_matches(',').trim().replace('_', "");
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

fn field_of(p: Part) -> Option<Field> {
    let count = match (p.trailing, p.count) {
        (true, _) => Some(ArrayCount::Trailing),
        (false, Some(1) | None) => None,
        (false, Some(n)) => Some(ArrayCount::Fixed(n)),
    };
    let ty = match p.layout {
        Some(l) if p.union => FieldType::Union(l),
        Some(l) => FieldType::Struct(l),
        None => p.ty.unwrap_or(FieldType::Uint),
    };
    Some(Field {
        name: p.name?,
        bit_offset: p.bit_offset?,
        width: p.width?,
        ty,
        type_name: None,
        count,
        doc: None,
        access: None,
        position: String::new(),
        spans: FieldSpans::default(),
    })
}

/// Reads every structure's table from generated Rust `text` (any number of files' worth).
pub fn read_tables(text: &str, out: &mut Vec<Struct>) {
    let mut entry = Entry::None;
    let finish = |entry: Entry, out: &mut Vec<Struct>| match entry {
        Entry::Field(p) | Entry::Nested(p) => {
            if let (Some(f), Some(s)) = (field_of(p), out.last_mut()) {
                s.fields.push(f);
            }
        }
        Entry::None | Entry::Layout => {}
    };
    for line in text.lines() {
        let t = line.trim();
        if t.ends_with("reflect::LayoutAccess {") {
            finish(std::mem::replace(&mut entry, Entry::Layout), out);
            out.push(Struct {
                name: String::new(),
                module: 0,
                doc: None,
                size: 0,
                register_block: false,
                fields: Vec::new(),
                words: Vec::new(),
                span: Span::default(),
                size_span: None,
                incomplete: false,
            });
            continue;
        }
        // Other initialisers with `name:` lines (the `LAYOUT` text table of each view, a
        // union's table and its members) end the entry being read rather than feed it.
        if t.ends_with("::Layout {") || t.ends_with("reflect::UnionAccess {") {
            finish(std::mem::replace(&mut entry, Entry::None), out);
            continue;
        }
        if t.ends_with("reflect::FieldAccess {") {
            finish(
                std::mem::replace(&mut entry, Entry::Field(Part::default())),
                out,
            );
            continue;
        }
        if t.ends_with("reflect::NestedAccess {") {
            finish(
                std::mem::replace(&mut entry, Entry::Nested(Part::default())),
                out,
            );
            continue;
        }
        let Some((key, value)) = t.split_once(": ") else {
            continue;
        };
        match &mut entry {
            Entry::Layout => {
                let Some(s) = out.last_mut() else { continue };
                match key {
                    "name" if s.name.is_empty() => s.name = string_value(value).unwrap_or_default(),
                    "size" => s.size = number_value(value).unwrap_or(0),
                    _ => {}
                }
            }
            Entry::Field(p) => match key {
                "name" if p.enum_name_next => {
                    p.enum_name_next = false;
                    p.ty = string_value(value).map(FieldType::Enum);
                }
                "name" => p.name = string_value(value),
                "kind" => {
                    p.ty = if value.contains("ValueKind::Flag") {
                        Some(FieldType::Bool)
                    } else if value.contains("ValueKind::Bytes") {
                        Some(FieldType::Bytes)
                    } else {
                        None
                    };
                    p.enum_name_next = value.contains("ValueKind::Enum");
                }
                "bit_offset" => p.bit_offset = number_value(value),
                "width" => p.width = number_value(value),
                "count" => p.count = number_value(value),
                "trailing" => p.trailing = value.starts_with("true"),
                _ => {}
            },
            Entry::Nested(p) => match key {
                "name" => p.name = string_value(value),
                "layout" => p.layout = string_value(value),
                // `table: NestedTable::Union(..)`; `kind: NestedKind::Union` before it.
                "table" | "kind" => p.union = value.contains("Union"),
                "byte_offset" => p.bit_offset = number_value(value).map(|b| b.saturating_mul(8)),
                "size" => p.width = number_value(value).map(|b| b.saturating_mul(8)),
                "count" => p.count = number_value(value),
                "trailing" => p.trailing = value.starts_with("true"),
                _ => {}
            },
            Entry::None => {}
        }
    }
    finish(entry, out);
    out.retain(|s| !s.name.is_empty());
}

/// The tables of a set of generated texts as an IR (structures only, fields untyped).
pub fn tables_ir<'a>(texts: impl IntoIterator<Item = &'a str>) -> Ir {
    let mut structs = Vec::new();
    for t in texts {
        read_tables(t, &mut structs);
    }
    let mut ir = Ir {
        structs,
        ..Ir::default()
    };
    ir.reindex();
    ir
}

/// The field-level difference between the generated files in `out_dir` (OLD; missing files
/// read as empty) and a fresh generation `files` (NEW); `None` when `out_dir` holds no table
/// at all (nothing generated yet: a list of every layout as added would say nothing).
pub fn drift_report(files: &[GeneratedFile], out_dir: &Path) -> Option<super::Report> {
    let on_disk: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(out_dir.join(&f.path)).unwrap_or_default())
        .collect();
    let old = tables_ir(on_disk.iter().map(String::as_str));
    if old.structs.is_empty() {
        return None;
    }
    let new = tables_ir(files.iter().map(|f| f.contents.as_str()));
    Some(super::diff(
        &old,
        &new,
        &out_dir.display().to_string(),
        "the fresh generation",
    ))
}
