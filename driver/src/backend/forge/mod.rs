//! A backend that forges what the device writes: it wraps another backend and, driven by a
//! stream of decision bytes (a fuzzer's input, or bytes a property test drew), corrupts device
//! memory at the moment the device hands it over and before the driver reads it.
//!
//! The driver must treat everything a device writes as untrusted: a device can be buggy,
//! flashed with hostile firmware, or passed through to a guest that lies. This wrapper is how
//! the tests and the `forged_device` fuzz target check that the driver survives it (no panic,
//! bounded allocation, a typed error, a clean teardown).
//!
//! Where it intercepts (see [`Sites`]):
//! - BAR reads: the initialization segment and health words, as the driver reads them;
//! - after the command doorbell (the model runs a command before the write returns, in its
//!   inline mode): the entry's delivery status, token and ownership bit, the inline output
//!   (status, syndrome, first output words) and the output mailboxes (data, block number,
//!   token);
//! - after every doorbell, interrupt wait and [`ForgeBackend::settle`]: CQEs and EQEs the
//!   device wrote since the last look. The rings are learnt from the CREATE_CQ and CREATE_EQ
//!   commands that succeeded (their input gives the ring's address and size); a new entry is
//!   one whose bytes changed since the last look (the driver never writes a ring after
//!   creating it).
//!
//! Each chance to forge takes one byte of the stream: 0 (and every byte once the stream is
//! spent) leaves the memory as the device wrote it; otherwise the byte and the next ones
//! choose what is done (flip a bit, all ones, all zeros, a chosen value) and where. So an
//! empty stream is the plain backend, and a fuzzer reaches a forgery by setting one byte.
//!
//! The wrapper needs the memory it forges to be memory the driver allocated through it: its
//! allocator records every buffer (IO address to host address) until the buffer is given
//! back or quarantined.

mod book;
mod decide;
mod journal;

use super::{Backend, Events, Mmio, Regs};
use book::Book;
use decide::{apply, Op, Source};
pub use journal::{Forged, Journal, Plan, Sites};
use journal::{State, Watched};
use mlx5_prm::cmd::{CreateCq, CreateEq};
use mlx5_prm::rt::{Command, Field, MmioBytes};
use mlx5_prm::{CmdIfBox, CmdQueueEntry, Cqe64, CreateCqIn, CreateEqIn, Eqe, ErrCqe, InitialSeg};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Byte offset of the command doorbell in the initialization segment.
const DOORBELL: usize = 0x18;
/// Bytes of one CQE or EQE.
const ENTRY: usize = 64;
/// Most mailbox blocks followed for one command (a 1 MiB command; the driver's are shorter).
const MAX_BLOCKS: usize = 2048;
/// The CQE fields the driver reads, then every field of the layout: a pick among them is
/// as likely to hit one the driver acts on as one it ignores.
const CQE_FIELDS: &[Field] = &{
    // As many key fields as the layout has fields.
    const KEY: [Field; 9] = [
        Cqe64::OPCODE,
        Cqe64::OWNER,
        Cqe64::BYTE_CNT,
        Cqe64::WQE_COUNTER,
        Cqe64::QPN,
        Cqe64::IMMEDIATE,
        Cqe64::FORMAT,
        ErrCqe::SYNDROME,
        ErrCqe::VENDOR_ERR_SYND,
    ];
    let all = Cqe64::FIELDS;
    let mut out = [Cqe64::OWNER; 2 * Cqe64::FIELDS.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = if i < all.len() {
            all[i]
        } else {
            KEY[i % KEY.len()]
        };
        i += 1;
    }
    out
};

/// Every this many looks at a ring compare all of it, not only the entries from its cursor
/// on (see [`ForgeBackend::scan`]; [`ForgeBackend::sweep_every`] changes it).
const FULL_SWEEP: u32 = 16;

/// A backend over `B` that forges device memory (see the module docs).
pub struct ForgeBackend<B: Backend> {
    inner: B,
    /// Every buffer handed out (shared with the buffers, which give themselves back to it).
    book: Arc<Book>,
    state: Arc<Mutex<State>>,
}

impl<B: Backend> ForgeBackend<B> {
    /// Wraps `inner`; `decisions` drive the forgeries at `sites`.
    pub fn new(inner: B, decisions: Vec<u8>, sites: Sites) -> ForgeBackend<B> {
        ForgeBackend {
            book: Arc::new(Book {
                bufs: Mutex::new(BTreeMap::new()),
                next_generation: Mutex::new(0),
            }),
            inner,
            state: Arc::new(Mutex::new(State {
                source: Source {
                    bytes: decisions,
                    at: 0,
                },
                sites,
                cmdq: (0, 0),
                rings: Vec::new(),
                forged: Vec::new(),
                total: 0,
                plans: Vec::new(),
                seen: BTreeMap::new(),
                entries: 0,
                sweep: FULL_SWEEP,
            })),
        }
    }

    /// A handle on the record of forgeries that outlives the backend (a failed bring-up
    /// drops it).
    pub fn journal(&self) -> Journal {
        Journal(self.state.clone())
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Looks at the rings now: for device writes made outside the backend's calls (a test
    /// raising an event on the model directly), before the driver reads them.
    pub fn settle(&self) {
        self.scan(&mut self.lock());
    }

    /// Compares every entry of a ring on every `n`-th look (1: every look, as a check that
    /// the usual look from the cursor misses nothing), instead of every 16th.
    pub fn sweep_every(&self, n: u32) {
        self.lock().sweep = n.max(1);
    }

    /// Asks for a forgery by name (a test of one case), on top of the decision bytes.
    pub fn plan(&self, plan: Plan) {
        self.lock().plans.push(plan);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forges new entries of the watched rings.
    ///
    /// A device writes a ring's entries in order, so the new ones are a run that starts at
    /// the entry after the last new one: a look compares entries from there and stops at the
    /// first one unchanged since the last look (a whole ring at most). Comparing every entry
    /// on every look, after every command, was most of a forged run's time. Every
    /// [`FULL_SWEEP`]-th look goes round the whole ring all the same, so that a device that
    /// wrote an entry with the bytes it already held, or out of order, is caught a little
    /// later instead of never.
    fn scan(&self, s: &mut State) {
        let book = &self.book;
        let State {
            rings,
            source,
            sites,
            plans,
            entries: seen,
            sweep,
            ..
        } = s;
        let mut notes = Vec::new();
        rings.retain_mut(|ring| {
            ring.looks = ring.looks.wrapping_add(1);
            let full = ring.looks % *sweep == 0;
            let entries = ring.shadow.len() / ENTRY;
            // A sweep reads the ring in one go; a look from the cursor, entry by entry.
            let mut whole = Vec::new();
            if full {
                whole = vec![0u8; ring.shadow.len()];
                match book.read(ring.iova, &mut whole) {
                    Some(g) if g == ring.generation => {}
                    // Given back: the ring is gone.
                    _ => return false,
                }
            }
            let mut k = ring.next;
            let mut new = [0u8; ENTRY];
            for _ in 0..entries {
                let at = ring.iova + (k * ENTRY) as u64;
                if full {
                    new.copy_from_slice(&whole[k * ENTRY..(k + 1) * ENTRY]);
                } else {
                    match book.read(at, &mut new) {
                        Some(g) if g == ring.generation => {}
                        _ => return false,
                    }
                }
                let old = &mut ring.shadow[k * ENTRY..(k + 1) * ENTRY];
                if new[..] != old[..] {
                    *seen += 1;
                    if let Some(note) = forge_entry(ring.site, k, &mut new, source, *sites, plans) {
                        book.write(at, &new);
                        notes.push(note);
                    }
                    old.copy_from_slice(&new);
                    ring.next = (k + 1) % entries;
                } else if !full {
                    break;
                }
                k = (k + 1) % entries;
            }
            true
        });
        for (site, what) in notes {
            s.note(site, what);
        }
    }

    /// A command in `slot` completed: learn the rings it made, then forge its results.
    fn completed(&self, s: &mut State, slot: usize) {
        let book = &self.book;
        let (hi, lo) = s.cmdq;
        // SAFETY: only read.
        let regs = unsafe { Regs::new(self.inner.mmio()) };
        let seg = InitialSeg::new_unchecked(MmioBytes::new(regs, 0x400c));
        let stride = seg.log_cmdq_stride().min(11);
        let at = (u64::from(hi) << 32 | u64::from(lo & !0xfff)) + ((slot as u64) << stride);
        let mut raw = [0u8; 64];
        if book.read(at, &mut raw).is_none() {
            return;
        }
        let entry = CmdQueueEntry::new_unchecked(&raw[..]);
        if entry.ownership() {
            // Not done yet (a device that works on its own thread): nothing to forge.
            return;
        }
        let ok = entry.status_raw() == 0 && entry.command_output_inline_data()[0] == 0;
        if ok {
            self.learn(s, &raw);
        }
        let inline = entry.command_input_inline_data();
        let opcode = u16::from_be_bytes([inline[0], inline[1]]);
        let seen = s.seen.entry(opcode).or_insert(0);
        let nth = *seen;
        *seen = seen.saturating_add(1);
        self.planned(s, at, &mut raw, opcode, nth);
        // The entry itself.
        if s.sites.has(Sites::CMD_ENTRY) {
            if let Some(op) = s.source.op() {
                let f = [
                    CmdQueueEntry::STATUS,
                    CmdQueueEntry::TOKEN,
                    CmdQueueEntry::OWNERSHIP,
                ][s.source.pick(3)];
                let what = apply(&mut raw, f, op, 0);
                book.write(at, &raw);
                s.note("command entry", what);
            }
        }
        if !s.sites.has(Sites::CMD_OUTPUT) {
            return;
        }
        let Some(op) = s.source.op() else { return };
        let entry = CmdQueueEntry::new_unchecked(&raw[..]);
        let out_len = entry.output_length() as usize;
        let blocks = out_len.saturating_sub(16).div_ceil(512).min(MAX_BLOCKS);
        let choice = s.source.pick(blocks + 1);
        if choice == 0 {
            // The inline output: status, syndrome and two output words.
            let f = CmdQueueEntry::COMMAND_OUTPUT_INLINE_DATA;
            let word = s.source.pick(4);
            let what = apply(&mut raw, f, op, word);
            book.write(at, &raw);
            s.note("command output", what);
            return;
        }
        // Output mailbox `choice - 1`, reached through the next pointers the driver wrote.
        let mut block = u64::from(entry.output_mailbox_pointer_63_32()) << 32
            | u64::from(entry.output_mailbox_pointer_31_9()) << 9;
        let size = mlx5_prm::CMD_MAILBOX_BLOCK_SIZE as usize;
        let mut mb = vec![0u8; size];
        for _ in 1..choice {
            if book.read(block, &mut mb).is_none() {
                return;
            }
            let view = CmdIfBox::new_unchecked(&mb[..]);
            block = u64::from(view.next_pointer_63_32()) << 32
                | u64::from(view.next_pointer_31_10()) << 10;
        }
        if book.read(block, &mut mb).is_none() {
            return;
        }
        let fields = CmdIfBox::FIELDS;
        let f = fields[s.source.pick(fields.len())];
        let what = apply(&mut mb, f, op, s.source.pick(128));
        book.write(block, &mb);
        s.note("command output", format!("mailbox {}: {what}", choice - 1));
    }

    /// Applies the plans for the `nth` completion of `opcode`, whose entry (at `at`) is `raw`.
    fn planned(&self, s: &mut State, at: u64, raw: &mut [u8; 64], opcode: u16, nth: u32) {
        let book = &self.book;
        let mine = |p: &Plan| match p {
            Plan::Output {
                opcode: o, nth: n, ..
            }
            | Plan::Delivery {
                opcode: o, nth: n, ..
            }
            | Plan::Owned { opcode: o, nth: n } => (*o, *n) == (opcode, nth),
            _ => false,
        };
        while let Some(i) = s.plans.iter().position(mine) {
            match s.plans.remove(i) {
                Plan::Delivery { status, .. } => {
                    let what = apply(raw, CmdQueueEntry::STATUS, Op::Value(status.into()), 0);
                    book.write(at, &raw[..]);
                    s.note("command entry", format!("planned: {what}"));
                }
                Plan::Owned { .. } => {
                    let what = apply(raw, CmdQueueEntry::OWNERSHIP, Op::Value(1), 0);
                    book.write(at, &raw[..]);
                    s.note("command entry", format!("planned: {what}"));
                }
                Plan::Output { at: off, bytes, .. } => {
                    for (k, b) in bytes.iter().enumerate() {
                        self.write_output(raw, at, off + k, *b);
                    }
                    s.note("command output", format!("planned {bytes:02x?} at {off}"));
                }
                _ => {}
            }
        }
    }

    /// Writes byte `off` of the output of the command whose entry (at `at`) is `raw`.
    fn write_output(&self, raw: &mut [u8; 64], at: u64, off: usize, b: u8) {
        let inline = CmdQueueEntry::COMMAND_OUTPUT_INLINE_DATA.bit_offset / 8;
        if off < 16 {
            raw[inline + off] = b;
            self.book.write(at, &raw[..]);
            return;
        }
        let entry = CmdQueueEntry::new_unchecked(&raw[..]);
        let mut block = u64::from(entry.output_mailbox_pointer_63_32()) << 32
            | u64::from(entry.output_mailbox_pointer_31_9()) << 9;
        let mut mb = vec![0u8; mlx5_prm::CMD_MAILBOX_BLOCK_SIZE as usize];
        for _ in 0..(off - 16) / 512 {
            if self.book.read(block, &mut mb).is_none() {
                return;
            }
            let view = CmdIfBox::new_unchecked(&mb[..]);
            block = u64::from(view.next_pointer_63_32()) << 32
                | u64::from(view.next_pointer_31_10()) << 10;
        }
        self.book.write(block + ((off - 16) % 512) as u64, &[b]);
    }

    /// Watches the ring a successful CREATE_CQ or CREATE_EQ made.
    fn learn(&self, s: &mut State, raw: &[u8; 64]) {
        let book = &self.book;
        let entry = CmdQueueEntry::new_unchecked(&raw[..]);
        let inline = entry.command_input_inline_data();
        let opcode = u16::from_be_bytes([inline[0], inline[1]]);
        let (site, size) = match opcode {
            CreateCq::OPCODE => (Sites::CQE, CreateCqIn::<[u8; 272]>::SIZE),
            CreateEq::OPCODE => (Sites::EQE, CreateEqIn::<[u8; 272]>::SIZE),
            _ => return,
        };
        // The fixed part and the first page address: inline bytes, then the first mailbox.
        let mut input = vec![0u8; size + 8];
        input[..16].copy_from_slice(&inline);
        let first = u64::from(entry.input_mailbox_pointer_63_32()) << 32
            | u64::from(entry.input_mailbox_pointer_31_9()) << 9;
        if book.read(first, &mut input[16..]).is_none() {
            return;
        }
        let (log_size, ring) = if site == Sites::CQE {
            let i = CreateCqIn::new_unchecked(&input[..]);
            (i.cq_context().log_cq_size(), i.pas(0))
        } else {
            let i = CreateEqIn::new_unchecked(&input[..]);
            (i.eq_context_entry().log_eq_size(), i.pas(0))
        };
        let Some(iova) = ring else { return };
        let len = ENTRY << log_size.min(22);
        let mut shadow = vec![0u8; len];
        if let Some(generation) = book.read(iova, &mut shadow) {
            s.rings.push(Watched {
                site,
                iova,
                generation,
                shadow,
                next: 0,
                looks: 0,
            });
        }
    }
}

/// Forges entry `k` of a ring at `site` that the device just wrote (`new`, changed in place):
/// a plan for such an entry first, else what the decision bytes say where `sites` allow it.
/// Returns what was done, if anything.
fn forge_entry(
    site: Sites,
    k: usize,
    new: &mut [u8],
    source: &mut Source,
    sites: Sites,
    plans: &mut Vec<Plan>,
) -> Option<(&'static str, String)> {
    let (name, fields) = if site == Sites::CQE {
        ("cqe", CQE_FIELDS)
    } else {
        ("eqe", Eqe::FIELDS)
    };
    let planned = plans.iter().position(|p| match p {
        Plan::Cqe { .. } => site == Sites::CQE,
        Plan::Eqe { .. } => site == Sites::EQE,
        _ => false,
    });
    if let Some(i) = planned {
        if let Plan::Cqe { at, bytes } | Plan::Eqe { at, bytes } = plans.remove(i) {
            if let Some(dst) = new.get_mut(at..at.saturating_add(bytes.len())) {
                dst.copy_from_slice(&bytes);
            }
            return Some((name, format!("entry {k}: planned {bytes:02x?} at {at}")));
        }
        return None;
    }
    if !sites.has(site) {
        return None;
    }
    let op = source.op()?;
    let f = fields[source.pick(fields.len())];
    let what = apply(new, f, op, source.pick(8));
    Some((name, format!("entry {k}: {what}")))
}

impl<B: Backend> Mmio for ForgeBackend<B> {
    fn len(&self) -> usize {
        self.inner.mmio().len()
    }

    fn read32(&self, offset: usize) -> u32 {
        let v = self.inner.mmio().read32(offset);
        let mut s = self.lock();
        if !s.sites.has(Sites::INIT_SEG) {
            return v;
        }
        let Some(op) = s.source.op() else { return v };
        let mut bytes = v.to_be_bytes();
        let what = apply(&mut bytes, Field::new("register", 0, 32), op, 0);
        s.note("init segment", format!("0x{offset:x}: {what}"));
        u32::from_be_bytes(bytes)
    }

    unsafe fn write32(&self, offset: usize, value: u32) {
        // SAFETY: forwarded; the caller's promise.
        unsafe { self.inner.mmio().write32(offset, value) };
        let mut s = self.lock();
        match offset {
            0x10 => s.cmdq.0 = value,
            0x14 => s.cmdq.1 = value,
            DOORBELL => {
                for slot in (0..32).filter(|k| value & (1 << k) != 0) {
                    self.completed(&mut s, slot);
                }
            }
            _ => {}
        }
        self.scan(&mut s);
    }

    unsafe fn write64(&self, offset: usize, value: u64) {
        // SAFETY: forwarded; the caller's promise.
        unsafe { self.inner.mmio().write64(offset, value) };
        self.scan(&mut self.lock());
    }

    unsafe fn copy_wc(&self, offset: usize, data: &[u64]) {
        // SAFETY: forwarded; the caller's promise.
        unsafe { self.inner.mmio().copy_wc(offset, data) };
        self.scan(&mut self.lock());
    }
}

impl<B: Backend> Events for ForgeBackend<B> {
    fn wait(&self, deadline: Instant) {
        self.inner.events().wait(deadline);
        self.scan(&mut self.lock());
    }
}

impl<B: Backend> Backend for ForgeBackend<B> {
    type Mmio = Self;
    type Dma = Self;
    type Events = Self;
    type Barriers = B::Barriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &Self {
        self
    }
    fn events(&self) -> &Self {
        self
    }
}
