//! Completion queues: a power-of-two ring of 64-byte CQEs the device writes, read by the
//! owner-bit rule, with a doorbell record through which the driver publishes its consumer
//! index (once per poll batch) and arms the CQ.
//!
//! The owner rule: the CQE at consumer index `ci` belongs to software when its owner bit
//! equals `(ci >> log_size) & 1`; the parity flips on every pass over the ring. The driver
//! initialises every slot with opcode INVALID and owner 1, so nothing is valid before the
//! device writes it. The rest of a CQE is read only after the owner check and a from-device
//! barrier.

use crate::backend::{Backend, Barriers, DmaAlloc, Mmio};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::ring::{dword_of, low_bits, shift_of, Ring, Run};
use crate::undo::{Kind, Object};
use mlx5_prm::cmd::CreateCq;
use mlx5_prm::rt::View;
use mlx5_prm::{
    CqArmCmd, CqDoorbellRecord, CqDoorbellRecordArmWord, CqDoorbellRecordCiWord, Cqe64, CqeOpcode,
    CqeSyndrome, ErrCqe, UarPage, UarPageCqArmWord,
};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes per CQE slot.
const CQE: usize = 64;
/// The CQE dword holding opcode and owner (and wqe_counter).
pub(crate) const OP_OWN: usize = dword_of(Cqe64::OWNER);
const _: () = assert!(dword_of(Cqe64::OPCODE) == OP_OWN);
const INVALID: u32 = CqeOpcode::Invalid.raw() as u32;
/// The CQE's 64-bit timestamp, high dword first.
const TIMESTAMP: usize = dword_of(Cqe64::TIMESTAMP);
const _: () = assert!(Cqe64::TIMESTAMP.width == 64 && TIMESTAMP % 8 == 0);
/// The consumer index as the doorbell record and the arm doorbell carry it: modulo 2^24 (the
/// fields' width).
const CI_MASK: u32 = low_bits(CqDoorbellRecord::CONSUMER_INDEX);
const _: () = assert!(
    CqDoorbellRecord::ARM_CI.width == CqDoorbellRecord::CONSUMER_INDEX.width
        && UarPage::CQ_ARM_CI.width == CqDoorbellRecord::CONSUMER_INDEX.width
);
/// The arm sequence number as the two arm words carry it (2 bits).
const SN_MASK: u8 = low_bits(CqDoorbellRecord::ARM_SN) as u8;
const _: () = assert!(UarPage::CQ_ARM_SN.width == CqDoorbellRecord::ARM_SN.width);

/// Why a work request failed, as the error CQE says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqeError {
    /// The PRM syndrome.
    pub syndrome: u8,
    /// The vendor syndrome.
    pub vendor_syndrome: u8,
}

impl CqeError {
    /// The syndrome's name as the spec writes it, or "unknown".
    pub fn name(&self) -> &'static str {
        CqeSyndrome::from_raw(u64::from(self.syndrome)).map_or("unknown", |s| s.spec_name())
    }
}

impl std::fmt::Display for CqeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (syndrome 0x{:02x}, vendor 0x{:02x})",
            self.name(),
            self.syndrome,
            self.vendor_syndrome
        )
    }
}

/// One completion, decoded.
///
/// Only a CQ makes one (it has a private field), and it is neither `Copy` nor `Clone`: a
/// completion hands its work back once, to a QP that reports to the CQ that made it (see
/// [`Qp::complete`](crate::qp::Qp::complete)), so no buffer comes back twice or while the
/// device still holds it.
#[derive(Debug, PartialEq, Eq)]
pub struct Completion {
    /// CQE opcode (`CqeOpcode` raw value).
    pub opcode: u8,
    /// The local QP (or SQ/RQ) number.
    pub qpn: u32,
    /// Index of the completed WQE (WQEBB counter for sends).
    pub wqe_counter: u16,
    /// Bytes received (responder) or read (RDMA READ requester).
    pub byte_cnt: u32,
    /// Immediate data, for completions that carry it.
    pub immediate: u32,
    /// `Err` for an error CQE.
    pub status: std::result::Result<(), CqeError>,
    /// Which CQ wrote it, and where.
    pub(crate) source: Source,
}

/// Where a completion came from: the CQ's identity and the CQE's place in it, so that a QP
/// takes only completions of its own CQs, written since it last started afresh.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Source {
    /// The CQ's [`Shared::id`].
    pub(crate) cq: u64,
    /// CQEs the CQ handed over before this one, since it was created.
    pub(crate) seq: u64,
}

/// The next CQ identity: a process-wide count, so that no two CQs (of any HCA, alive or
/// gone) share one.
static NEXT_CQ_ID: AtomicU64 = AtomicU64::new(0);

/// A completion queue of HCA `'h`.
///
/// Queue pairs that report to it keep it alive: dropped (or destroyed) while one still does,
/// the device object goes with the last of them.
pub struct Cq<'h, B: Backend> {
    shared: Arc<Shared<'h, B>>,
    /// Word access to the ring and the doorbell record (valid while `shared` is held).
    cqes: Ring<CQE>,
    record: Ring<8>,
    log_size: u8,
    cqn: u32,
    consumer: u32,
    /// CQEs consumed since creation (`consumer` is its low 32 bits): the place of the next
    /// completion, as [`Source::seq`] counts.
    consumed: u64,
    uar_offset: usize,
    arm_sn: u8,
}

/// A position in a CQ's ring, for hot poll loops (see [`Cq::cursor`]).
#[derive(Clone, Copy)]
pub(crate) struct Cursor {
    cqes: Ring<CQE>,
    consumer: u32,
}

impl Cursor {
    /// True when the device has handed over the CQE here (owner rule, opcode not INVALID);
    /// the from-device barrier is then done, so its other fields may be read with
    /// [`Cursor::field`].
    #[inline(always)]
    pub(crate) fn ready<Br: Barriers>(&self) -> bool {
        self.ready_word::<Br>().is_some()
    }

    /// As [`Cursor::ready`], and the dword that told: the CQE's last (wqe_counter,
    /// signature, opcode, format, se, owner), as read in the same load as the owner bit.
    #[inline(always)]
    pub(crate) fn ready_word<Br: Barriers>(&self) -> Option<u32> {
        let word = self.cqes.read32::<OP_OWN>(self.consumer);
        let owner = (word >> shift_of(Cqe64::OWNER)) & 1;
        let opcode = (word >> shift_of(Cqe64::OPCODE)) & 0xf;
        if owner != self.parity() || opcode == INVALID {
            return None;
        }
        Br::from_device();
        Some(word)
    }

    /// The dword at byte `AT` of the CQE here (after [`Cursor::ready`]).
    #[inline(always)]
    pub(crate) fn field<const AT: usize>(&self) -> u32 {
        self.cqes.read32::<AT>(self.consumer)
    }

    /// The timestamp (the device clock's value, 64 bits at 0x30) of the CQE `k` positions on
    /// from here, which must be handed over (read only by the timestamped polls).
    #[inline]
    pub(crate) fn timestamp(&self, k: u32) -> u64 {
        let i = self.consumer.wrapping_add(k);
        let high = self.cqes.read32::<TIMESTAMP>(i);
        let low = self.cqes.read32::<{ TIMESTAMP + 4 }>(i);
        (u64::from(high) << 32) | u64::from(low)
    }

    /// The owner bit of a CQE handed over at this position: the parity of the pass over the
    /// ring. It stays the same for [`Cursor::until_wrap`] positions.
    #[inline(always)]
    pub(crate) fn parity(&self) -> u32 {
        u32::from(self.consumer & self.cqes.entries() != 0)
    }

    /// Positions from here to the end of the ring (at least 1).
    #[inline(always)]
    pub(crate) fn until_wrap(&self) -> usize {
        self.cqes.until_wrap(self.consumer)
    }

    /// Moves to the next CQE.
    #[inline(always)]
    pub(crate) fn advance(&mut self) {
        self.consumer = self.consumer.wrapping_add(1);
    }

    /// Moves `n` CQEs on.
    #[inline(always)]
    pub(crate) fn advance_by(&mut self, n: u32) {
        self.consumer = self.consumer.wrapping_add(n);
    }

    /// The `len` CQEs from here on, for a loop over them; they must not wrap the ring
    /// ([`Cursor::until_wrap`]), so they share one owner parity.
    ///
    /// # Panics
    ///
    /// If they wrap.
    #[inline(always)]
    pub(crate) fn run(&self, len: usize) -> CqeRun {
        CqeRun {
            cqes: self.cqes.run(self.consumer, len),
            parity: self.parity(),
        }
    }
}

/// CQEs from a [`Cursor`] on that do not wrap the ring (see [`Cursor::run`]).
///
/// [`CqeRun::matches_raw`] is the hot path's ownership check: it is handed over when
/// [`Cursor::ready`] would say so (owner bit of this pass, opcode not INVALID) and, in the same
/// load, its last dword (wqe_counter, signature, opcode, format, se, owner) under `mask` equals
/// `expected`; the from-device barrier is then done, so its other fields may be read.
/// `mask` must cover the owner bit and the opcode, and `expected` hold this pass's owner parity
/// ([`Cursor::parity`]) and an opcode other than INVALID: then a match is a CQE handed over by
/// the owner rule. `false` says nothing about why: the CQE may not be handed over yet, or hold
/// something else ([`Cursor::ready`] tells).
#[derive(Clone, Copy)]
pub(crate) struct CqeRun {
    cqes: Run<CQE>,
    parity: u32,
}

impl CqeRun {
    /// Whether the `k`-th CQE of the run is handed over and as expected (see [`CqeRun`]);
    /// `mask` and `expected` are in the device's byte order (`to_be()` of the values meant),
    /// which saves converting the CQE's dword.
    #[inline(always)]
    pub(crate) fn matches_raw<Br: Barriers>(&self, k: usize, mask: u32, expected: u32) -> bool {
        let (mask_native, expected_native) = (u32::from_be(mask), u32::from_be(expected));
        debug_assert!(mask_native & OWNER_OPCODE == OWNER_OPCODE);
        debug_assert!((expected_native >> shift_of(Cqe64::OPCODE)) & 0xf != INVALID);
        debug_assert!(expected_native & 1 == self.parity);
        if (self.cqes.read32_raw::<OP_OWN>(k) ^ expected) & mask != 0 {
            return false;
        }
        Br::from_device();
        true
    }

    /// The dword at byte `AT` of the `k`-th CQE (after [`CqeRun::matches_raw`] on it).
    #[inline(always)]
    pub(crate) fn field<const AT: usize>(&self, k: usize) -> u32 {
        self.cqes.read32::<AT>(k)
    }
}

/// The owner bit and the opcode in the CQE's last dword.
const OWNER_OPCODE: u32 = (1 << shift_of(Cqe64::OWNER)) | (0xf << shift_of(Cqe64::OPCODE));
const _: () = assert!(shift_of(Cqe64::OWNER) == 0);

/// The CQ's device object and its memory (ring, doorbell record), shared by the CQ and the
/// queue pairs that report to it; the last to go destroys it.
pub(crate) struct Shared<'h, B: Backend> {
    object: Object<'h, B>,
    /// This CQ's identity, which no other CQ of the process has: the [`Source::cq`] of its
    /// completions.
    id: u64,
    /// The ring, read (never written) by [`Shared::produced`].
    cqes: Ring<CQE>,
    /// The `Cq`'s count of CQEs consumed, stored before each publication of the consumer
    /// index (so before the device may reuse a slot consumed).
    consumed: AtomicU64,
}

// SAFETY: through `&Shared` the object's memory is only read, by atomic loads of the ring
// (`produced`), which the device and the `Cq`'s own loads may race with harmlessly; the `Cq`
// writes the ring only at creation, before any `Shared` is shared, and the drop has the object
// to itself.
unsafe impl<B: Backend> Sync for Shared<'_, B> where Hca<B>: Sync {}

impl<'h, B: Backend> Shared<'h, B> {
    /// The HCA.
    pub(crate) fn hca(&self) -> &'h Hca<B> {
        self.object.hca()
    }

    /// The CQ's identity, as its completions' [`Source::cq`] holds it.
    #[inline(always)]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Quarantine the CQ's memory when it goes (a queue that reported to it could not be
    /// destroyed, so the device may still write completions).
    pub(crate) fn taint(&self) {
        self.object.taint();
    }

    /// CQEs the device has handed over so far, counted from the CQ's creation: those consumed
    /// and those waiting in the ring. A queue that starts afresh (created, or reset) takes it
    /// as its fence: every CQE its earlier life (or an earlier queue of its number) left in
    /// the CQ is before it, every CQE of its new work after it (the device writes CQEs in ring
    /// order), so [`Source::seq`] tells them apart.
    ///
    /// The waiting CQEs are counted from the consumer index, at most one ring. The `Cq` may be
    /// polled meanwhile on another thread: a count made while its consumer index moved may
    /// have stopped at a slot the device reused, so it is made again.
    pub(crate) fn produced(&self) -> u64 {
        loop {
            let start = self.consumed.load(Ordering::Acquire);
            let mut cur = Cursor {
                cqes: self.cqes,
                consumer: start as u32,
            };
            let mut waiting = 0;
            while waiting < u64::from(self.cqes.entries()) && cur.ready::<B::Barriers>() {
                cur.advance();
                waiting += 1;
            }
            // The ring's loads before the second look at the count.
            fence(Ordering::SeqCst);
            if self.consumed.load(Ordering::Acquire) == start {
                return start + waiting;
            }
        }
    }
}

/// Writes opcode INVALID and owner 1 into every slot.
fn init_ring(ring: &Ring<CQE>) {
    for i in 0..ring.entries() {
        let mut c = Cqe64::new_unchecked(ring.slot(i));
        c.set_opcode(CqeOpcode::Invalid);
        c.set_owner(true);
    }
}

/// Decodes the CQE at `consumer`, which the caller found handed over (see [`Cursor::ready`]);
/// it came from `source`.
fn decode_at(ring: &Ring<CQE>, consumer: u32, source: Source) -> Completion {
    let cqe = Cqe64::new_unchecked(ring.slot(consumer));
    let opcode = cqe.opcode_raw();
    let status = if opcode == CqeOpcode::ReqErr.raw() || opcode == CqeOpcode::RespErr.raw() {
        let e = ErrCqe::new_unchecked(ring.slot(consumer));
        Err(CqeError {
            syndrome: e.syndrome_raw(),
            vendor_syndrome: e.vendor_err_synd(),
        })
    } else {
        Ok(())
    };
    Completion {
        opcode,
        qpn: cqe.qpn(),
        wqe_counter: cqe.wqe_counter(),
        byte_cnt: cqe.byte_cnt(),
        immediate: cqe.immediate(),
        status,
        source,
    }
}

impl<'h, B: Backend> Cq<'h, B> {
    /// Creates a CQ of `1 << log_size` entries whose completion events go to the HCA's EQ.
    pub fn create(hca: &'h Hca<B>, log_size: u8) -> Result<Cq<'h, B>> {
        if !(1..=22).contains(&log_size) {
            return Err(Error::InvalidArgument {
                what: "cq",
                why: format!("log_size {log_size} (1..=22)"),
            });
        }
        let entries = 1usize << log_size;
        let bytes = (entries * CQE).max(4096);
        let be = hca.backend();
        // Until the CQ exists, the memory is only the driver's: dropped, so freed, on error.
        let ring = be.dma().alloc(bytes, 4096)?;
        let dbrec = be.dma().alloc(64, 64)?;
        // SAFETY: the memory is kept by the CQ's object, which the rings never outlive.
        let (cqes, record) = unsafe { (Ring::over(&ring, entries), Ring::over(&dbrec, 1)) };
        init_ring(&cqes);
        let pages: Vec<u64> = (0..bytes / 4096)
            .map(|p| ring.iova() + (p * 4096) as u64)
            .collect();
        let info = hca.info();
        let (uar, dbr, eqn) = (info.uar, dbrec.iova(), info.eqn);
        // SAFETY: the memory named is `ring` and `dbrec`, which the CQ's object keeps until
        // DESTROY_CQ succeeds (quarantined otherwise); completions go to the HCA's EQ.
        let out = unsafe {
            hca.run_extra::<CreateCq>(0, pages.len() * 8, 0, |i| {
                let mut ctx = i.cq_context_mut();
                ctx.try_set_log_cq_size(log_size)?;
                ctx.try_set_uar_page(uar)?;
                ctx.set_c_eqn_or_apu_element(u32::from(eqn));
                ctx.set_log_page_size(0);
                ctx.set_dbr_addr(dbr);
                for (k, p) in pages.iter().enumerate() {
                    i.set_pas(k, *p)?;
                }
                Ok(())
            })
        }?;
        let cqn = out.cqn();
        let object = Object::new(hca, Kind::Cq(cqn), vec![ring, dbrec]);
        let shared = Shared {
            object,
            id: NEXT_CQ_ID.fetch_add(1, Ordering::Relaxed),
            cqes,
            consumed: AtomicU64::new(0),
        };
        Ok(Cq {
            shared: Arc::new(shared),
            cqes,
            record,
            log_size,
            cqn,
            consumer: 0,
            consumed: 0,
            uar_offset: uar as usize * 4096,
            arm_sn: 0,
        })
    }

    /// The HCA it belongs to.
    pub fn hca(&self) -> &'h Hca<B> {
        self.shared.hca()
    }

    /// The shared object, for a queue that reports to this CQ.
    pub(crate) fn shared(&self) -> &Arc<Shared<'h, B>> {
        &self.shared
    }

    /// The CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Entries in the ring.
    pub fn capacity(&self) -> usize {
        1 << self.log_size
    }

    /// Moves up to `max` completions into `out`, then publishes the consumer index once.
    /// Returns how many were read.
    ///
    /// One call reads at most the ring's [`capacity`](Cq::capacity), whatever `max` says: a
    /// device that keeps handing over CQEs (faster than they are read, or ignoring the
    /// consumer index) cannot keep the call going or `out` growing. To drain the CQ, call
    /// until it returns 0.
    pub fn poll(&mut self, max: usize, out: &mut Vec<Completion>) -> usize {
        let max = self.bound(max);
        let mut cur = self.cursor();
        let mut n = 0;
        while n < max && cur.ready::<B::Barriers>() {
            out.push(decode_at(&self.cqes, cur.consumer, self.source(n)));
            cur.advance();
            n += 1;
        }
        self.commit(cur);
        n
    }

    /// As [`Cq::poll`], each completion with its timestamp, the device clock's raw value when
    /// the CQE was written in its queue's format (ticks, or real-time seconds and nanoseconds:
    /// convert with [`Clock::cqe_time_in`](crate::clock::Clock::cqe_time_in)). A call of its
    /// own, so that [`Cq::poll`] reads no more of each CQE than it did. Bounded to the ring's
    /// capacity per call as [`Cq::poll`] is.
    pub fn poll_timestamped(&mut self, max: usize, out: &mut Vec<(Completion, u64)>) -> usize {
        let max = self.bound(max);
        let mut cur = self.cursor();
        let mut n = 0;
        while n < max && cur.ready::<B::Barriers>() {
            let c = decode_at(&self.cqes, cur.consumer, self.source(n));
            out.push((c, cur.timestamp(0)));
            cur.advance();
            n += 1;
        }
        self.commit(cur);
        n
    }

    /// `max` bounded to one pass over the ring: the most one poll reads (the device may have
    /// handed over no more than that before the consumer index is published).
    #[inline(always)]
    fn bound(&self, max: usize) -> usize {
        max.min(self.capacity())
    }

    /// The source of the completion `ahead` CQEs past the consumer index.
    #[inline(always)]
    fn source(&self, ahead: usize) -> Source {
        Source {
            cq: self.shared.id,
            seq: self.consumed + ahead as u64,
        }
    }

    /// A cursor at the consumer index, for a poll loop that keeps its state in registers;
    /// hand it back with [`Cq::commit`].
    #[inline(always)]
    pub(crate) fn cursor(&self) -> Cursor {
        Cursor {
            cqes: self.cqes,
            consumer: self.consumer,
        }
    }

    /// Takes the cursor's position as the consumer index and, if it moved, publishes it.
    /// The count of CQEs consumed is stored for [`Shared::produced`] first: the publication's
    /// to-device barrier orders it before the device may reuse the slots.
    #[inline(always)]
    pub(crate) fn commit(&mut self, c: Cursor) {
        if c.consumer != self.consumer {
            self.consumed += u64::from(c.consumer.wrapping_sub(self.consumer));
            self.shared.consumed.store(self.consumed, Ordering::Release);
            self.consumer = c.consumer;
            self.publish();
        }
    }

    /// Writes a CQE at the consumer index as the device would (owner bit for this pass), for
    /// tests of how the driver treats values it must not trust.
    #[cfg(all(test, feature = "sim"))]
    pub(crate) fn forge(&self, fill: impl FnOnce(&mut Cqe64<mlx5_prm::rt::DeviceBytes<'_>>)) {
        self.forge_at(0, fill)
    }

    /// As [`Cq::forge`], `ahead` CQEs past the consumer index.
    #[cfg(all(test, feature = "sim"))]
    pub(crate) fn forge_at(
        &self,
        ahead: u32,
        fill: impl FnOnce(&mut Cqe64<mlx5_prm::rt::DeviceBytes<'_>>),
    ) {
        let index = self.consumer.wrapping_add(ahead);
        let mut cqe = Cqe64::new_unchecked(self.cqes.slot(index));
        mlx5_prm::rt::BytesMut::write_bytes(cqe.storage_mut(), 0, &[0u8; CQE]);
        fill(&mut cqe);
        cqe.set_owner((index >> self.log_size) & 1 == 1);
    }

    /// The CQE at the consumer index, decoded, if handed over (the slow path: error CQEs).
    pub(crate) fn decode(&self) -> Option<Completion> {
        self.cursor()
            .ready::<B::Barriers>()
            .then(|| decode_at(&self.cqes, self.consumer, self.source(0)))
    }

    /// Writes the consumer index to the doorbell record (the device reads it to know which
    /// slots it may overwrite).
    #[inline]
    pub(crate) fn publish(&self) {
        let ci = CqDoorbellRecordCiWord::new().consumer_index(self.consumer & CI_MASK);
        // The CQEs must be fully read before the device may reuse their slots.
        B::Barriers::to_device();
        // The consumer index word, whole (its other bits are reserved).
        self.record
            .write32::<{ CqDoorbellRecordCiWord::OFFSET }>(0, ci.bits());
    }

    /// Asks for a completion event on the next CQE (or the next solicited one).
    pub fn arm(&mut self, solicited_only: bool) {
        let cmd = if solicited_only {
            CqArmCmd::ReqNotSol
        } else {
            CqArmCmd::ReqNot
        };
        let (sn, ci) = (self.arm_sn & SN_MASK, self.consumer & CI_MASK);
        // The record's arm word first, then (after a barrier, so the record is in memory
        // before the doorbell reaches the device) the doorbell: the same three fields and the
        // CQ number, in one 64-bit store.
        let record = CqDoorbellRecordArmWord::new()
            .arm_sn(sn)
            .arm_cmd(cmd)
            .arm_ci(ci);
        let doorbell = UarPageCqArmWord::new()
            .cq_arm_sn(sn)
            .cq_arm_cmd(cmd)
            .cq_arm_ci(ci)
            .cq_arm_cqn(self.cqn);
        self.record
            .write32::<{ CqDoorbellRecordArmWord::OFFSET }>(0, record.bits());
        B::Barriers::to_device();
        // SAFETY: this CQ's arm doorbell on the HCA's UAR page: it asks for an event on the
        // HCA's EQ, and lets the device write no memory the CQ does not keep.
        unsafe {
            self.hca()
                .backend()
                .mmio()
                .write64(self.uar_offset + UarPageCqArmWord::OFFSET, doorbell.bits())
        };
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }

    /// Destroys the CQ and frees its memory; where the destroy fails the memory is
    /// quarantined (the device may still write it). While queue pairs still report to it the
    /// CQ cannot go: [`Error::InUse`], and it is destroyed with the last of them. (Dropping
    /// the CQ does the same, logging failures.)
    pub fn destroy(self) -> Result<()> {
        match Arc::try_unwrap(self.shared) {
            Ok(mut shared) => shared.object.destroy(),
            Err(shared) => Err(Error::InUse {
                what: "cq",
                users: Arc::strong_count(&shared) - 1,
            }),
        }
    }
}

const _: () = assert!(<Cqe64<[u8; 64]> as View<[u8; 64]>>::SIZE == CQE);

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::backend::SeqCstBarriers;
    use crate::HcaConfig;
    use mlx5_prm::rt::{Bytes, BytesMut};
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// A stand-in producer: writes CQEs the way the device must (owner = pass parity).
    struct Producer {
        index: u32,
    }

    impl Producer {
        fn write(&mut self, ring: &Ring<CQE>, log_size: u8, seq: u16) {
            let mut c = Cqe64::new_unchecked(ring.slot(self.index));
            c.storage_mut().write_bytes(0, &[0u8; 60]);
            c.set_wqe_counter(seq);
            c.set_qpn(0x42);
            c.set_byte_cnt(u32::from(seq) * 3);
            c.set_opcode(CqeOpcode::Req);
            SeqCstBarriers::to_device();
            c.set_owner((self.index >> log_size) & 1 == 1);
            self.index += 1;
        }
    }

    /// Arming writes the record's arm word, then the 64-bit doorbell carrying the same
    /// sequence number, command and index and the CQ number (checked here against the
    /// kernel's layout by hand: sn << 28 | cmd << 24 | ci, then the CQN); the model arms the
    /// CQ it names, so the next completion raises one event.
    #[test]
    fn arming_writes_the_record_then_the_doorbell() {
        let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
        let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
        let mut cq = Cq::create(&hca, 4).unwrap();
        let (uar, cqn) = (hca.info().uar, u64::from(cq.cqn()));
        assert!(!dev.raise_completion(cq.cqn()), "not armed yet");
        cq.consumer = 0xab45_6789; // 0x456789 in 24 bits
        for (round, solicited) in [(0u64, false), (1, true), (2, false), (3, true), (4, false)] {
            cq.arm(solicited);
            let (sn, cmd, ci) = (round & 3, u64::from(solicited), 0x45_6789u64);
            let high = (sn << 28) | (cmd << 24) | ci;
            assert_eq!(dev.last_cq_doorbell(uar), Some((high << 32) | cqn));
            let rec = CqDoorbellRecord::new_unchecked(cq.record.slot(0));
            assert_eq!(rec.storage().read_be32(4), high as u32, "round {round}");
            assert_eq!(
                rec.consumer_index(),
                0,
                "the consumer index word is left alone"
            );
            assert!(dev.raise_completion(cq.cqn()), "armed by round {round}");
            assert!(!dev.raise_completion(cq.cqn()), "one event per arm");
        }
    }

    /// The ring a [`Feeding`] device keeps writing into, and how many more CQEs it writes.
    struct Feed {
        ring: Ring<CQE>,
        log_size: u8,
        producer: Producer,
        left: u32,
    }

    std::thread_local! {
        static FEED: std::cell::RefCell<Option<Feed>> = const { std::cell::RefCell::new(None) };
    }

    /// Barriers of a device that hands over the next CQE each time the driver takes one (at
    /// the from-device barrier after the ownership check), never minding the consumer index:
    /// a device that keeps a poll loop fed.
    struct Feeding;

    impl Barriers for Feeding {
        fn to_device() {
            SeqCstBarriers::to_device()
        }
        fn from_device() {
            SeqCstBarriers::from_device();
            FEED.with(|f| {
                if let Some(f) = f.borrow_mut().as_mut().filter(|f| f.left > 0) {
                    f.left -= 1;
                    let seq = f.producer.index as u16;
                    f.producer.write(&f.ring, f.log_size, seq);
                }
            });
        }
        fn wc_flush() {
            SeqCstBarriers::wc_flush()
        }
    }

    /// The model, its barriers those of [`Feeding`].
    struct FeedingBackend(SimBackend);

    impl Backend for FeedingBackend {
        type Mmio = <SimBackend as Backend>::Mmio;
        type Dma = <SimBackend as Backend>::Dma;
        type Events = <SimBackend as Backend>::Events;
        type Barriers = Feeding;
        fn mmio(&self) -> &Self::Mmio {
            self.0.mmio()
        }
        fn dma(&self) -> &Self::Dma {
            self.0.dma()
        }
        fn events(&self) -> &Self::Events {
            self.0.events()
        }
    }

    /// A device that keeps handing over CQEs cannot keep one poll going: each call, plain or
    /// timestamped, reads at most the ring's capacity, however large `max`.
    #[test]
    fn one_poll_reads_at_most_the_ring() {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let hca = Hca::bring_up(FeedingBackend(be), &HcaConfig::default()).unwrap();
        let log_size = 3;
        let mut cq = Cq::create(&hca, log_size).unwrap();
        let entries = cq.capacity();
        let mut producer = Producer { index: 0 };
        producer.write(&cq.cqes, log_size, 0);
        let feed = Feed {
            ring: cq.cqes,
            log_size,
            producer,
            left: 100 * entries as u32,
        };
        FEED.with(|f| *f.borrow_mut() = Some(feed));
        let mut out = Vec::new();
        assert_eq!(cq.poll(usize::MAX, &mut out), entries);
        assert_eq!(out.len(), entries);
        let mut stamped = Vec::new();
        assert_eq!(cq.poll_timestamped(usize::MAX, &mut stamped), entries);
        assert_eq!(stamped.len(), entries);
        // Each call picks up where the last stopped: nothing lost, nothing read twice.
        let seqs = out.iter().chain(stamped.iter().map(|(c, _)| c));
        assert!(seqs.map(|c| c.wqe_counter).eq(0..2 * entries as u16));
        FEED.with(|f| *f.borrow_mut() = None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Random interleavings of producing and polling, over many ring wraps, against a
        /// reference queue: nothing lost, nothing duplicated, order kept, and the consumer
        /// index the driver publishes is exactly what it consumed. (The CQ is a real one of
        /// the model, which writes nothing to it: no queue reports to it.)
        #[test]
        fn interleavings_match_a_reference_queue(
            log_size in 1u8..5,
            steps in proptest::collection::vec((any::<bool>(), 1usize..40), 1..200),
        ) {
            let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
            let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
            let entries = 1usize << log_size;
            let mut cq = Cq::create(&hca, log_size).unwrap();
            let mut producer = Producer { index: 0 };
            let mut reference: VecDeque<u16> = VecDeque::new();
            let mut seq: u16 = 0;
            let mut out = Vec::new();
            for (produce, n) in steps {
                if produce {
                    // The device never overwrites a CQE the driver has not consumed.
                    let room = entries - reference.len();
                    for _ in 0..n.min(room) {
                        producer.write(&cq.cqes, log_size, seq);
                        reference.push_back(seq);
                        seq = seq.wrapping_add(1);
                    }
                } else {
                    out.clear();
                    let got = cq.poll(n, &mut out);
                    prop_assert_eq!(got, out.len());
                    for c in &out {
                        prop_assert_eq!(Some(c.wqe_counter), reference.pop_front());
                        prop_assert_eq!(c.byte_cnt, u32::from(c.wqe_counter) * 3);
                        prop_assert!(c.status.is_ok());
                    }
                    let published = CqDoorbellRecord::new_unchecked(cq.record.slot(0)).consumer_index();
                    prop_assert_eq!(published, cq.consumer & 0xff_ffff);
                }
            }
            // Drain: everything produced comes out exactly once.
            out.clear();
            cq.poll(usize::MAX, &mut out);
            prop_assert_eq!(out.len(), reference.len());
        }
    }
}
