//! A command described by value rather than by type: what the generated `cmd::ALL` table
//! holds for each command of the spec, so tools that see raw mailboxes (a tracer, a decoder)
//! can name a command from its opcode and find its layouts' tables. Always compiled: the
//! table is one small entry per command.

/// One command of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    /// The spec's name (`enable_hca`).
    pub name: &'static str,
    /// Opcode.
    pub opcode: u16,
    /// Name of the input mailbox layout.
    pub input: &'static str,
    /// Name of the output mailbox layout.
    pub output: &'static str,
    /// The op_mod values the spec names, in spec order (empty when it names none).
    pub op_mods: &'static [OpModInfo],
}

/// A named op_mod value of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpModInfo {
    /// The value's name.
    pub name: &'static str,
    /// The value written to the input's `op_mod`.
    pub value: u16,
}

impl CommandInfo {
    /// The name the spec gives op_mod `raw` of this command, if any.
    pub fn op_mod_name(&self, raw: u16) -> Option<&'static str> {
        self.op_mods.iter().find(|m| m.value == raw).map(|m| m.name)
    }
}
