//! Layout pages: a structure's bit diagram, its field table (reserved gaps shaded) and where
//! it is used; a union's members and selector.

use super::{diagram, doc_html, esc, field_anchor, hex, shell, Site};
use crate::ir::{Access, ArrayCount, Field, Struct, Union};
use crate::position::prm_notation;
use std::fmt::Write as _;

/// The offset and bits columns for a span of bits.
fn place(bit: u64, width: u64) -> (String, String) {
    match prm_notation(bit, width) {
        Some(n) => match n.split_once('[') {
            Some((off, bits)) => (off.to_string(), bits.trim_end_matches(']').to_string()),
            None => (n, "—".into()),
        },
        None => (format!("bit {}", hex(bit)), format!("+{width}")),
    }
}

/// The rows of a reserved gap `[start, end)`: the rest of a partly used dword, then the whole
/// dwords, then the start of the last one, so that each row has a PRM position.
fn reserved_rows(out: &mut String, start: u64, end: u64) {
    let mut at = start;
    while at < end {
        let stop = if at % 32 != 0 || end - at < 32 {
            end.min((at / 32 + 1) * 32)
        } else {
            at + (end - at) / 32 * 32
        };
        let (off, bits) = place(at, stop - at);
        let _ = writeln!(
            out,
            r#"<tr class="rsvd"><td>{}</td><td>{}</td><td>(reserved)</td><td>{}</td><td></td><td></td></tr>"#,
            esc(&off),
            esc(&bits),
            stop - at
        );
        at = stop;
    }
}

fn field_row(site: &Site, out: &mut String, f: &Field) {
    let (off, bits) = match f.count {
        Some(ArrayCount::Trailing) => (format!("0x{:02x}", f.bit_offset / 8), "…".to_string()),
        _ => place(f.bit_offset, f.span_bits().max(1)),
    };
    let (name, width) = match f.count {
        None => (f.name.clone(), f.width.to_string()),
        Some(ArrayCount::Fixed(n)) => (format!("{}[{n}]", f.name), format!("{n}×{}", f.width)),
        Some(ArrayCount::Trailing) => (format!("{}[]", f.name), format!("n×{}", f.width)),
    };
    let ty = match &f.ty {
        crate::ir::FieldType::Enum(t)
        | crate::ir::FieldType::Struct(t)
        | crate::ir::FieldType::Union(t) => site.type_link(t),
        other => esc(f.type_name.as_deref().unwrap_or(other.name())),
    };
    let access = match f.access {
        Some(Access::Ro) => " (ro)",
        Some(Access::Rw) => " (rw)",
        Some(Access::Wo) => " (wo)",
        None => "",
    };
    let _ = writeln!(
        out,
        r##"<tr id="{}"><td>{}</td><td>{}</td><td><a href="#{0}">{}</a></td><td>{}</td><td>{ty}{access}</td><td>{}<span class="at">{}</span></td></tr>"##,
        field_anchor(&f.name),
        esc(&off),
        esc(&bits),
        esc(&name),
        esc(&width),
        doc_html(f.doc.as_deref()),
        site.src_link(f.spans.name)
    );
}

/// The "used by" list of a layout.
fn users(site: &Site, name: &str) -> String {
    let mut out = String::from("<h2>Used by</h2>");
    match site.layout_users.get(name) {
        None => out.push_str("<p>Nothing in this spec nests or sends it.</p>"),
        Some(list) => {
            out.push_str(r#"<ul class="users">"#);
            for (href, text) in list {
                let _ = write!(out, r#"<li><a href="{}">{}</a></li>"#, esc(href), esc(text));
            }
            out.push_str("</ul>");
        }
    }
    out
}

fn header(site: &Site, kind: &str, name: &str, size: u64, span: crate::source::Span) -> String {
    let module = site
        .files
        .get(span.file)
        .map_or(String::new(), |f| esc(&f.display));
    format!(
        r#"<h1><span class="kind">{kind}</span> {}</h1><p class="meta">{} bytes ({} bits) · {module} · defined at {}</p>"#,
        esc(name),
        hex(size),
        size.saturating_mul(8),
        site.src_link(span)
    )
}

/// The page of a structure or register block.
pub fn struct_page(site: &Site, s: &Struct) -> String {
    let kind = if s.register_block {
        "register block"
    } else {
        "layout"
    };
    let mut body = header(site, kind, &s.name, s.size, s.span);
    body.push_str(&doc_html(s.doc.as_deref()));
    body.push_str("<h2>Bit diagram</h2>");
    body.push_str(&diagram::render(site, s, ""));
    body.push_str(
        r#"<h2>Fields</h2><table class="fields"><thead><tr><th>offset</th><th>bits</th><th>name</th><th>width</th><th>type</th><th>doc</th></tr></thead><tbody>"#,
    );
    body.push('\n');
    let size_bits = s.size.saturating_mul(8);
    let mut covered = 0u64;
    for f in &s.fields {
        if f.bit_offset > covered && covered < size_bits {
            reserved_rows(&mut body, covered, f.bit_offset.min(size_bits));
        }
        field_row(site, &mut body, f);
        covered = covered.max(f.end_bit());
    }
    if covered < size_bits {
        reserved_rows(&mut body, covered, size_bits);
    }
    body.push_str("</tbody></table>\n");
    if !s.words.is_empty() {
        body.push_str("<h2>Words written whole</h2><ul>");
        for w in &s.words {
            let (off, bits) = place(w.bit_offset, w.width);
            let _ = write!(
                body,
                "<li><code>{}</code> at {}[{}] ({} bits){} {}</li>",
                esc(&w.name),
                esc(&off),
                esc(&bits),
                w.width,
                doc_html(w.doc.as_deref()),
                site.src_link(w.span)
            );
        }
        body.push_str("</ul>");
    }
    body.push_str(&users(site, &s.name));
    shell("../", &s.name, &body)
}

/// The page of a union.
pub fn union_page(site: &Site, u: &Union) -> String {
    let mut body = header(site, "union", &u.name, u.size, u.span);
    body.push_str(&doc_html(u.doc.as_deref()));
    if let Some(sel) = &u.selector {
        let shift = if sel.shift > 0 {
            format!(" &gt;&gt; {}", sel.shift)
        } else {
            String::new()
        };
        let _ = write!(
            body,
            "<p>The member is picked by {}<code>.{}</code>{shift} ({}).</p>",
            site.type_link(&sel.structure),
            esc(&sel.field),
            site.src_link(sel.span)
        );
    }
    body.push_str(
        r#"<h2>Members</h2><table class="fields"><thead><tr><th>member</th><th>type</th><th>bytes</th><th>when</th><th>doc</th></tr></thead><tbody>"#,
    );
    for m in &u.members {
        let size = site
            .ir
            .find_struct(&m.ty)
            .map_or(String::from("—"), |s| hex(s.size));
        let when = m.when.map_or(String::from("—"), hex);
        let _ = writeln!(
            body,
            r#"<tr id="{}"><td>{}</td><td>{}</td><td>{size}</td><td>{when}</td><td>{}<span class="at">{}</span></td></tr>"#,
            field_anchor(&m.name),
            esc(&m.name),
            site.type_link(&m.ty),
            doc_html(m.doc.as_deref()),
            site.src_link(m.span)
        );
    }
    body.push_str("</tbody></table>\n");
    // Each member's bit diagram, as the PRM draws a union: one layout per case, over the
    // same bytes. The first is open; the others unfold on demand.
    body.push_str("<h2>Bit diagrams</h2>");
    for (i, m) in u.members.iter().enumerate() {
        let Some(s) = site.ir.find_struct(&m.ty) else {
            continue;
        };
        let rest = if s.size < u.size {
            format!(
                "; bytes {}..{} of the union are unused by this member",
                hex(s.size),
                hex(u.size)
            )
        } else {
            String::new()
        };
        let _ = write!(
            body,
            r#"<details class="member" data-member="{}"{}><summary><code>{}</code>: {} ({} bytes{rest})</summary>{}</details>"#,
            esc(&m.name),
            if i == 0 { " open" } else { "" },
            esc(&m.name),
            site.type_link(&m.ty),
            hex(s.size),
            diagram::render(site, s, &format!("{}.html", super::slug(&s.name)))
        );
    }
    body.push_str(&users(site, &u.name));
    shell("../", &u.name, &body)
}
