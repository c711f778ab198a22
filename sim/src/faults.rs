//! Fault injection: make chosen commands fail or hang, or flood the driver with page requests,
//! to exercise the error paths of a driver that a healthy device never takes.

use crate::config::Faults;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
struct State {
    fail: BTreeMap<u16, (u8, u32)>,
    never: BTreeSet<u16>,
    storm: Option<(u32, i32)>,
}

/// The device's fault settings, changeable at run time from any thread.
#[derive(Debug, Default)]
pub struct FaultInjector {
    state: Mutex<State>,
}

impl FaultInjector {
    pub(crate) fn new(initial: &Faults) -> FaultInjector {
        let f = FaultInjector::default();
        for &(opcode, status, syndrome) in &initial.fail_commands {
            f.fail_command(opcode, status, syndrome);
        }
        for &opcode in &initial.never_complete {
            f.never_complete(opcode);
        }
        if let Some((events, pages)) = initial.page_request_storm {
            f.page_request_storm(events, pages);
        }
        f
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every later execution of `opcode` fails with `status` and `syndrome`, without running,
    /// until [`clear`](Self::clear). The command is delivered normally (delivery status OK).
    pub fn fail_command(&self, opcode: u16, status: u8, syndrome: u32) {
        self.lock().fail.insert(opcode, (status, syndrome));
    }

    /// Entries carrying `opcode` are never handed back: ownership stays with the device and
    /// the command does not run, as with hung firmware.
    pub fn never_complete(&self, opcode: u16) {
        self.lock().never.insert(opcode);
    }

    /// After the next completed command, raise `events` page-request events asking for
    /// `pages_each` pages each (negative: offering that many back).
    pub fn page_request_storm(&self, events: u32, pages_each: i32) {
        self.lock().storm = Some((events, pages_each));
    }

    /// Removes every fault.
    pub fn clear(&self) {
        *self.lock() = State::default();
    }

    pub(crate) fn failure(&self, opcode: u16) -> Option<(u8, u32)> {
        self.lock().fail.get(&opcode).copied()
    }

    pub(crate) fn hangs(&self, opcode: u16) -> bool {
        self.lock().never.contains(&opcode)
    }

    pub(crate) fn take_storm(&self) -> Option<(u32, i32)> {
        self.lock().storm.take()
    }
}
