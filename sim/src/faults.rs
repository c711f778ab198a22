//! Fault injection: make chosen commands fail or hang, flood the driver with page requests,
//! fail send WQEs on the data path, overrun CQs, or lose frames at the port, to exercise the
//! error and recovery paths of a driver (and of a RoCE peer) that a healthy device never
//! takes.

use crate::config::Faults;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
struct State {
    fail: BTreeMap<u16, (u8, u32)>,
    never: BTreeSet<u16>,
    storm: Option<(u32, i32)>,
    /// CQs whose next CQE finds them full.
    overrun: BTreeSet<u32>,
}

/// The device's fault settings, changeable at run time from any thread.
#[derive(Debug, Default)]
pub struct FaultInjector {
    state: Mutex<State>,
    /// Send WQEs still to fail (see [`FaultInjector::bad_lkey_sends`]). Outside the mutex: the
    /// data path looks at it for every SEND, and a load is all it costs while it is 0.
    bad_lkey_sends: AtomicU32,
    /// How many CQs `State::overrun` lists (see [`FaultInjector::overrun_cq`]): the data path
    /// looks at the set only when it is not 0.
    cq_overruns: AtomicU32,
    /// The port loses one frame in this many, each way (0: none; see
    /// [`FaultInjector::port_loss`]).
    loss_one_in: AtomicU32,
    /// The loss decisions' random state (xorshift64), so a run is repeatable.
    loss_state: AtomicU64,
    /// Frames lost leaving the port, and arriving at it.
    lost_sent: AtomicU64,
    lost_arriving: AtomicU64,
}

/// The loss decisions' first state, unless [`FaultInjector::port_loss_seeded`] gives one.
const LOSS_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

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
        f.port_loss(initial.port_loss);
        f
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every later execution of `opcode` fails with `status` and `syndrome`, without running,
    /// until [`stop_failing`](Self::stop_failing) or [`clear`](Self::clear). The command is
    /// delivered normally (delivery status OK).
    pub fn fail_command(&self, opcode: u16, status: u8, syndrome: u32) {
        self.lock().fail.insert(opcode, (status, syndrome));
    }

    /// `opcode` runs normally again; every other fault stays.
    pub fn stop_failing(&self, opcode: u16) {
        self.lock().fail.remove(&opcode);
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

    /// The next CQE the device writes to CQ `cqn`, for a WQE it executes or a frame it
    /// receives (not the flush errors of a queue a command moved to error), finds the CQ full,
    /// as when a driver leaves its consumer index behind: the CQ goes to error (QUERY_CQ's
    /// status shows the overflow), a CQ_ERROR event with syndrome CQ_OVERRUN goes to the EQs
    /// that take CQ errors, and no more CQEs are written to it. The work whose completion was
    /// lost still happened (a frame was sent, or received into its buffer); a frame received
    /// with no CQE to tell of it is counted as dropped (`rx_dropped`). The queues are usable
    /// again only once recreated. A CQ that ignores overruns (`cqc.oi`) is not affected and
    /// keeps the fault pending.
    pub fn overrun_cq(&self, cqn: u32) {
        let mut st = self.lock();
        st.overrun.insert(cqn);
        self.cq_overruns
            .store(st.overrun.len() as u32, Ordering::Relaxed);
    }

    /// How many of the overruns [`overrun_cq`](Self::overrun_cq) asked for are still to come.
    pub fn cq_overruns_pending(&self) -> u32 {
        self.cq_overruns.load(Ordering::Relaxed)
    }

    /// The port becomes lossy: of the frames crossing it, one in `one_in` (chosen at random,
    /// each way on its own) is lost, as on a bad cable or a congested switch. A frame lost
    /// leaving the port never reaches the link (nor the capture); one lost arriving never
    /// reaches the device (nor the capture). Frames looped back inside the device do not
    /// cross the port and are never lost. 0 ends the loss, and so does 1 (losing every
    /// frame is a link that is down: [`Device::detach_link`](crate::Device::detach_link)).
    /// The choice is repeatable: the random state restarts from a fixed seed.
    pub fn port_loss(&self, one_in: u32) {
        self.port_loss_seeded(one_in, LOSS_SEED);
    }

    /// [`port_loss`](Self::port_loss) with the random state started from `seed` (0 is taken
    /// as the fixed seed, which xorshift needs non-zero).
    pub fn port_loss_seeded(&self, one_in: u32, seed: u64) {
        let seed = if seed == 0 { LOSS_SEED } else { seed };
        self.loss_state.store(seed, Ordering::Relaxed);
        let one_in = if one_in >= 2 { one_in } else { 0 };
        self.loss_one_in.store(one_in, Ordering::Relaxed);
    }

    /// Frames the port lost so far: `(leaving, arriving)`.
    pub fn frames_lost(&self) -> (u64, u64) {
        (
            self.lost_sent.load(Ordering::Relaxed),
            self.lost_arriving.load(Ordering::Relaxed),
        )
    }

    /// Whether the frame now leaving the port is lost (counted if so).
    #[inline]
    pub(crate) fn lose_sent(&self) -> bool {
        self.lose(&self.lost_sent)
    }

    /// Whether the frame now arriving at the port is lost (counted if so).
    #[inline]
    pub(crate) fn lose_arriving(&self) -> bool {
        self.lose(&self.lost_arriving)
    }

    fn lose(&self, count: &AtomicU64) -> bool {
        let one_in = self.loss_one_in.load(Ordering::Relaxed);
        if one_in == 0 {
            return false;
        }
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let prev = self
            .loss_state
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
            .unwrap_or(LOSS_SEED);
        let lost = step(prev) % u64::from(one_in) == 0;
        if lost {
            count.fetch_add(1, Ordering::Relaxed);
        }
        lost
    }

    /// Removes every fault (the lost-frame counts stay).
    pub fn clear(&self) {
        *self.lock() = State::default();
        self.bad_lkey_sends.store(0, Ordering::Relaxed);
        self.cq_overruns.store(0, Ordering::Relaxed);
        self.loss_one_in.store(0, Ordering::Relaxed);
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

    /// Whether the CQE being written to CQ `cqn` is to find it full (an overrun
    /// [`overrun_cq`](Self::overrun_cq) asked for, which it uses up).
    #[inline]
    pub(crate) fn take_cq_overrun(&self, cqn: u32) -> bool {
        if self.cq_overruns.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let mut st = self.lock();
        let hit = st.overrun.remove(&cqn);
        self.cq_overruns
            .store(st.overrun.len() as u32, Ordering::Relaxed);
        hit
    }
}
