//! Command layouts carry the PRM's common mailbox headers: every input starts with the 16-bit
//! `opcode` at bit 0 and has the 16-bit `op_mod` at byte 4 bits 15..0; every output starts
//! with the 8-bit `status` and has the 32-bit `syndrome` at byte 4. The device reads and
//! writes these fields for every command, so a layout without them cannot be a command.
//! Opcodes and named op_mod values must fit their 16-bit fields.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{FieldType, Ir, Struct};

/// Finds a field by name at an absolute offset and width, looking into nested structures.
fn has_field(
    ir: &Ir,
    s: &Struct,
    base: u64,
    name: &str,
    offset: u64,
    width: u64,
    depth: u32,
) -> bool {
    s.fields.iter().any(|f| {
        let at = base + f.bit_offset;
        if f.name == name && at == offset && f.width == width && f.count.is_none() {
            return true;
        }
        match &f.ty {
            FieldType::Struct(t) if depth < 8 && f.count.is_none() && at <= offset => ir
                .find_struct(t)
                .is_some_and(|inner| has_field(ir, inner, at, name, offset, width, depth + 1)),
            _ => false,
        }
    })
}

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for c in &ir.commands {
        let path = format!("commands.{}", c.name);
        let required = [
            (
                &c.input,
                "in",
                [
                    ("opcode", 0u64, 16u64, "0x00[31:16]"),
                    ("op_mod", 0x30, 16, "0x04[15:0]"),
                ],
            ),
            (
                &c.output,
                "out",
                [
                    ("status", 0, 8, "0x00[31:24]"),
                    ("syndrome", 0x20, 32, "0x04[31:0]"),
                ],
            ),
        ];
        for (layout, key, fields) in required {
            let Some(s) = ir.find_struct(layout).filter(|s| !s.incomplete) else {
                continue;
            };
            for (name, offset, width, at) in fields {
                if !has_field(ir, s, 0, name, offset, width, 0) {
                    diags.push(
                        Diagnostic::error(
                            "command-header",
                            s.span,
                            format!("`{}` is the `{key}` layout of command `{}` but has no `{name}` at `{at}`", s.name, c.name),
                        )
                        .with_path(format!("{}.fields", super::struct_path(s)))
                        .with_note(c.span, "used as a command layout here")
                        .with_hint(format!("add `{name}: \"{at}\"`")),
                    );
                }
            }
        }
        if c.opcode > 0xffff {
            diags.push(
                Diagnostic::error(
                    "command-header",
                    c.opcode_span,
                    format!(
                        "opcode 0x{:x} of `{}` does not fit the 16-bit opcode field",
                        c.opcode, c.name
                    ),
                )
                .with_path(format!("{path}.opcode")),
            );
        }
        for m in c.op_mods.iter().filter(|m| m.value > 0xffff) {
            diags.push(
                Diagnostic::error(
                    "command-header",
                    m.span,
                    format!("op_mod `{}` = 0x{:x} does not fit 16 bits", m.name, m.value),
                )
                .with_path(format!("{path}.op_mod.{}", m.name)),
            );
        }
    }
}
