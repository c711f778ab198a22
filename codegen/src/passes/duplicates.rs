//! A name is defined once: types (structures, register blocks, unions, enums) share one
//! namespace across all files, as do commands, access registers and constants.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use crate::source::Span;
use std::collections::HashMap;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    let types = ir
        .structs
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.span,
                if s.register_block {
                    "register block"
                } else {
                    "struct"
                },
            )
        })
        .chain(ir.unions.iter().map(|u| (u.name.as_str(), u.span, "union")))
        .chain(ir.enums.iter().map(|e| (e.name.as_str(), e.span, "enum")));
    report(types, "type", diags);
    report(
        ir.commands
            .iter()
            .map(|c| (c.name.as_str(), c.span, "command")),
        "command",
        diags,
    );
    report(
        ir.access_registers
            .iter()
            .map(|r| (r.name.as_str(), r.span, "access register")),
        "access register",
        diags,
    );
    report(
        ir.constants
            .iter()
            .map(|c| (c.name.as_str(), c.span, "constant")),
        "constant",
        diags,
    );
    report(
        ir.state_machines
            .iter()
            .map(|m| (m.name.as_str(), m.span, "state machine")),
        "state machine",
        diags,
    );
}

fn report<'a>(
    items: impl Iterator<Item = (&'a str, Span, &'static str)>,
    namespace: &str,
    diags: &mut Diagnostics,
) {
    // The definition written first (by file, line, column) is the original.
    let mut items: Vec<_> = items.collect();
    items.sort_by_key(|&(_, span, _)| span);
    let mut seen: HashMap<&str, (Span, &str)> = HashMap::new();
    for (name, span, kind) in items {
        match seen.get(name) {
            Some(&(first, first_kind)) => diags.push(
                Diagnostic::error(
                    "duplicate-name",
                    span,
                    format!(
                        "{kind} `{name}` reuses a {namespace} name already defined as {} {first_kind}",
                        if first_kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
                    ),
                )
                .with_path(format!("{}.{name}", section(kind)))
                .with_note(first, "first defined here")
                .with_hint("names are global across all spec files; rename one of them"),
            ),
            None => {
                seen.insert(name, (span, kind));
            }
        }
    }
}

/// The top-level key a kind of item is declared under.
fn section(kind: &str) -> &'static str {
    match kind {
        "struct" => "structs",
        "register block" => "registers",
        "union" => "unions",
        "enum" => "enums",
        "command" => "commands",
        "access register" => "access_registers",
        "state machine" => "state_machines",
        _ => "constants",
    }
}
