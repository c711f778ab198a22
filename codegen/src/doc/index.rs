//! The index page (one section per spec file, listing what it defines) and the search index
//! the search box reads.

use super::{doc_html, esc, field_anchor, hex, shell, slug, Site};
use crate::position::prm_notation;
use serde_json::json;
use std::fmt::Write as _;

/// A linked list item, href relative to the output directory.
fn item(out: &mut String, href: &str, name: &str, note: &str) {
    let _ = write!(
        out,
        r#"<li><a href="{}">{}</a> <small>{}</small></li>"#,
        esc(href),
        esc(name),
        esc(note)
    );
}

/// The index page.
pub fn page(site: &Site) -> String {
    let ir = site.ir;
    let mut body = String::from("<h1>PRM layout reference</h1>");
    let _ = write!(
        body,
        "<p class=\"meta\">{} spec files · {} layouts · {} unions · {} enums · {} commands · {} access registers · {} state machines. Type in the box above to find a layout, field, enum value or opcode, by name or by number.</p>",
        ir.modules.len(),
        ir.structs.len(),
        ir.unions.len(),
        ir.enums.len(),
        ir.commands.len(),
        ir.access_registers.len(),
        ir.state_machines.len()
    );
    body.push_str(r#"<nav class="toc"><ul>"#);
    for m in &ir.modules {
        let _ = write!(
            body,
            r##"<li><a href="#m-{}">{}</a></li>"##,
            slug(&m.name),
            esc(&m.name)
        );
    }
    body.push_str("</ul></nav>");
    for (i, m) in ir.modules.iter().enumerate() {
        let src = site
            .files
            .iter()
            .find(|f| f.display == m.relative)
            .map(|f| {
                format!(
                    r#" <a class="src" href="src/{}.html">{}</a>"#,
                    f.slug,
                    esc(&f.display)
                )
            })
            .unwrap_or_default();
        let _ = write!(
            body,
            r#"<section class="module" id="m-{}"><h2>{}{src}</h2>{}"#,
            slug(&m.name),
            esc(&m.name),
            doc_html(m.doc.as_deref())
        );
        let mut lists = String::new();
        let mut group = |title: &str, items: String| {
            if !items.is_empty() {
                let _ = write!(lists, "<div><h3>{title}</h3><ul>{items}</ul></div>");
            }
        };
        let mut s = String::new();
        for x in ir.structs.iter().filter(|x| x.module == i) {
            let href = format!("layout/{}.html", slug(&x.name));
            item(&mut s, &href, &x.name, &format!("{} bytes", hex(x.size)));
        }
        for x in ir.unions.iter().filter(|x| x.module == i) {
            let href = format!("layout/{}.html", slug(&x.name));
            item(
                &mut s,
                &href,
                &x.name,
                &format!("union, {} bytes", hex(x.size)),
            );
        }
        group("Layouts", s);
        let mut s = String::new();
        for x in ir.enums.iter().filter(|x| x.module == i) {
            let href = format!("enum/{}.html", slug(&x.name));
            item(
                &mut s,
                &href,
                &x.name,
                &format!("{} values", x.values.len()),
            );
        }
        group("Enums", s);
        let mut s = String::new();
        for x in ir.commands.iter().filter(|x| x.module == i) {
            let href = format!("command/{}.html", slug(&x.name));
            item(&mut s, &href, &x.name, &hex(x.opcode));
        }
        group("Commands", s);
        let mut s = String::new();
        for x in ir.access_registers.iter().filter(|x| x.module == i) {
            let _ = write!(
                s,
                r#"<li id="r-{}"><a href="layout/{}.html">{}</a> <small>id {} · {} · {}</small></li>"#,
                slug(&x.name),
                slug(&x.layout),
                esc(&x.name),
                hex(x.id),
                x.access.name().replace('_', "/"),
                esc(&x.layout)
            );
        }
        group("Access registers", s);
        let mut s = String::new();
        for x in ir.state_machines.iter().filter(|x| x.module == i) {
            let href = format!("machine/{}.html", slug(&x.name));
            item(&mut s, &href, &x.name, "state machine");
        }
        group("State machines", s);
        let mut s = String::new();
        for x in ir.constants.iter().filter(|x| x.module == i) {
            let _ = write!(
                s,
                r#"<li id="c-{}"><code>{}</code> = {} <small>{}</small></li>"#,
                slug(&x.name),
                esc(&x.name),
                hex(x.value),
                esc(x.doc.as_deref().unwrap_or(""))
            );
        }
        group("Constants", s);
        let _ = write!(body, r#"<div class="groups">{lists}</div></section>"#);
    }
    shell("", "Index", &body)
}

/// The search index: a script that sets `PRM_INDEX` to `[name, kind, href, detail]` rows
/// (a script rather than a JSON file, because a page opened from disk may not fetch files).
pub fn search_index(site: &Site) -> String {
    let ir = site.ir;
    let mut rows = Vec::new();
    let mut row = |name: String, kind: &str, href: String, detail: String| {
        rows.push(json!([name, kind, href, detail]));
    };
    for s in &ir.structs {
        let page = format!("layout/{}.html", slug(&s.name));
        row(
            s.name.clone(),
            "layout",
            page.clone(),
            format!("{} bytes", hex(s.size)),
        );
        for f in &s.fields {
            let at = prm_notation(f.bit_offset, f.width).unwrap_or_else(|| f.position.clone());
            row(
                format!("{}.{}", s.name, f.name),
                "field",
                format!("{page}#{}", field_anchor(&f.name)),
                format!("{at} bit {} width {}", hex(f.bit_offset), f.width),
            );
        }
    }
    for u in &ir.unions {
        let page = format!("layout/{}.html", slug(&u.name));
        row(
            u.name.clone(),
            "union",
            page.clone(),
            format!("{} bytes", hex(u.size)),
        );
        for m in &u.members {
            row(
                format!("{}.{}", u.name, m.name),
                "member",
                format!("{page}#{}", field_anchor(&m.name)),
                m.ty.clone(),
            );
        }
    }
    for e in &ir.enums {
        let page = format!("enum/{}.html", slug(&e.name));
        row(e.name.clone(), "enum", page.clone(), String::new());
        for v in &e.values {
            row(
                format!("{}.{}", e.name, v.name),
                "value",
                format!("{page}#{}", field_anchor(&v.name)),
                format!("{} = {}", hex(v.value), v.value),
            );
        }
    }
    for c in &ir.commands {
        let page = format!("command/{}.html", slug(&c.name));
        row(
            c.name.clone(),
            "command",
            page.clone(),
            format!("opcode {} = {}", hex(c.opcode), c.opcode),
        );
        for m in &c.op_mods {
            row(
                format!("{}.{}", c.name, m.name),
                "op_mod",
                format!("{page}#{}", field_anchor(&m.name)),
                format!("op_mod {} = {}", hex(m.value), m.value),
            );
        }
    }
    for r in &ir.access_registers {
        row(
            r.name.clone(),
            "register",
            format!("layout/{}.html", slug(&r.layout)),
            format!("register id {} = {}", hex(r.id), r.id),
        );
    }
    for m in &ir.state_machines {
        let page = format!("machine/{}.html", slug(&m.name));
        row(m.name.clone(), "state machine", page.clone(), String::new());
        for t in &m.transitions {
            row(
                format!("{}.{}", m.name, t.name),
                "transition",
                format!("{page}#{}", field_anchor(&t.name)),
                t.command.clone(),
            );
        }
    }
    for c in &ir.constants {
        row(
            c.name.clone(),
            "constant",
            format!("index.html#c-{}", slug(&c.name)),
            format!("{} = {}", hex(c.value), c.value),
        );
    }
    let text = serde_json::Value::Array(rows).to_string();
    format!("window.PRM_INDEX = {text};\n")
}
