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

/// How many records [`Device::commands`](crate::Device::commands) keeps: the most recent ones
/// (a guest can run commands forever; the log must not grow with it). 65536 records are
/// 1 MiB, far more than a driver's bring-up and teardown issue.
pub const COMMAND_LOG: usize = 1 << 16;

/// The most recent [`COMMAND_LOG`] records, and how many there were in all.
#[derive(Debug, Clone, Default)]
pub(crate) struct CommandLog {
    ring: std::collections::VecDeque<CommandRecord>,
    total: u64,
}

impl CommandLog {
    /// Records one command, forgetting the oldest record when the log is full.
    pub fn push(&mut self, r: CommandRecord) {
        if self.ring.len() == COMMAND_LOG {
            self.ring.pop_front();
        }
        self.ring.push_back(r);
        self.total += 1;
    }

    /// The records kept, oldest first.
    pub fn to_vec(&self) -> Vec<CommandRecord> {
        self.ring.iter().copied().collect()
    }

    /// Commands recorded in all, including those forgotten.
    pub fn total(&self) -> u64 {
        self.total
    }
}
