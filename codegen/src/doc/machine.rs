//! State machine pages: the graph of states and transitions (`machine_graph`), a states ×
//! states table whose cells are the transitions (with the commands that make them), then each
//! transition with what it requires and may change.

use super::{doc_html, esc, field_anchor, hex, shell, Site};
use crate::ir::StateMachine;
use std::fmt::Write as _;

/// The page of a state machine.
pub fn page(site: &Site, m: &StateMachine) -> String {
    let module = site
        .files
        .get(m.span.file)
        .map_or(String::new(), |f| esc(&f.display));
    let mut body = format!(
        r#"<h1><span class="kind">state machine</span> {}</h1><p class="meta">states: {} · {module} · defined at {}</p>"#,
        esc(&m.name),
        site.type_link(&m.states),
        site.src_link(m.span)
    );
    body.push_str(&doc_html(m.doc.as_deref()));
    if let Some((s, f)) = &m.state_field {
        let _ = write!(
            body,
            "<p>The device reports the state in {}<code>.{}</code>.</p>",
            site.type_link(s),
            esc(&f.path)
        );
    }
    let states: Vec<String> = site
        .ir
        .find_enum(&m.states)
        .map(|e| e.values.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    let cell = |from: Option<&str>, to: &str| -> String {
        let mut out = String::new();
        for t in &m.transitions {
            let matches = match from {
                None => t.from.is_empty(),
                Some(f) => t.from.iter().any(|x| x == f),
            };
            if matches && t.to == to {
                let _ = write!(
                    out,
                    r##"<div><a href="#{}">{}</a><br><small>{}</small></div>"##,
                    field_anchor(&t.name),
                    esc(&t.name),
                    site.command_link(&t.command)
                );
            }
        }
        out
    };
    body.push_str("<h2>Diagram</h2>");
    body.push_str(&super::machine_graph::render(site, m, &states));
    body.push_str(
        r#"<h2>Transitions</h2><p>Rows are the state an object is in, columns the state a transition moves it to.</p><div class="diagram-wrap"><table class="states"><thead><tr><th>from \ to</th>"#,
    );
    for s in &states {
        let _ = write!(body, "<th>{}</th>", esc(s));
    }
    body.push_str("</tr></thead><tbody>");
    let any = m.transitions.iter().any(|t| t.from.is_empty());
    let rows: Vec<Option<&str>> = states
        .iter()
        .map(|s| Some(s.as_str()))
        .chain(any.then_some(None))
        .collect();
    for from in rows {
        let _ = write!(
            body,
            "<tr><th>{}</th>",
            from.map_or("any state".into(), esc)
        );
        for to in &states {
            let c = cell(from, to);
            let class = if c.is_empty() { "" } else { r#" class="t""# };
            let _ = write!(body, "<td{class}>{c}</td>");
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></div>\n");
    for t in &m.transitions {
        let from = if t.from.is_empty() {
            "any state".to_string()
        } else {
            t.from.iter().map(|s| esc(s)).collect::<Vec<_>>().join(", ")
        };
        let _ = write!(
            body,
            r#"<section id="{}"><h3>{}</h3><p>{from} → {} by {} · {}</p>{}"#,
            field_anchor(&t.name),
            esc(&t.name),
            esc(&t.to),
            site.command_link(&t.command),
            site.src_link(t.span),
            doc_html(t.doc.as_deref())
        );
        if !t.requires.is_empty() {
            body.push_str("<p>Requires: ");
            let list: Vec<String> = t
                .requires
                .iter()
                .map(|r| format!("<code>{}</code>", esc(&r.path)))
                .collect();
            body.push_str(&list.join(", "));
            body.push_str("</p>");
        }
        if !t.optional.is_empty() {
            body.push_str("<p>May change (mask bit): ");
            let list: Vec<String> = t
                .optional
                .iter()
                .map(|(r, bit)| {
                    format!(
                        "<code>{}</code> ({} {})",
                        esc(&r.path),
                        esc(&bit.name),
                        hex(bit.value)
                    )
                })
                .collect();
            body.push_str(&list.join(", "));
            body.push_str("</p>");
        }
        body.push_str("</section>\n");
    }
    shell("../", &m.name, &body)
}
