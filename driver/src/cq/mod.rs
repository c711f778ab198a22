//! Completion queues: a power-of-two ring of 64-byte CQEs the device writes, read by the
//! owner-bit rule, with a doorbell record through which the driver publishes its consumer
//! index (once per poll batch) and arms the CQ.
//!
//! The owner rule: the CQE at consumer index `ci` belongs to software when its owner bit
//! equals `(ci >> log_size) & 1`; the parity flips on every pass over the ring. The driver
//! initialises every slot with opcode INVALID and owner 1, so nothing is valid before the
//! device writes it. The rest of a CQE is read only after the owner check and a from-device
//! barrier.

mod completion;
mod cursor;
mod shared;
#[cfg(all(test, feature = "sim"))]
mod tests;

use completion::decode_at;
pub(crate) use completion::Source;
pub use completion::{Completion, CqeError};
pub(crate) use cursor::Cursor;
pub(crate) use shared::Shared;

use crate::backend::{Backend, Barriers, DmaAlloc, Mmio};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::ring::{dword_of, low_bits, Ring};
use crate::undo::{Kind, Object};
use mlx5_prm::cmd::CreateCq;
use mlx5_prm::rt::View;
use mlx5_prm::{
    CqArmCmd, CqDoorbellRecord, CqDoorbellRecordArmWord, CqDoorbellRecordCiWord, Cqe64, CqeOpcode,
    UarPage, UarPageCqArmWord,
};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Writes opcode INVALID and owner 1 into every slot.
fn init_ring(ring: &Ring<CQE>) {
    for i in 0..ring.entries() {
        let mut c = Cqe64::new_unchecked(ring.slot(i));
        c.set_opcode(CqeOpcode::Invalid);
        c.set_owner(true);
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
