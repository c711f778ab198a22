//! Output of `prmc decode`: an indented text tree for people, JSON for tools.
//!
//! Text: one line per node, the path indented by its depth, then the position in PRM notation,
//! the kernel's bit offset and width, the raw bits and the decoded value; notes (unknown enum
//! values, set reserved bits, how a union member was chosen) follow with `!` or `;`.

use super::tree::Node;
use serde::Serialize;

/// The JSON document: the layout's name, the input's length and the tree.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// The layout decoded.
    pub layout: &'a str,
    /// Input length in bytes.
    pub bytes: usize,
    /// The root node (its children are the top fields).
    pub root: &'a Node,
}

/// The tree as pretty JSON.
pub fn json(layout: &str, bytes: usize, root: &Node) -> String {
    let doc = Document {
        layout,
        bytes,
        root,
    };
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

struct Row {
    name: String,
    position: String,
    bit: String,
    raw: String,
    value: String,
}

fn value_text(n: &Node) -> String {
    let mut s = match (&n.value, n.kind) {
        (Some(serde_json::Value::Number(v)), "enum") => format!("{v} unknown"),
        (Some(serde_json::Value::String(v)), "enum") => v.clone(),
        (Some(serde_json::Value::Number(v)), _) => v.to_string(),
        (Some(serde_json::Value::Bool(b)), _) => b.to_string(),
        (Some(serde_json::Value::String(_)), _) => String::new(),
        (_, "struct" | "member" | "union" | "array") => n.ty.clone(),
        _ => String::new(),
    };
    if let Some(note) = &n.note {
        let mark = if n.kind == "reserved" || n.kind == "enum" {
            "!"
        } else {
            ";"
        };
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&format!("{mark} {note}"));
    }
    s
}

fn rows(n: &Node, depth: usize, out: &mut Vec<Row>) {
    out.push(Row {
        name: format!("{}{}", "  ".repeat(depth), n.path),
        position: n.position.clone(),
        bit: format!("0x{:x}+{}", n.bit_offset, n.width),
        raw: n.raw.clone().unwrap_or_default(),
        value: value_text(n),
    });
    for c in &n.children {
        rows(c, depth + 1, out);
    }
}

/// The tree as aligned text.
pub fn text(layout: &str, bytes: usize, root: &Node) -> String {
    let mut out = format!(
        "{layout}: 0x{bytes:x} bytes{}\n",
        root.note
            .as_ref()
            .map(|n| format!("; {n}"))
            .unwrap_or_default()
    );
    let mut all = Vec::new();
    for c in &root.children {
        rows(c, 0, &mut all);
    }
    let header = Row {
        name: "field".into(),
        position: "position".into(),
        bit: "bit+width".into(),
        raw: "raw".into(),
        value: "value".into(),
    };
    let w = |f: &dyn Fn(&Row) -> usize| all.iter().chain([&header]).map(f).max().unwrap_or(0);
    let wn = w(&|r| r.name.chars().count());
    let wp = w(&|r| r.position.chars().count());
    let wb = w(&|r| r.bit.chars().count());
    let wr = w(&|r| r.raw.chars().count().min(18));
    for r in std::iter::once(&header).chain(&all) {
        let line = format!(
            "{:<wn$}  {:<wp$}  {:<wb$}  {:<wr$}  {}",
            r.name, r.position, r.bit, r.raw, r.value
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
