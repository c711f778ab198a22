//! What the device lets its host see of the command interface: a hook that gets every
//! command as it completes (opcode, op_mod, statuses, the whole input and output), and the
//! ledger of requests the model does not implement (opcodes, capability types, registers),
//! so a server can trace a driver command by command and list what it still lacks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One command as the device served it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandTrace {
    /// The command queue slot it was posted in.
    pub slot: u32,
    /// The command's opcode (from the inline input).
    pub opcode: u16,
    /// Its op_mod.
    pub op_mod: u16,
    /// The delivery status written into the entry (0: delivered; otherwise the command did
    /// not run and `status`, `syndrome` and `output` are empty).
    pub delivery: u8,
    /// The command status of the output (0 = OK).
    pub status: u8,
    /// The syndrome of the output (0 on success; see [`crate::syndrome`]).
    pub syndrome: u32,
    /// The whole input as delivered: the 16 inline bytes and the mailbox data, input_length
    /// bytes (only the inline bytes when the delivery failed).
    pub input: Vec<u8>,
    /// The output as the device wrote it: the 16 inline bytes and the mailbox data, up to the
    /// entry's output_length.
    pub output: Vec<u8>,
}

/// A function that sees every [`CommandTrace`]. It runs on the thread that served the
/// command (the doorbell writer's, or the firmware thread in threaded mode), after the
/// device has released its state, so it may call back into the device.
pub type CommandObserver = Arc<dyn Fn(&CommandTrace) + Send + Sync>;

/// Where the device keeps its observer.
#[derive(Default)]
pub(crate) struct Observer(Mutex<Option<CommandObserver>>);

impl Observer {
    /// Installs (or, with `None`, removes) the observer.
    pub fn set(&self, observer: Option<CommandObserver>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = observer;
    }

    /// The observer, if one is installed (cheap: an `Arc` clone under a short lock).
    pub fn get(&self) -> Option<CommandObserver> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A request the model does not implement, and how often it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnimplementedCommand {
    /// The opcode.
    pub opcode: u16,
    /// The op_mod (for QUERY_HCA_CAP and SET_HCA_CAP it names the capability type).
    pub op_mod: u16,
    /// For ACCESS_REGISTER, the register id asked for.
    pub register_id: Option<u16>,
    /// The status the model answered with (BAD_OP for an unknown opcode, BAD_PARAM for an
    /// unknown capability type or register).
    pub status: u8,
    /// The syndrome it answered with.
    pub syndrome: u32,
    /// How many times.
    pub count: u64,
}

/// Every unimplemented request seen, most distinct ones first listed up to a bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnimplementedCommands {
    /// Distinct requests, ordered by opcode, op_mod and register.
    pub commands: Vec<UnimplementedCommand>,
    /// Requests not listed because [`MAX_UNIMPLEMENTED`] distinct ones were already kept.
    pub not_listed: u64,
}

/// Distinct unimplemented requests the ledger keeps (a guest can make up any number).
pub const MAX_UNIMPLEMENTED: usize = 256;

/// A request as the ledger files it: opcode, op_mod, register id.
type Key = (u16, u16, Option<u16>);
/// What the ledger keeps of it: status and syndrome answered, count.
type Seen = (u8, u32, u64);

/// The ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Unimplemented {
    seen: BTreeMap<Key, Seen>,
    not_listed: u64,
}

impl Unimplemented {
    /// Counts one request.
    pub fn record(&mut self, opcode: u16, op_mod: u16, register: Option<u16>, answer: (u8, u32)) {
        let key = (opcode, op_mod, register);
        if let Some(e) = self.seen.get_mut(&key) {
            e.2 += 1;
        } else if self.seen.len() < MAX_UNIMPLEMENTED {
            self.seen.insert(key, (answer.0, answer.1, 1));
        } else {
            self.not_listed += 1;
        }
    }

    /// The report.
    pub fn report(&self) -> UnimplementedCommands {
        UnimplementedCommands {
            commands: self
                .seen
                .iter()
                .map(
                    |(&(opcode, op_mod, register_id), &(status, syndrome, count))| {
                        UnimplementedCommand {
                            opcode,
                            op_mod,
                            register_id,
                            status,
                            syndrome,
                            count,
                        }
                    },
                )
                .collect(),
            not_listed: self.not_listed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_is_bounded() {
        let mut u = Unimplemented::default();
        u.record(0x123, 0, None, (2, 1));
        u.record(0x123, 0, None, (2, 1));
        for i in 0..1000u16 {
            u.record(0x200, i, None, (2, 1));
        }
        let r = u.report();
        assert_eq!(r.commands.len(), MAX_UNIMPLEMENTED);
        assert_eq!(r.commands[0].count, 2);
        assert_eq!(r.not_listed, 1000 - (MAX_UNIMPLEMENTED as u64 - 1));
    }
}
