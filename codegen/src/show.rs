//! `prmc show STRUCT`: a structure as a PRM-style table, reserved gaps included (the other
//! things `show` names, enums, commands and field paths, are in `show_items`).

use crate::ir::{ArrayCount, Ir, Struct};
use crate::position::prm_notation;
use std::fmt::Write as _;

/// One table row.
struct Row {
    offset: String,
    bits: String,
    bit: u64,
    name: String,
    width: String,
    ty: String,
    doc: String,
}

/// Splits the PRM notation into the table's offset and bits columns.
fn columns(bit_offset: u64, width: u64) -> (String, String) {
    match prm_notation(bit_offset, width) {
        Some(n) => match n.split_once('[') {
            Some((off, bits)) => (off.to_string(), bits.trim_end_matches(']').to_string()),
            None => (n, "-".to_string()),
        },
        None => (format!("bit 0x{bit_offset:x}"), format!("+{width}")),
    }
}

/// Cuts a reserved gap into pieces the PRM notation can name: a partial leading dword, whole
/// dwords, a partial trailing dword.
fn gap_pieces(start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut pieces = Vec::new();
    let mut at = start;
    if at % 32 != 0 {
        let stop = end.min((at / 32 + 1) * 32);
        pieces.push((at, stop - at));
        at = stop;
    }
    let whole_end = end - end % 32;
    if whole_end > at {
        pieces.push((at, whole_end - at));
        at = whole_end;
    }
    if end > at {
        pieces.push((at, end - at));
    }
    pieces
}

fn reserved_rows(start: u64, end: u64, rows: &mut Vec<Row>) {
    for (at, width) in gap_pieces(start, end) {
        let (offset, bits) = columns(at, width);
        rows.push(Row {
            offset,
            bits,
            bit: at,
            name: "(reserved)".into(),
            width: width.to_string(),
            ty: String::new(),
            doc: String::new(),
        });
    }
}

/// Renders the table for one structure.
pub fn table(ir: &Ir, s: &Struct) -> String {
    table_filtered(ir, s, None)
}

/// [`table`] with only the rows whose name contains `filter` (case-insensitive), when given:
/// for big layouts (`cmd_hca_cap` has hundreds of fields).
pub fn table_filtered(ir: &Ir, s: &Struct, filter: Option<&str>) -> String {
    let mut rows = Vec::new();
    let mut covered = 0u64;
    for f in &s.fields {
        if f.bit_offset > covered {
            reserved_rows(covered, f.bit_offset, &mut rows);
        }
        let (offset, bits) = match f.count {
            Some(ArrayCount::Trailing) => (format!("0x{:02x}", f.bit_offset / 8), "…".to_string()),
            _ => columns(f.bit_offset, f.span_bits().max(1)),
        };
        let (name, width) = match f.count {
            None => (f.name.clone(), f.width.to_string()),
            Some(ArrayCount::Fixed(n)) => (format!("{}[{n}]", f.name), format!("{n}×{}", f.width)),
            Some(ArrayCount::Trailing) => (format!("{}[]", f.name), format!("n×{}", f.width)),
        };
        let mut ty = f
            .type_name
            .clone()
            .unwrap_or_else(|| f.ty.name().to_string());
        if let Some(a) = f.access {
            ty.push_str(match a {
                crate::ir::Access::Ro => " (ro)",
                crate::ir::Access::Rw => " (rw)",
                crate::ir::Access::Wo => " (wo)",
            });
        }
        rows.push(Row {
            offset,
            bits,
            bit: f.bit_offset,
            name,
            width,
            ty,
            doc: f
                .doc
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("")
                .to_string(),
        });
        covered = covered.max(f.end_bit());
    }
    let size_bits = s.size * 8;
    if covered < size_bits {
        reserved_rows(covered, size_bits, &mut rows);
    }
    if let Some(want) = filter {
        let want = want.to_lowercase();
        rows.retain(|r| r.name.to_lowercase().contains(&want));
    }

    let mut out = String::new();
    let kind = if s.register_block {
        "register block"
    } else {
        "struct"
    };
    let module = ir.modules.get(s.module).map_or("", |m| m.path.as_str());
    let _ = writeln!(
        out,
        "{kind} {}: 0x{:x} bytes ({} bits), {module}",
        s.name, s.size, size_bits
    );
    if let Some(doc) = &s.doc {
        for line in doc.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out.push('\n');
    let header = Row {
        offset: "offset".into(),
        bits: "bits".into(),
        bit: 0,
        name: "name".into(),
        width: "width".into(),
        ty: "type".into(),
        doc: "doc".into(),
    };
    let w = |f: &dyn Fn(&Row) -> usize| rows.iter().map(f).chain([f(&header)]).max().unwrap_or(0);
    let wo = w(&|r| r.offset.chars().count());
    let wb = w(&|r| r.bits.chars().count());
    let wn = w(&|r| r.name.chars().count());
    let ww = w(&|r| r.width.chars().count());
    let wt = w(&|r| r.ty.chars().count());
    let mut line = |r: &Row, bit: &str| {
        let text = format!(
            "{:<wo$}  {:<wb$}  {:>6}  {:<wn$}  {:>ww$}  {:<wt$}  {}",
            r.offset, r.bits, bit, r.name, r.width, r.ty, r.doc
        );
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(&header, "bit");
    for r in &rows {
        line(r, &format!("0x{:x}", r.bit));
    }
    out
}

/// Renders a union: its members, their types and sizes, and the selector.
pub fn union_table(ir: &Ir, u: &crate::ir::Union) -> String {
    let mut out = String::new();
    let module = ir.modules.get(u.module).map_or("", |m| m.path.as_str());
    let _ = writeln!(
        out,
        "union {}: 0x{:x} bytes ({} bits), {module}",
        u.name,
        u.size,
        u.size * 8
    );
    if let Some(doc) = &u.doc {
        for line in doc.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(sel) = &u.selector {
        let shift = if sel.shift > 0 {
            format!(" >> {}", sel.shift)
        } else {
            String::new()
        };
        let _ = writeln!(out, "  selected by {}.{}{shift}", sel.structure, sel.field);
    }
    out.push('\n');
    let wn = u
        .members
        .iter()
        .map(|m| m.name.len())
        .chain([6])
        .max()
        .unwrap_or(6);
    let wt = u
        .members
        .iter()
        .map(|m| m.ty.len())
        .chain([4])
        .max()
        .unwrap_or(4);
    let _ = writeln!(
        out,
        "{:<wn$}  {:<wt$}  {:>8}  {:>6}  doc",
        "member", "type", "bytes", "when"
    );
    for m in &u.members {
        let size = ir.find_struct(&m.ty).map_or(0, |s| s.size);
        let when = m
            .when
            .map(|w| format!("0x{w:x}"))
            .unwrap_or_else(|| "-".into());
        let doc = m
            .doc
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or("");
        let text = format!(
            "{:<wn$}  {:<wt$}  {:>8}  {:>6}  {doc}",
            m.name,
            m.ty,
            format!("0x{size:x}"),
            when
        );
        let _ = writeln!(out, "{}", text.trim_end());
    }
    out
}
