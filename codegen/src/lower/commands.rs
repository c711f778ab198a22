//! Lowering a command: its input and output layouts looked up by name.

use super::unknown;
use crate::diag::Diagnostics;
use crate::ir::*;
use crate::syntax;

pub(super) fn lower_command(
    ir: &Ir,
    module: usize,
    c: &syntax::CommandDecl,
    diags: &mut Diagnostics,
) -> Option<Command> {
    let path = format!("commands.{}", c.name.value);
    let struct_names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
    let mut ok = true;
    for (key, layout) in [("in", &c.input), ("out", &c.output)] {
        if let Some(l) = layout {
            if ir.find_struct(&l.value).is_none() {
                diags.push(unknown(
                    "structure",
                    l,
                    &struct_names,
                    &format!("{path}.{key}"),
                ));
                ok = false;
            }
        }
    }
    let (Some(opcode), Some(input), Some(output), true) = (&c.opcode, &c.input, &c.output, ok)
    else {
        return None;
    };
    Some(Command {
        name: c.name.value.clone(),
        module,
        doc: c.doc.clone(),
        opcode: opcode.value,
        input: input.value.clone(),
        output: output.value.clone(),
        op_mods: c
            .op_mods
            .iter()
            .map(|(n, v)| OpMod {
                name: n.value.clone(),
                value: v.value,
                span: n.span,
            })
            .collect(),
        span: c.name.span,
        opcode_span: opcode.span,
    })
}
