//! Command pages: opcode, op_mods, the input and output mailbox layouts, and how the result
//! is reported (the output's status and syndrome).

use super::{doc_html, esc, field_anchor, hex, shell, Site};
use crate::ir::Command;
use std::fmt::Write as _;

/// A mailbox line: the layout linked, with its size.
fn mailbox(site: &Site, name: &str) -> String {
    match site.ir.find_struct(name) {
        Some(s) => format!("{} ({} bytes)", site.type_link(name), hex(s.size)),
        None => format!("{} (not a layout of this spec)", esc(name)),
    }
}

/// The page of a command.
pub fn page(site: &Site, c: &Command) -> String {
    let module = site
        .files
        .get(c.span.file)
        .map_or(String::new(), |f| esc(&f.display));
    let mut body = format!(
        r#"<h1><span class="kind">command</span> {}</h1><p class="meta">opcode <code>{}</code> ({}) · {module} · defined at {}</p>"#,
        esc(&c.name),
        hex(c.opcode),
        c.opcode,
        site.src_link(c.span)
    );
    body.push_str(&doc_html(c.doc.as_deref()));
    let _ = write!(
        body,
        "<dl class=\"cmd\"><dt>input</dt><dd>{}</dd><dt>output</dt><dd>{}</dd></dl>",
        mailbox(site, &c.input),
        mailbox(site, &c.output)
    );
    body.push_str("<h2>op_mod</h2>");
    if c.op_mods.is_empty() {
        body.push_str("<p>None named: the command is issued with op_mod 0.</p>");
    } else {
        body.push_str(
            r#"<table class="fields"><thead><tr><th>value</th><th>name</th><th>defined at</th></tr></thead><tbody>"#,
        );
        for m in &c.op_mods {
            let _ = write!(
                body,
                r#"<tr id="{}"><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                field_anchor(&m.name),
                hex(m.value),
                esc(&m.name),
                site.src_link(m.span)
            );
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("<h2>Result</h2>");
    let out = site.ir.find_struct(&c.output);
    let has = |n: &str| out.is_some_and(|s| s.fields.iter().any(|f| f.name == n));
    let out_href = site.type_href(&c.output).unwrap_or_default();
    let mut notes = Vec::new();
    if has("status") {
        let status = if site.ir.find_enum("cmd_status").is_some() {
            format!(" (values: {})", site.type_link("cmd_status"))
        } else {
            String::new()
        };
        notes.push(format!(
            r#"<li><a href="{}#{}">status</a>: zero on success{status}.</li>"#,
            esc(&out_href),
            field_anchor("status")
        ));
    }
    if has("syndrome") {
        notes.push(format!(
            r#"<li><a href="{}#{}">syndrome</a>: on failure, a firmware code that tells which check failed.</li>"#,
            esc(&out_href),
            field_anchor("syndrome")
        ));
    }
    if notes.is_empty() {
        body.push_str("<p>The output layout has no status or syndrome field.</p>");
    } else {
        let _ = write!(body, "<ul>{}</ul>", notes.concat());
    }
    if let Some(list) = site.command_users.get(&c.name) {
        body.push_str(r#"<h2>State transitions</h2><ul class="users">"#);
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
    shell("../", &c.name, &body)
}
