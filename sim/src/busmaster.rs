//! The PCI command register's Bus Master Enable bit, as the model obeys it.
//!
//! A PCI function whose bus mastering is off may not start memory transactions: no DMA, and
//! no MSI-X messages (which are memory writes). Register accesses still land (they are the
//! host's transactions, not the device's). The model therefore keeps taking BAR writes while
//! the bit is clear but does none of the work behind them: command doorbells, UAR doorbells
//! and BlueFlame copies are *held*, in the order they were written, and served once the bit
//! is set again; frames arriving from the link are dropped (there is nowhere to write them);
//! the device's own timed work (RNR retries, flushes, moderation) waits. A host event that
//! would write an EQE (a page request, a port change) is held like a doorbell. A reset
//! forgets what was held, as it forgets the doorbells a running device had not served yet.
//!
//! In-process devices have no configuration space and start with bus mastering on; a host
//! that owns a configuration space (the vfio-user server) mirrors its command register here
//! with [`Device::set_bus_master`], starting from off as a function does at power-on.
//!
//! What is held is bounded ([`HELD_MAX`] writes, as PCIe bounds posted writes by credits):
//! further writes are dropped and counted ([`Device::refused_by_bus_master`]).

use crate::device::{Core, Device};
use crate::session::lock;
use crate::worker::Job;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Writes held at most while bus mastering is off.
pub const HELD_MAX: usize = 1024;

/// The bit and what waits for it.
pub(crate) struct BusMaster {
    enabled: AtomicBool,
    held: Mutex<VecDeque<Job>>,
    /// Writes dropped because [`HELD_MAX`] were already held.
    refused: AtomicU64,
    /// Frames from the link dropped while the bit was clear.
    frames_dropped: AtomicU64,
}

impl BusMaster {
    /// Bus mastering on (an in-process device).
    pub fn new() -> BusMaster {
        BusMaster {
            enabled: AtomicBool::new(true),
            held: Mutex::new(VecDeque::new()),
            refused: AtomicU64::new(0),
            frames_dropped: AtomicU64::new(0),
        }
    }

    /// Whether the device may do DMA and raise interrupts now.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    pub fn set(&self, on: bool) {
        self.enabled.store(on, Ordering::Release);
    }

    /// Keeps `job` until bus mastering is back; false (and counted) when the hold is full.
    pub fn hold(&self, job: Job) -> bool {
        let mut held = lock(&self.held);
        if held.len() >= HELD_MAX {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        held.push_back(job);
        true
    }

    /// Everything held, oldest first; nothing is held afterwards.
    pub fn take(&self) -> VecDeque<Job> {
        std::mem::take(&mut *lock(&self.held))
    }

    /// True when writes are held.
    pub fn holding(&self) -> bool {
        !lock(&self.held).is_empty()
    }

    /// A reset: what was held is forgotten (the bit is the host's and stays).
    pub fn forget(&self) {
        lock(&self.held).clear();
    }

    pub fn frame_dropped(&self) {
        self.frames_dropped.fetch_add(1, Ordering::Relaxed);
    }
}

impl Core {
    /// Serves (in the firmware thread, or inline) everything held while bus mastering was
    /// off, if it is on now. Returns false, serving nothing, while it is off.
    pub(crate) fn release_held(&self) -> bool {
        if !self.bus_master.enabled() {
            return false;
        }
        // Taken in batches: a job served may not be held again while the bit is on, but the
        // bit may go off again between two of them, and then the rest goes back in order.
        let mut jobs = self.bus_master.take();
        while let Some(job) = jobs.pop_front() {
            if !self.bus_master.enabled() {
                let mut held = lock(&self.bus_master.held);
                for job in jobs.into_iter().rev() {
                    held.push_front(job);
                }
                held.push_front(job);
                return false;
            }
            crate::worker::serve(self, job);
        }
        true
    }
}

impl Device {
    /// Sets the Bus Master Enable bit as the host's configuration space has it (see the
    /// module doc). Turning it on serves what was held, in order, before any later write.
    pub fn set_bus_master(&self, on: bool) {
        self.core.bus_master.set(on);
        if on {
            match &self.worker {
                Some(worker) => worker.control(Job::Release),
                None => {
                    if self.core.release_held() {
                        self.core.kick();
                    }
                }
            }
        }
    }

    /// Whether bus mastering is on.
    pub fn bus_master(&self) -> bool {
        self.core.bus_master.enabled()
    }

    /// BAR writes and host events held while bus mastering is off.
    pub fn held_by_bus_master(&self) -> usize {
        lock(&self.core.bus_master.held).len()
    }

    /// BAR writes and host events dropped because the hold was full ([`HELD_MAX`]).
    pub fn refused_by_bus_master(&self) -> u64 {
        self.core.bus_master.refused.load(Ordering::Relaxed)
    }

    /// Frames from the link dropped because bus mastering was off.
    pub fn frames_dropped_by_bus_master(&self) -> u64 {
        self.core.bus_master.frames_dropped.load(Ordering::Relaxed)
    }

    /// Runs a host event that writes device memory (an EQE) now, or holds it behind the
    /// writes already held while bus mastering is off.
    pub(crate) fn host_event(&self, f: impl FnOnce(&Core) + Send + 'static) {
        let bm = &self.core.bus_master;
        if !bm.enabled() || (bm.holding() && self.worker.is_some()) {
            // Off: held (counted as refused when the hold is full). On with writes still held:
            // the firmware thread has a release queued and serves this after them.
            bm.hold(Job::Host(Box::new(f)));
            return;
        }
        self.core.release_held();
        f(&self.core);
    }

    /// Hands `job` to the firmware thread, or serves it inline, or holds it while bus
    /// mastering is off. In threaded mode the firmware thread decides (it holds what it takes
    /// while the bit is clear), so writes stay in order however the bit changes.
    pub(crate) fn dispatch(&self, job: Job) {
        match &self.worker {
            Some(worker) => worker.send(job),
            None => {
                if !self.core.bus_master.enabled() {
                    self.core.bus_master.hold(job);
                    return;
                }
                if self.core.bus_master.holding() {
                    self.core.release_held();
                }
                let w = crate::worker::serve(&self.core, job);
                self.after_write(w);
            }
        }
    }
}
