//! The log of executed commands, for tests that assert what a driver sent and what the
//! device answered.

/// One executed command: what the driver asked and what the device answered.
///
/// Only commands that ran are recorded; an entry rejected at delivery (bad token, bad block
/// number, bad pointers, a descriptor error) never ran and is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommandRecord {
    /// The command's opcode.
    pub opcode: u16,
    /// Its op_mod.
    pub op_mod: u16,
    /// The status written to the output (0 = OK).
    pub status: u8,
    /// The syndrome written to the output (0 on success).
    pub syndrome: u32,
}
