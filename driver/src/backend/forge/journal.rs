//! What a [`ForgeBackend`](super::ForgeBackend) may forge and what it did: the sites, the
//! forgeries asked for by name, the rings it watches, and the journal of its forgeries.

use super::decide::Source;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Forgeries kept for [`Journal::forged`].
const KEEP: usize = 64;

/// Where forgeries may happen (a bit set each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sites(pub u8);

impl Sites {
    /// Values read from the initialization segment and health words.
    pub const INIT_SEG: Sites = Sites(1);
    /// The command entry's delivery status, token and ownership bit.
    pub const CMD_ENTRY: Sites = Sites(2);
    /// Command outputs: inline status, syndrome and output words; output mailboxes.
    pub const CMD_OUTPUT: Sites = Sites(4);
    /// Completion queue entries.
    pub const CQE: Sites = Sites(8);
    /// Event queue entries (page requests, port changes, command completions...).
    pub const EQE: Sites = Sites(16);
    /// Every site.
    pub const ALL: Sites = Sites(31);

    pub(super) fn has(self, s: Sites) -> bool {
        self.0 & s.0 != 0
    }
}

/// One forgery, for messages: where, and what was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forged {
    /// The site.
    pub site: &'static str,
    /// What was changed, in words.
    pub what: String,
}

/// A ring of 64-byte entries the device writes, and what it held at the last look.
pub(super) struct Watched {
    pub(super) site: Sites,
    pub(super) iova: u64,
    /// The allocation it lies in, by generation: a buffer given back ends the watch.
    pub(super) generation: u64,
    pub(super) shadow: Vec<u8>,
    /// The entry after the last new one: where the device writes next.
    pub(super) next: usize,
    /// Looks so far (every [`FULL_SWEEP`](super::FULL_SWEEP)-th compares the whole ring).
    pub(super) looks: u32,
}

/// The wrapper's own state, behind one lock.
pub(super) struct State {
    pub(super) source: Source,
    pub(super) sites: Sites,
    pub(super) cmdq: (u32, u32),
    pub(super) rings: Vec<Watched>,
    pub(super) forged: Vec<Forged>,
    pub(super) total: u64,
    pub(super) plans: Vec<Plan>,
    /// Completions seen per opcode, for plans that name the n-th.
    pub(super) seen: BTreeMap<u16, u32>,
    /// New ring entries seen (forged or not).
    pub(super) entries: u64,
    /// Every this many looks at a ring compare all of it
    /// ([`FULL_SWEEP`](super::FULL_SWEEP) unless set).
    pub(super) sweep: u32,
}

/// A forgery asked for by name (see [`ForgeBackend::plan`](super::ForgeBackend::plan)), applied whatever the decision
/// bytes and sites say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The `nth` completion (from 0) of `opcode`: `bytes` written at byte `at` of its output
    /// (bytes 0..16 are the inline part, the rest the mailboxes' data).
    Output {
        /// The command's opcode.
        opcode: u16,
        /// Which of its completions.
        nth: u32,
        /// Byte offset in the output.
        at: usize,
        /// What is written there.
        bytes: Vec<u8>,
    },
    /// The `nth` completion of `opcode` gets delivery status `status`.
    Delivery {
        /// The command's opcode.
        opcode: u16,
        /// Which of its completions.
        nth: u32,
        /// The delivery status.
        status: u8,
    },
    /// The `nth` completion of `opcode` is left owned by the device: the command ran, but
    /// the driver sees it as never completing.
    Owned {
        /// The command's opcode.
        opcode: u16,
        /// Which of its completions.
        nth: u32,
    },
    /// The next EQE the device writes gets `bytes` at byte `at`.
    Eqe {
        /// Byte offset in the EQE.
        at: usize,
        /// What is written there.
        bytes: Vec<u8>,
    },
    /// The next CQE the device writes gets `bytes` at byte `at`.
    Cqe {
        /// Byte offset in the CQE.
        at: usize,
        /// What is written there.
        bytes: Vec<u8>,
    },
}

impl State {
    pub(super) fn note(&mut self, site: &'static str, what: String) {
        log::debug!("forged {site}: {what}");
        if self.forged.len() == KEEP {
            self.forged.remove(0);
        }
        self.forged.push(Forged { site, what });
        self.total += 1;
    }
}

/// The record of a [`ForgeBackend`](super::ForgeBackend)'s forgeries.
#[derive(Clone)]
pub struct Journal(pub(super) Arc<Mutex<State>>);

impl Journal {
    /// The last forgeries (at most 64) and how many there were in all.
    pub fn forged(&self) -> (Vec<Forged>, u64) {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (s.forged.clone(), s.total)
    }

    /// Decision bytes used so far.
    pub fn decisions_used(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).source.at
    }

    /// New CQEs and EQEs seen so far, forged or not.
    pub fn entries_seen(&self) -> u64 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).entries
    }
}
