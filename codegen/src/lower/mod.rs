//! The resolve pass: spec files → IR.
//!
//! Turns positions into absolute bit offsets and widths, resolves every name a spec refers to
//! (field types, union members and selectors, command and access register layouts) and reports the names it cannot
//! resolve. Everything else is left for the check passes, so this pass accepts layouts that
//! are wrong in other ways and lets the checks explain them.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::load::suggest;
use crate::source::SourceMap;
use crate::syntax::{Spanned, SpecFile};
use std::collections::HashMap;

mod access_registers;
mod commands;
mod fields;
mod machines;
mod unions;

use access_registers::lower_access_register;
use commands::lower_command;
use fields::{lower_field, lower_word};
use machines::lower_state_machine;
use unions::lower_union;

/// Built-in type names a field may use.
pub const BUILTIN_TYPES: &[&str] = &["uint", "u8", "u16", "u32", "u64", "bool", "bytes"];

/// What a name resolves to while lowering, with the width it implies.
#[derive(Clone, Copy)]
pub(crate) enum Declared {
    /// A structure; its size is unknown when the spec omits it.
    Struct(Option<u64>),
    Union(u64),
    Enum(Option<u64>),
}

/// Lowers the parsed files into the IR, reporting unresolved references.
pub fn lower(sources: &SourceMap, files: &[SpecFile], diags: &mut Diagnostics) -> Ir {
    let mut ir = Ir {
        modules: files
            .iter()
            .map(|f| Module {
                name: sources.files[f.file].module.clone(),
                path: sources.files[f.file].path.display().to_string(),
                relative: sources.files[f.file].path.display().to_string(),
                doc: f.doc.clone(),
            })
            .collect(),
        ..Ir::default()
    };

    // Each file becomes a module named after its stem; two files may not share one.
    let mut stems: HashMap<&str, usize> = HashMap::new();
    for f in files {
        let source = &sources.files[f.file];
        if let Some(&first) = stems.get(source.module.as_str()) {
            diags.push(
                Diagnostic::error(
                    "module-name",
                    crate::source::Span {
                        file: f.file,
                        line: 1,
                        col: 1,
                        len: 1,
                    },
                    format!(
                        "`{}` and `{}` would both become module `{}`",
                        sources.files[first].path.display(),
                        source.path.display(),
                        source.module
                    ),
                )
                .with_hint("spec files are modules named after their file name; rename one"),
            );
        } else {
            stems.insert(&source.module, f.file);
        }
    }

    let mut declared: HashMap<&str, Declared> = HashMap::new();
    for f in files {
        for s in &f.structs {
            let size = s.size.as_ref().map(|s| s.value);
            declared
                .entry(&s.name.value)
                .or_insert(Declared::Struct(size));
        }
        for u in &f.unions {
            let size = u.size.as_ref().map_or(0, |s| s.value);
            declared
                .entry(&u.name.value)
                .or_insert(Declared::Union(size));
        }
        for e in &f.enums {
            declared
                .entry(&e.name.value)
                .or_insert(Declared::Enum(e.width.as_ref().map(|w| w.value)));
        }
    }
    let type_names: Vec<&str> = BUILTIN_TYPES
        .iter()
        .copied()
        .chain(declared.keys().copied())
        .collect();

    for (module, f) in files.iter().enumerate() {
        for c in &f.constants {
            ir.constants.push(Constant {
                name: c.name.value.clone(),
                module,
                value: c.value.value,
                doc: c.doc.clone(),
                span: c.name.span,
            });
        }
        for e in &f.enums {
            ir.enums.push(Enum {
                name: e.name.value.clone(),
                module,
                doc: e.doc.clone(),
                width: e.width.as_ref().map(|w| w.value),
                values: e
                    .values
                    .iter()
                    .map(|v| EnumValue {
                        name: v.name.value.clone(),
                        value: v.value.value,
                        doc: v.doc.clone(),
                        span: v.name.span,
                        value_span: v.value.span,
                    })
                    .collect(),
                span: e.name.span,
                width_span: e.width.as_ref().map(|w| w.span),
            });
        }
        for s in &f.structs {
            let what = if s.register_block {
                "registers"
            } else {
                "structs"
            };
            let mut incomplete = s.incomplete;
            let mut fields: Vec<Field> = Vec::with_capacity(s.fields.len());
            for fd in &s.fields {
                let path = format!("{what}.{}.fields.{}", s.name.value, fd.name.value);
                match lower_field(fd, &declared, &type_names, &path, diags) {
                    Some(f) => fields.push(f),
                    None => incomplete = true,
                }
            }
            fields.sort_by_key(|f| f.bit_offset);
            // Without a declared size, assume the fields' extent so no check reports a
            // second problem for the missing size.
            let size = match &s.size {
                Some(size) => size.value,
                None => {
                    fields
                        .iter()
                        .map(Field::end_bit)
                        .max()
                        .unwrap_or(0)
                        .div_ceil(32)
                        * 4
                }
            };
            let words = s
                .words
                .iter()
                .filter_map(|w| lower_word(w, &format!("{what}.{}", s.name.value), diags))
                .collect();
            ir.structs.push(Struct {
                name: s.name.value.clone(),
                module,
                doc: s.doc.clone(),
                size,
                register_block: s.register_block,
                fields,
                words,
                span: s.name.span,
                size_span: s.size.as_ref().map(|s| s.span),
                incomplete,
            });
        }
    }
    ir.reindex();

    // Unions need the lowered structs to resolve their selectors.
    for (module, f) in files.iter().enumerate() {
        for u in &f.unions {
            let Some(size) = &u.size else { continue };
            let union = lower_union(&ir, module, u, size, &type_names, diags);
            ir.unions.push(union);
        }
    }
    ir.reindex();

    for (module, f) in files.iter().enumerate() {
        for c in &f.commands {
            if let Some(cmd) = lower_command(&ir, module, c, diags) {
                ir.commands.push(cmd);
            }
        }
        for r in &f.access_registers {
            if let Some(reg) = lower_access_register(&ir, module, r, diags) {
                ir.access_registers.push(reg);
            }
        }
    }
    for (module, f) in files.iter().enumerate() {
        for m in &f.state_machines {
            if let Some(sm) = lower_state_machine(&ir, module, m, diags) {
                ir.state_machines.push(sm);
            }
        }
    }
    ir
}

pub(crate) fn unknown(
    what: &str,
    name: &Spanned<String>,
    candidates: &[&str],
    path: &str,
) -> Diagnostic {
    let mut d = Diagnostic::error(
        "unknown-reference",
        name.span,
        format!("unknown {what} `{}`", name.value),
    )
    .with_path(path);
    if let Some(s) = suggest(&name.value, candidates) {
        d = d.with_hint(format!("did you mean `{s}`?"));
    }
    d
}

/// Finds `a.b.c` inside a structure, following nested structs; returns the absolute offset and
/// the field.
pub fn find_field_path<'a>(
    ir: &'a Ir,
    structure: &'a Struct,
    path: &str,
) -> Option<(u64, &'a Field)> {
    let mut base = 0u64;
    let mut current = structure;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let field = current.fields.iter().find(|f| f.name == part)?;
        if parts.peek().is_none() {
            return Some((base + field.bit_offset, field));
        }
        let FieldType::Struct(inner) = &field.ty else {
            return None;
        };
        if field.count.is_some() {
            return None;
        }
        base += field.bit_offset;
        current = ir.find_struct(inner)?;
    }
    None
}
