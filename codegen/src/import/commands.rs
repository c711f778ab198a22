//! Commands of an imported header: the header names each opcode `MLX5_CMD_OP_<NAME>` and its
//! mailboxes `mlx5_ifc_<name>_in_bits` / `..._out_bits`; where both layouts were imported and
//! carry the PRM's mailbox headers (opcode and op_mod in, status and syndrome out), the pair
//! becomes a command of the spec, so the crate generated from the whole header has typed
//! commands rather than opcodes set by hand.

use super::enums::HeaderEnum;
use crate::ir::Ir;

/// The prefix of the header's opcode constants.
const OPCODE_PREFIX: &str = "MLX5_CMD_OP_";

/// `(command, opcode)` for each opcode constant whose `_in` and `_out` layouts `ir` holds as
/// valid mailboxes, in the header's order; an opcode named twice is taken once (the first).
pub fn pairs(enums: &[HeaderEnum], ir: &Ir) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (name, value) in enums.iter().flat_map(|e| e.constants.iter()) {
        let Some(rest) = name.strip_prefix(OPCODE_PREFIX) else {
            continue;
        };
        let cmd = rest.to_ascii_lowercase();
        if *value > 0xffff || out.iter().any(|(c, v)| *c == cmd || *v == *value) {
            continue;
        }
        let is = |layout: &str, fields: [(&str, u64, u64); 2]| {
            ir.find_struct(layout).is_some_and(|s| {
                fields.iter().all(|&(f, at, w)| {
                    s.fields.iter().any(|x| {
                        x.name == f && x.bit_offset == at && x.width == w && x.count.is_none()
                    })
                })
            })
        };
        let input = is(
            &format!("{cmd}_in"),
            [("opcode", 0, 16), ("op_mod", 0x30, 16)],
        );
        let output = is(
            &format!("{cmd}_out"),
            [("status", 0, 8), ("syndrome", 0x20, 32)],
        );
        // A layout named like the command itself would clash with it in the generated crate.
        if input && output && ir.find_struct(&cmd).is_none() && ir.find_union(&cmd).is_none() {
            out.push((cmd, *value));
        }
    }
    out
}

/// The `commands:` section for `pairs`, to append to the header's spec file.
pub fn section(pairs: &[(String, u64)]) -> String {
    let mut s = String::from("\ncommands:\n");
    for (cmd, opcode) in pairs {
        s.push_str(&format!(
            "  {cmd}: {{ opcode: 0x{opcode:x}, in: {cmd}_in, out: {cmd}_out }}\n"
        ));
    }
    s
}
