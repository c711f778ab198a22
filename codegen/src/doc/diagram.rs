//! The bit diagram of a layout, drawn the way the PRM draws one: a row per 32-bit big-endian
//! dword, bit 31 on the left, each field a box spanning its bits (wrapping onto the next rows
//! when it is longer than what is left of a dword), reserved bits shaded.
//!
//! Runs of whole dwords that belong to one field (or one reserved gap) are drawn as a single
//! row labelled with its byte range, so a 4 KiB capability page or a large array does not turn
//! into a thousand identical rows; the number of rows is bounded by three per field, whatever
//! size the spec declares.

use super::{esc, field_anchor, hex, Site};
use crate::ir::{ArrayCount, Field, FieldType, Struct};
use crate::position::prm_notation;
use std::fmt::Write as _;

/// Who owns a box: a field (index into the structure's fields) or nobody.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Field(usize),
    Reserved,
}

/// One box in a row: bits `hi` down to `lo` (PRM numbering inside the dword).
struct Cell {
    hi: u64,
    lo: u64,
    owner: Owner,
}

/// One drawn row: dwords `first..=last` (more than one only for a run of whole dwords).
struct Row {
    first: u64,
    last: u64,
    cells: Vec<Cell>,
}

/// Lays the fixed part out into rows.
fn rows(s: &Struct) -> Vec<Row> {
    let size_bits = s.size.saturating_mul(8);
    let mut pieces: Vec<(u64, u64, Owner)> = Vec::new();
    let mut covered = 0u64;
    for (i, f) in s.fields.iter().enumerate() {
        let start = f.bit_offset.max(covered);
        let end = f.end_bit().min(size_bits);
        if f.bit_offset > covered {
            pieces.push((covered, f.bit_offset.min(size_bits), Owner::Reserved));
        }
        if start < end {
            pieces.push((start, end, Owner::Field(i)));
        }
        covered = covered.max(end);
    }
    if covered < size_bits {
        pieces.push((covered, size_bits, Owner::Reserved));
    }
    let mut rows: Vec<Row> = Vec::new();
    let put = |rows: &mut Vec<Row>, a: u64, b: u64, owner: Owner| {
        // bits [a, b) inside one dword
        let dw = a / 32;
        let cell = Cell {
            hi: 31 - (a - dw * 32),
            lo: 31 - (b - 1 - dw * 32),
            owner,
        };
        match rows.last_mut() {
            Some(r) if r.first == dw && r.last == dw => r.cells.push(cell),
            _ => rows.push(Row {
                first: dw,
                last: dw,
                cells: vec![cell],
            }),
        }
    };
    for (s, e, owner) in pieces {
        if s >= e {
            continue;
        }
        let mut at = s;
        if at % 32 != 0 || e - at < 32 {
            let stop = e.min((at / 32 + 1) * 32);
            put(&mut rows, at, stop, owner);
            at = stop;
        }
        let whole = (e - at) / 32;
        if whole > 0 {
            rows.push(Row {
                first: at / 32,
                last: at / 32 + whole - 1,
                cells: vec![Cell {
                    hi: 31,
                    lo: 0,
                    owner,
                }],
            });
            at += whole * 32;
        }
        if at < e {
            put(&mut rows, at, e, owner);
        }
    }
    rows
}

/// The text in a field's box and its link: nested layouts link to their page, other fields
/// to their row in the field table of `page` (empty: the page the diagram is on).
fn label(site: &Site, f: &Field, page: &str) -> (String, String) {
    let name = match f.count {
        None => f.name.clone(),
        Some(ArrayCount::Fixed(n)) => format!("{}[{n}]", f.name),
        Some(ArrayCount::Trailing) => format!("{}[]", f.name),
    };
    let href = match &f.ty {
        FieldType::Struct(t) | FieldType::Union(t) => site.type_href(t),
        _ => None,
    }
    .unwrap_or_else(|| format!("{page}#{}", field_anchor(&f.name)));
    (name, href)
}

/// The diagram of a structure's fixed part, then its trailing array if it has one. Field boxes
/// link to their rows on `page` (empty: this page; a union's page draws its members' diagrams
/// and links to the members' own pages).
pub fn render(site: &Site, s: &Struct, page: &str) -> String {
    let mut out = String::from(
        r#"<div class="diagram-wrap"><table class="diagram"><thead><tr><th class="off">offset</th>"#,
    );
    for b in (0..32).rev() {
        let _ = write!(out, "<th>{b}</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in rows(s) {
        let off = if r.first == r.last {
            format!("0x{:02x}", r.first * 4)
        } else {
            format!("0x{:02x}–0x{:02x}", r.first * 4, r.last * 4)
        };
        let _ = write!(
            out,
            r#"<tr data-dword="{}"><th class="off">{off}</th>"#,
            r.first
        );
        for c in &r.cells {
            let span = c.hi - c.lo + 1;
            let narrow = if span <= 3 { " narrow" } else { "" };
            match c.owner {
                Owner::Reserved => {
                    let _ = write!(
                        out,
                        r#"<td colspan="{span}" class="rsvd" title="reserved"></td>"#
                    );
                }
                Owner::Field(i) => {
                    let Some(f) = s.fields.get(i) else { continue };
                    let (name, href) = label(site, f, page);
                    let nested = match f.ty {
                        FieldType::Struct(_) | FieldType::Union(_) => " nested",
                        _ if f.count.is_some() => " array",
                        _ => "",
                    };
                    let place = prm_notation(f.bit_offset, f.span_bits())
                        .unwrap_or_else(|| format!("bit {}", hex(f.bit_offset)));
                    let _ = write!(
                        out,
                        r#"<td colspan="{span}" class="f{nested}{narrow}" data-field="{}" title="{} {}"><a href="{}">{}</a></td>"#,
                        esc(&f.name),
                        esc(&name),
                        esc(&place),
                        esc(&href),
                        esc(&name)
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    if let Some(f) = s
        .fields
        .iter()
        .find(|f| f.count == Some(ArrayCount::Trailing))
    {
        let (name, href) = label(site, f, page);
        let _ = write!(
            out,
            r#"<tr class="trail"><th class="off">0x{:02x}…</th><td colspan="32" class="f array" data-field="{}"><a href="{}">{}</a> (as many {}-bit elements as the buffer holds)</td></tr>"#,
            f.bit_offset / 8,
            esc(&f.name),
            esc(&href),
            esc(&name),
            f.width
        );
        out.push('\n');
    }
    out.push_str("</tbody></table></div>\n");
    out
}
