//! The resolve pass: spec files → IR.
//!
//! Turns positions into absolute bit offsets and widths, resolves every name a spec refers to
//! (field types, union members and selectors, command layouts) and reports the names it cannot
//! resolve. Everything else is left for the check passes, so this pass accepts layouts that
//! are wrong in other ways and lets the checks explain them.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::load::suggest;
use crate::position::Position;
use crate::source::SourceMap;
use crate::syntax::{self, Spanned, SpecFile};
use std::collections::HashMap;

/// Built-in type names a field may use.
pub const BUILTIN_TYPES: &[&str] = &["uint", "u8", "u16", "u32", "u64", "bool", "bytes"];

/// What a name resolves to while lowering, with the width it implies.
#[derive(Clone, Copy)]
enum Declared {
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

/// A word's position: a whole dword `B[31:0]` or a 64-bit pair `B[63:0]`.
fn lower_word(w: &syntax::WordDecl, owner: &str, diags: &mut Diagnostics) -> Option<Word> {
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

/// Resolves `a.b.c` inside structure `s` to a [`FieldRef`], reporting a path that does not
/// resolve.
fn field_ref(
    ir: &Ir,
    s: &Struct,
    path: &Spanned<String>,
    at: &str,
    diags: &mut Diagnostics,
) -> Option<FieldRef> {
    match find_field_path(ir, s, &path.value) {
        Some((bit_offset, f)) => Some(FieldRef {
            path: path.value.clone(),
            bit_offset,
            width: f.span_bits(),
            span: path.span,
        }),
        None => {
            let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
            let first = path.value.split('.').next().unwrap_or("");
            let mut d = Diagnostic::error(
                "unknown-reference",
                path.span,
                format!("`{}` is not a field of `{}`", path.value, s.name),
            )
            .with_path(at);
            if let Some(sug) = suggest(first, &names) {
                d = d.with_hint(format!("`{}` has a field `{sug}`", s.name));
            }
            diags.push(d);
            None
        }
    }
}

fn lower_state_machine(
    ir: &Ir,
    module: usize,
    m: &syntax::StateMachineDecl,
    diags: &mut Diagnostics,
) -> Option<StateMachine> {
    let path = format!("state_machines.{}", m.name.value);
    let states = m.states.as_ref()?;
    let Some(e) = ir.find_enum(&states.value) else {
        let names: Vec<&str> = ir.enums.iter().map(|e| e.name.as_str()).collect();
        diags.push(unknown("enum", states, &names, &format!("{path}.states")));
        return None;
    };
    let values: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
    let state = |s: &Spanned<String>, at: &str, diags: &mut Diagnostics| -> Option<String> {
        if values.contains(&s.value.as_str()) {
            Some(s.value.clone())
        } else {
            diags.push(unknown(
                &format!("state (a value of enum `{}`)", e.name),
                s,
                &values,
                at,
            ));
            None
        }
    };
    let state_field = m.state_field.as_ref().and_then(|sf| {
        let (sname, fpath) = sf.value.split_once('.').unwrap_or((sf.value.as_str(), ""));
        let Some(st) = ir.find_struct(sname) else {
            let names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
            let sp = Spanned {
                value: sname.to_string(),
                span: sf.span,
            };
            diags.push(unknown(
                "structure",
                &sp,
                &names,
                &format!("{path}.state_field"),
            ));
            return None;
        };
        let fp = Spanned {
            value: fpath.to_string(),
            span: sf.span,
        };
        field_ref(ir, st, &fp, &format!("{path}.state_field"), diags)
            .map(|r| (sname.to_string(), r))
    });
    let optional_bits: Vec<OpMod> = m
        .optional_bits
        .iter()
        .map(|(n, v)| OpMod {
            name: n.value.clone(),
            value: v.value,
            span: n.span,
        })
        .collect();
    let mut transitions = Vec::new();
    for t in &m.transitions {
        let tpath = format!("{path}.transitions.{}", t.name.value);
        let from: Vec<String> = t
            .from
            .iter()
            .filter_map(|s| state(s, &format!("{tpath}.from"), diags))
            .collect();
        let to =
            t.to.as_ref()
                .and_then(|s| state(s, &format!("{tpath}.to"), diags));
        let command = t.command.as_ref().and_then(|c| {
            let found = ir.find_command(&c.value);
            if found.is_none() {
                let names: Vec<&str> = ir.commands.iter().map(|c| c.name.as_str()).collect();
                diags.push(unknown("command", c, &names, &format!("{tpath}.command")));
            }
            found
        });
        let (Some(to), Some(command)) = (to, command) else {
            continue;
        };
        if from.len() != t.from.len() {
            continue;
        }
        let Some(input) = ir.find_struct(&command.input) else {
            continue;
        };
        let requires = t
            .requires
            .iter()
            .filter_map(|p| field_ref(ir, input, p, &format!("{tpath}.requires"), diags))
            .collect();
        let optional = t
            .optional
            .iter()
            .filter_map(|(p, bit)| {
                let r = field_ref(ir, input, p, &format!("{tpath}.optional"), diags)?;
                let Some(b) = optional_bits.iter().find(|b| b.name == bit.value) else {
                    let names: Vec<&str> = optional_bits.iter().map(|b| b.name.as_str()).collect();
                    diags.push(unknown(
                        "mask bit",
                        bit,
                        &names,
                        &format!("{tpath}.optional.{}", p.value),
                    ));
                    return None;
                };
                Some((
                    r,
                    OpMod {
                        span: bit.span,
                        ..b.clone()
                    },
                ))
            })
            .collect();
        transitions.push(Transition {
            name: t.name.value.clone(),
            doc: t.doc.clone(),
            from,
            to,
            command: command.name.clone(),
            requires,
            optional,
            span: t.name.span,
        });
    }
    Some(StateMachine {
        name: m.name.value.clone(),
        module,
        doc: m.doc.clone(),
        states: e.name.clone(),
        state_field,
        mask_field: m.mask_field.as_ref().map(|f| f.value.clone()),
        object_field: m.object_field.as_ref().map(|f| f.value.clone()),
        optional_bits,
        transitions,
        span: m.name.span,
    })
}

fn unknown(what: &str, name: &Spanned<String>, candidates: &[&str], path: &str) -> Diagnostic {
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

fn lower_field(
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
fn position_text(p: &Position) -> String {
    match *p {
        Position::Bits { byte, hi, lo } if hi == lo => format!("0x{byte:02x}[{hi}]"),
        Position::Bits { byte, hi, lo } => format!("0x{byte:02x}[{hi}:{lo}]"),
        Position::Bytes { start, end } => format!("0x{start:02x}..0x{end:02x}"),
        Position::Offset { byte } => format!("0x{byte:02x}"),
    }
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

fn lower_union(
    ir: &Ir,
    module: usize,
    u: &syntax::UnionDecl,
    size: &Spanned<u64>,
    type_names: &[&str],
    diags: &mut Diagnostics,
) -> Union {
    let path = format!("unions.{}", u.name.value);
    let mut selector_enum: Option<&Enum> = None;
    let selector = u.selector.as_ref().and_then(|sel| {
        let spath = format!("{path}.selector.field");
        let text = &sel.field.value;
        let Some((sname, fpath)) = text.split_once('.') else {
            diags.push(
                Diagnostic::error(
                    "unknown-reference",
                    sel.field.span,
                    format!("selector `{text}` must name a structure and a field, like `query_hca_cap_in.op_mod`"),
                )
                .with_path(spath),
            );
            return None;
        };
        let Some(st) = ir.find_struct(sname) else {
            let names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
            let sp = Spanned {
                value: sname.to_string(),
                span: sel.field.span,
            };
            diags.push(unknown("structure", &sp, &names, &spath));
            return None;
        };
        let Some((bit_offset, field)) = find_field_path(ir, st, fpath) else {
            let names: Vec<&str> = st.fields.iter().map(|f| f.name.as_str()).collect();
            let sp = Spanned {
                value: format!("{sname}.{fpath}"),
                span: sel.field.span,
            };
            let mut d = unknown("selector field", &sp, &[], &spath);
            if let Some(s) = suggest(fpath, &names) {
                d = d.with_hint(format!("did you mean `{sname}.{s}`?"));
            }
            diags.push(d);
            return None;
        };
        if let FieldType::Enum(e) = &field.ty {
            selector_enum = ir.find_enum(e);
        }
        Some(Selector {
            structure: sname.to_string(),
            field: fpath.to_string(),
            bit_offset,
            width: field.width,
            shift: sel.shift.as_ref().map_or(0, |s| s.value),
            span: sel.field.span,
        })
    });
    let struct_names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
    let members = u
        .members
        .iter()
        .filter_map(|m| {
            let mpath = format!("{path}.members.{}", m.name.value);
            if ir.find_struct(&m.ty.value).is_none() {
                let mut d = unknown("structure", &m.ty, &struct_names, &format!("{mpath}.type"));
                if type_names.contains(&m.ty.value.as_str()) {
                    d = d.with_hint("union members are structures; wrap other types in a struct");
                }
                diags.push(d);
                return None;
            }
            let when = m.when.as_ref().and_then(|w| {
                if let Ok(v) = crate::num::parse_uint(&w.value) {
                    return Some(v);
                }
                if u.selector.is_some() && selector.is_none() {
                    // The selector itself did not resolve (reported); do not pile on.
                    return None;
                }
                if let Some(e) = selector_enum {
                    if let Some(v) = e.values.iter().find(|v| v.name == w.value) {
                        return Some(v.value);
                    }
                    let names: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
                    diags.push(unknown(
                        &format!("value of enum `{}`", e.name),
                        w,
                        &names,
                        &format!("{mpath}.when"),
                    ));
                    return None;
                }
                diags.push(
                    Diagnostic::error(
                        "unknown-reference",
                        w.span,
                        format!(
                            "`when: {}` is neither a number nor a value of the selector's enum",
                            w.value
                        ),
                    )
                    .with_path(format!("{mpath}.when")),
                );
                None
            });
            Some(UnionMember {
                name: m.name.value.clone(),
                ty: m.ty.value.clone(),
                when,
                doc: m.doc.clone(),
                span: m.name.span,
                ty_span: m.ty.span,
                when_span: m.when.as_ref().map(|w| w.span),
            })
        })
        .collect();
    Union {
        name: u.name.value.clone(),
        module,
        doc: u.doc.clone(),
        size: size.value,
        selector,
        selector_declared: u.selector.is_some(),
        members,
        span: u.name.span,
        size_span: size.span,
    }
}

fn lower_command(
    ir: &Ir,
    module: usize,
    c: &syntax::CommandDecl,
    diags: &mut Diagnostics,
) -> Option<Command> {
    let path = format!("commands.{}", c.name.value);
    let struct_names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
    let mut ok = true;
    for (key, layout) in [("in", &c.input), ("out", &c.output)] {
        if let Some(l) = layout {
            if ir.find_struct(&l.value).is_none() {
                diags.push(unknown(
                    "structure",
                    l,
                    &struct_names,
                    &format!("{path}.{key}"),
                ));
                ok = false;
            }
        }
    }
    let (Some(opcode), Some(input), Some(output), true) = (&c.opcode, &c.input, &c.output, ok)
    else {
        return None;
    };
    Some(Command {
        name: c.name.value.clone(),
        module,
        doc: c.doc.clone(),
        opcode: opcode.value,
        input: input.value.clone(),
        output: output.value.clone(),
        op_mods: c
            .op_mods
            .iter()
            .map(|(n, v)| OpMod {
                name: n.value.clone(),
                value: v.value,
                span: n.span,
            })
            .collect(),
        span: c.name.span,
        opcode_span: opcode.span,
    })
}
