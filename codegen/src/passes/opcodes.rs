//! Each opcode belongs to one command.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use std::collections::HashMap;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    let mut seen: HashMap<u64, &crate::ir::Command> = HashMap::new();
    for c in &ir.commands {
        if let Some(first) = seen.insert(c.opcode, c) {
            diags.push(
                Diagnostic::error(
                    "duplicate-opcode",
                    c.opcode_span,
                    format!(
                        "opcode 0x{:x} of `{}` is already used by `{}`",
                        c.opcode, c.name, first.name
                    ),
                )
                .with_path(format!("commands.{}.opcode", c.name))
                .with_note(first.opcode_span, format!("`{}` uses it here", first.name)),
            );
            // Keep the first owner for later reports.
            seen.insert(c.opcode, first);
        }
    }
}
