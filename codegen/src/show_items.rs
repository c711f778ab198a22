//! `prmc show` for what is not a layout: an enum (its values, and the fields typed by it), a
//! command (opcode, op_mods, its mailbox layouts), a field path (`cmd_hca_cap.log_max_qp`,
//! through nested layouts: position, width, type, doc, and where its layout is used), and the
//! lookup that picks which one a name means.

use crate::ir::{FieldType, Ir};
use crate::position::prm_notation;
use std::fmt::Write as _;

/// What `prmc show NAME` found.
pub enum Shown {
    /// The text to print.
    Text(String),
    /// Nothing by that name: the names it might have meant.
    Unknown(Option<String>),
}

/// Looks `name` up as a structure, union, enum, command (by name or opcode, `0x400`), or a
/// field path (`layout.field[.field...]`), in that order, and renders it; `filter` keeps
/// the rows of a layout whose name contains it.
pub fn show(ir: &Ir, name: &str, filter: Option<&str>) -> Shown {
    if let Some(s) = ir.find_struct(name) {
        return Shown::Text(crate::show::table_filtered(ir, s, filter));
    }
    if let Some(u) = ir.find_union(name) {
        return Shown::Text(crate::show::union_table(ir, u));
    }
    if let Some(e) = ir.find_enum(name) {
        return Shown::Text(enum_table(ir, e));
    }
    let opcode = crate::num::parse_uint(name).ok();
    if let Some(c) = ir
        .commands
        .iter()
        .find(|c| c.name == name || Some(c.opcode) == opcode)
    {
        return Shown::Text(command_table(ir, c));
    }
    if let Some(r) = ir
        .access_registers
        .iter()
        .find(|r| r.name == name || Some(r.id) == opcode)
    {
        return Shown::Text(register_table(ir, r));
    }
    if name.contains('.') {
        if let Some(t) = field_path(ir, name) {
            return Shown::Text(t);
        }
    }
    let names: Vec<&str> = ir
        .structs
        .iter()
        .map(|s| s.name.as_str())
        .chain(ir.unions.iter().map(|u| u.name.as_str()))
        .chain(ir.enums.iter().map(|e| e.name.as_str()))
        .chain(ir.commands.iter().map(|c| c.name.as_str()))
        .chain(ir.access_registers.iter().map(|r| r.name.as_str()))
        .collect();
    let head = name.split('.').next().unwrap_or(name);
    Shown::Unknown(crate::load::suggest(head, &names).map(str::to_string))
}

fn module_path(ir: &Ir, module: usize) -> &str {
    ir.modules.get(module).map_or("", |m| m.path.as_str())
}

fn first_line(doc: Option<&str>) -> &str {
    doc.and_then(|d| d.lines().next()).unwrap_or("")
}

/// An enum: width, values with their docs, and every field that has this type.
pub fn enum_table(ir: &Ir, e: &crate::ir::Enum) -> String {
    let mut out = String::new();
    let width = e
        .width
        .map(|w| format!("{w} bits"))
        .unwrap_or_else(|| "width from its fields".into());
    let _ = writeln!(
        out,
        "enum {}: {width}, {}",
        e.name,
        module_path(ir, e.module)
    );
    for line in e.doc.as_deref().unwrap_or("").lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push('\n');
    let wn = e
        .values
        .iter()
        .map(|v| v.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(out, "{:>10}  {:<wn$}  doc", "value", "name");
    for v in &e.values {
        let text = format!(
            "{:>10}  {:<wn$}  {}",
            format!("0x{:x}", v.value),
            v.name,
            first_line(v.doc.as_deref())
        );
        let _ = writeln!(out, "{}", text.trim_end());
    }
    let users: Vec<String> = ir
        .structs
        .iter()
        .flat_map(|s| {
            s.fields
                .iter()
                .filter(|f| f.ty == FieldType::Enum(e.name.clone()))
                .map(move |f| format!("{}.{}", s.name, f.name))
        })
        .collect();
    out.push('\n');
    if users.is_empty() {
        let _ = writeln!(out, "no field has this type");
    } else {
        let _ = writeln!(out, "fields of this type: {}", users.join(", "));
    }
    out
}

/// A command: opcode, op_mods, and its input and output layouts with their sizes.
/// An access register: id, access, index fields, then its image's table.
pub fn register_table(ir: &Ir, r: &crate::ir::AccessRegister) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "access register {}: id 0x{:x}, {}, {}",
        r.name,
        r.id,
        r.access.name().replace('_', "/"),
        module_path(ir, r.module)
    );
    for line in r.doc.as_deref().unwrap_or("").lines() {
        let _ = writeln!(out, "  {line}");
    }
    if !r.index.is_empty() {
        let _ = writeln!(out, "index: {}", r.index.join(", "));
    }
    out.push('\n');
    match ir.find_struct(&r.layout) {
        Some(s) => out.push_str(&crate::show::table(ir, s)),
        None => {
            let _ = writeln!(out, "image: {} (not a layout of this spec)", r.layout);
        }
    }
    out
}

pub fn command_table(ir: &Ir, c: &crate::ir::Command) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "command {}: opcode 0x{:x}, {}",
        c.name,
        c.opcode,
        module_path(ir, c.module)
    );
    for line in c.doc.as_deref().unwrap_or("").lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push('\n');
    let size = |name: &str| {
        ir.find_struct(name)
            .map(|s| format!("0x{:x} bytes", s.size))
            .unwrap_or_else(|| "not a layout of this spec".into())
    };
    let _ = writeln!(out, "input:   {} ({})", c.input, size(&c.input));
    let _ = writeln!(out, "output:  {} ({})", c.output, size(&c.output));
    if c.op_mods.is_empty() {
        let _ = writeln!(out, "op_mods: none named (0)");
    } else {
        let mods: Vec<String> = c
            .op_mods
            .iter()
            .map(|m| format!("{} = 0x{:x}", m.name, m.value))
            .collect();
        let _ = writeln!(out, "op_mods: {}", mods.join(", "));
    }
    out
}

/// `layout.field[.field...]`: the field's absolute position in the outer layout (PRM notation
/// and the kernel's bit offset), width, type, doc, and where the outer layout is used.
/// `None` when the path does not name a field.
pub fn field_path(ir: &Ir, path: &str) -> Option<String> {
    let mut parts = path.split('.');
    let top = parts.next()?;
    let outer = ir.find_struct(top)?;
    let mut layout = outer;
    let mut base = 0u64;
    let mut field: Option<&crate::ir::Field> = None;
    for part in parts {
        if let Some(f) = field {
            // Go into the nested layout of the previous field.
            let FieldType::Struct(inner) = &f.ty else {
                return None;
            };
            base += f.bit_offset;
            layout = ir.find_struct(inner)?;
        }
        field = Some(layout.fields.iter().find(|f| f.name == part)?);
    }
    let f = field?;
    let at = base + f.bit_offset;
    let span = f.span_bits().max(1);
    let mut out = String::new();
    let position = prm_notation(at, span).unwrap_or_else(|| format!("bit 0x{at:x}, {span} bits"));
    let _ = writeln!(out, "field {path}");
    let _ = writeln!(
        out,
        "  position: {position} of {top} (kernel bit offset 0x{at:x}); in {}: {}",
        layout.name, f.position
    );
    let count = match f.count {
        None => String::new(),
        Some(crate::ir::ArrayCount::Fixed(n)) => format!(" × {n}"),
        Some(crate::ir::ArrayCount::Trailing) => " × n (trailing)".into(),
    };
    let ty = f
        .type_name
        .clone()
        .unwrap_or_else(|| f.ty.name().to_string());
    let _ = writeln!(out, "  width:    {} bits{count}", f.width);
    let _ = writeln!(out, "  type:     {ty} ({})", f.ty.kind());
    for (i, line) in f.doc.as_deref().unwrap_or("").lines().enumerate() {
        let label = if i == 0 {
            "  doc:      "
        } else {
            "            "
        };
        let _ = writeln!(out, "{label}{line}");
    }
    let embedders: Vec<String> = ir
        .structs
        .iter()
        .flat_map(|s| {
            s.fields
                .iter()
                .filter(|g| g.ty == FieldType::Struct(top.to_string()))
                .map(move |g| format!("{}.{}", s.name, g.name))
        })
        .chain(ir.unions.iter().flat_map(|u| {
            u.members
                .iter()
                .filter(|m| m.ty == top)
                .map(move |m| format!("{}.{} (union member)", u.name, m.name))
        }))
        .collect();
    let commands: Vec<String> = ir
        .commands
        .iter()
        .filter(|c| c.input == top || c.output == top)
        .map(|c| format!("{} (0x{:x})", c.name, c.opcode))
        .collect();
    if !embedders.is_empty() {
        let _ = writeln!(out, "  {top} is embedded in: {}", embedders.join(", "));
    }
    if !commands.is_empty() {
        let _ = writeln!(out, "  {top} is the mailbox of: {}", commands.join(", "));
    }
    let registers: Vec<String> = ir
        .access_registers
        .iter()
        .filter(|r| r.layout == top)
        .map(|r| format!("{} (0x{:x})", r.name, r.id))
        .collect();
    if !registers.is_empty() {
        let _ = writeln!(
            out,
            "  {top} is the image of access register: {}",
            registers.join(", ")
        );
    }
    Some(out)
}
