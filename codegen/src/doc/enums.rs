//! Enum pages: the values with their docs, and the fields whose type the enum is.

use super::{doc_html, esc, field_anchor, hex, shell, Site};
use crate::ir::Enum;
use std::fmt::Write as _;

/// The page of an enum.
pub fn page(site: &Site, e: &Enum) -> String {
    let width = e.width.map_or(String::new(), |w| format!("{w} bits · "));
    let module = site
        .files
        .get(e.span.file)
        .map_or(String::new(), |f| esc(&f.display));
    let mut body = format!(
        r#"<h1><span class="kind">enum</span> {}</h1><p class="meta">{width}{module} · defined at {}</p>"#,
        esc(&e.name),
        site.src_link(e.span)
    );
    body.push_str(&doc_html(e.doc.as_deref()));
    body.push_str(
        r#"<h2>Values</h2><table class="fields"><thead><tr><th>value</th><th>decimal</th><th>name</th><th>doc</th></tr></thead><tbody>"#,
    );
    for v in &e.values {
        let _ = writeln!(
            body,
            r#"<tr id="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}<span class="at">{}</span></td></tr>"#,
            field_anchor(&v.name),
            hex(v.value),
            v.value,
            esc(&v.name),
            doc_html(v.doc.as_deref()),
            site.src_link(v.span)
        );
    }
    body.push_str("</tbody></table>\n<h2>Fields of this type</h2>");
    match site.enum_users.get(&e.name) {
        None => body.push_str("<p>No field has this type.</p>"),
        Some(list) => {
            body.push_str(r#"<ul class="users">"#);
            for (href, text) in list {
                let _ = write!(
                    body,
                    r#"<li><a href="{}">{}</a></li>"#,
                    esc(href),
                    esc(text)
                );
            }
            body.push_str("</ul>");
        }
    }
    shell("../", &e.name, &body)
}
