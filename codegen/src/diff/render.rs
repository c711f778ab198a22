//! The report as text for people and as JSON for tools (the `Report` serialized as is; its
//! keys are documented in docs/spec-format.md, "Spec diff").
//!
//! Text groups changes by item; one line per change with both classifications, the item's
//! embeddings on its heading, and documentation changes folded into one line per item so they
//! do not drown the changes that matter.

use super::{Change, ChangeKind, Report};
use std::fmt::Write;

/// How many member names a folded documentation line lists before `...`.
const DOC_NAMES: usize = 6;

/// The report as pretty JSON with a final newline.
pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("the report serializes") + "\n"
}

fn kind_name(k: ChangeKind) -> &'static str {
    match k {
        ChangeKind::Added => "added",
        ChangeKind::Removed => "removed",
        ChangeKind::Moved => "moved",
        ChangeKind::Resized => "resized",
        ChangeKind::Retyped => "retyped",
        ChangeKind::Renamed => "renamed",
        ChangeKind::SizeChanged => "size changed",
        ChangeKind::ValueChanged => "value changed",
        ChangeKind::OpcodeChanged => "opcode changed",
        ChangeKind::InputChanged => "input changed",
        ChangeKind::OutputChanged => "output changed",
        ChangeKind::SelectorChanged => "selector changed",
        ChangeKind::IdChanged => "id changed",
        ChangeKind::LayoutChanged => "image changed",
        ChangeKind::AccessChanged => "access changed",
        ChangeKind::IndexChanged => "index changed",
        ChangeKind::DocChanged => "doc changed",
    }
}

fn impact(c: &Change) -> String {
    let w = serde_json::to_value(c.wire).expect("serializes");
    let r = serde_json::to_value(c.rust).expect("serializes");
    format!(
        "wire {}, rust {}",
        w.as_str().unwrap_or("?"),
        r.as_str().unwrap_or("?")
    )
}

/// The report as text.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let t = &r.totals;
    let _ = writeln!(
        out,
        "prmc diff {} -> {}: verdict {} ({} changes: {} major, {} minor, {} patch)",
        r.old,
        r.new,
        r.verdict.name(),
        t.changes,
        t.major,
        t.minor,
        t.patch
    );
    let mut i = 0;
    while i < r.changes.len() {
        let first = &r.changes[i];
        let mut j = i;
        while j < r.changes.len()
            && r.changes[j].item_kind == first.item_kind
            && r.changes[j].item == first.item
        {
            j += 1;
        }
        item(&mut out, r, &r.changes[i..j]);
        i = j;
    }
    out
}

fn item(out: &mut String, r: &Report, group: &[Change]) {
    let first = &group[0];
    let _ = write!(out, "\n{} {}", first.item_kind.name(), first.item);
    if let Some(e) = r.embeddings.iter().find(|e| e.layout == first.item) {
        let _ = write!(out, " (embedded in {})", e.embedded_in.join(", "));
    }
    out.push('\n');
    let mut docs = Vec::new();
    for c in group {
        if c.kind == ChangeKind::DocChanged {
            docs.push(c.member.as_deref().unwrap_or("(the item)"));
            continue;
        }
        let what = match &c.member {
            Some(m) => format!("{m}: "),
            None => String::new(),
        };
        let from_to = match (&c.old, &c.new) {
            (Some(o), Some(n)) => format!("{o} -> {n}"),
            (Some(o), None) => format!("was {o}"),
            (None, Some(n)) => n.clone(),
            (None, None) => String::new(),
        };
        let line = format!("{what}{from_to}");
        let line = line.trim_end_matches(": ");
        let sep = if line.is_empty() { "" } else { " " };
        let _ = writeln!(
            out,
            "  {:<5} {:<16} {line}{sep}[{}]",
            c.level.name(),
            kind_name(c.kind),
            impact(c)
        );
        if let Some(n) = &c.note {
            let _ = writeln!(out, "        note: {n}");
        }
    }
    if !docs.is_empty() {
        let shown: Vec<&str> = docs.iter().take(DOC_NAMES).copied().collect();
        let more = if docs.len() > DOC_NAMES { ", ..." } else { "" };
        let _ = writeln!(
            out,
            "  patch doc changed      {} documentation change(s): {}{more}",
            docs.len(),
            shown.join(", ")
        );
    }
}
