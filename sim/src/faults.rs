//! Fault injection: make chosen commands fail or hang, flood the driver with page requests,
//! or fail send WQEs on the data path, to exercise the error paths of a driver that a healthy
//! device never takes.

use crate::config::Faults;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
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
    /// Send WQEs still to fail (see [`FaultInjector::bad_lkey_sends`]). Outside the mutex: the
    /// data path looks at it for every SEND, and a load is all it costs while it is 0.
    bad_lkey_sends: AtomicU32,
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
        f.bad_lkey_sends(initial.bad_lkey_sends);
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

    /// The next `n` SEND and LSO WQEs the device executes, on any SQ, fail as if the lkey of
    /// their first data segment were unknown: the WQE completes with a `local_prot_err` error
    /// CQE (syndrome 0x4, the CQE a real bad key gets), nothing is sent, the SQ moves to ERR
    /// and the WQEs after it complete with flush errors, until the driver resets the SQ
    /// (MODIFY_SQ ERR → RST → RDY). This is the fault Linux's `mlx5e` recovers from with its
    /// TX reporter. A WQE without data segments (all inline) fails the same way. Replaces any
    /// count still pending; 0 cancels. NOPs and the WQEs of QPs are not affected.
    pub fn bad_lkey_sends(&self, n: u32) {
        self.bad_lkey_sends.store(n, Ordering::Relaxed);
    }

    /// How many of the sends [`bad_lkey_sends`](Self::bad_lkey_sends) asked to fail have not
    /// been executed yet.
    pub fn bad_lkey_sends_pending(&self) -> u32 {
        self.bad_lkey_sends.load(Ordering::Relaxed)
    }

    /// Removes every fault.
    pub fn clear(&self) {
        *self.lock() = State::default();
        self.bad_lkey_sends.store(0, Ordering::Relaxed);
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

    /// Whether the send WQE being executed is to fail with a bad key (one of those
    /// [`bad_lkey_sends`](Self::bad_lkey_sends) asked for, which it uses up).
    #[inline]
    pub(crate) fn take_bad_lkey_send(&self) -> bool {
        self.bad_lkey_sends.load(Ordering::Relaxed) != 0
            && self
                .bad_lkey_sends
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
    }
}
