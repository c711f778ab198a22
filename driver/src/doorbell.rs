//! The send doorbell, shared by RC QPs and Ethernet SQs: the PRM's hand-over order and the
//! two alternating halves of BlueFlame register 0 of the queue's UAR page.
//!
//! Order: WQEs written → to-device barrier → producer counter into the doorbell record →
//! to-device barrier → the doorbell: the last WQE's first 8 bytes as one 64-bit UAR write, or,
//! for a single WQE that fits one basic block, the whole WQE copied into the BlueFlame half
//! (the device then need not read it from memory), followed by a write-combining flush.

use crate::backend::{Backend, Barriers, Mmio};
use crate::ring::{dword_of, shift_of, Ring};
use mlx5_prm::rt::{Bytes, DeviceBytes};
use mlx5_prm::QpDoorbellRecord;

/// Bytes per send WQE basic block.
pub(crate) const WQEBB: usize = 64;
/// Byte offset of BlueFlame register 0 in a UAR page, and the size of each of its halves.
const BF_OFFSET: usize = 0x800;
const BF_HALF: usize = 0x100;
/// Bytes in a UAR page.
const UAR_PAGE: usize = 4096;
/// The doorbell record's send counter, alone in its dword (but for reserved bits).
const SEND_COUNTER: mlx5_prm::rt::Field = QpDoorbellRecord::<[u8; 8]>::SEND_COUNTER;
pub(crate) const SEND_COUNTER_DWORD: usize = dword_of(SEND_COUNTER);
const _: () = assert!(SEND_COUNTER.width == 16 && shift_of(SEND_COUNTER) == 0);

/// Where a send queue rings, and which BlueFlame half is next.
pub(crate) struct SendDoorbell {
    uar_offset: usize,
    half: usize,
}

impl SendDoorbell {
    /// The doorbell of a queue on UAR page `uar`.
    pub(crate) fn new(uar: u32) -> SendDoorbell {
        SendDoorbell {
            uar_offset: uar as usize * UAR_PAGE,
            half: 0,
        }
    }

    /// Hands the WQEs up to `counter` to the device, with BlueFlame: `last`, the last WQE
    /// posted (one basic block), is copied whole to the BlueFlame register, so the device
    /// need not fetch it. `record` is the queue's 8-byte doorbell record (the send counter is
    /// its second dword). Ringing with the WQE's first 8 bytes alone is
    /// [`SendDoorbell::ring_word`].
    ///
    /// # Safety
    ///
    /// `be` is the backend of the HCA that owns the queue, which exists; every WQE up to
    /// `counter` is written in its ring, and the memory each names (packet buffers, posted
    /// regions) is kept until its completion (or quarantined with the queue).
    #[inline(always)]
    pub(crate) unsafe fn ring<B: Backend>(
        &mut self,
        be: &B,
        record: DeviceBytes<'_>,
        counter: u16,
        last: DeviceBytes<'_>,
    ) {
        B::Barriers::to_device();
        QpDoorbellRecord::new_unchecked(record).set_send_counter(counter);
        B::Barriers::to_device();
        let at = self.uar_offset + BF_OFFSET + self.half * BF_HALF;
        let mut block = [0u64; WQEBB / 8];
        for (k, word) in block.iter_mut().enumerate() {
            *word = last.read_be64(k * 8);
        }
        // SAFETY: the queue's own BlueFlame half, with the caller's promise.
        unsafe { be.mmio().copy_wc(at, &block) };
        B::Barriers::wc_flush();
        self.half ^= 1;
    }

    /// [`SendDoorbell::ring`] without the copy, for a caller that knows the last WQE's first
    /// 8 bytes (`first8`, as [`Bytes::read_be64`] would read them): the same order, and the
    /// counter written to `record` (the queue's doorbell record) as one dword.
    ///
    /// # Safety
    ///
    /// As for [`SendDoorbell::ring`].
    #[inline(always)]
    pub(crate) unsafe fn ring_word<B: Backend>(
        &mut self,
        be: &B,
        record: Ring<8>,
        counter: u16,
        first8: u64,
    ) {
        B::Barriers::to_device();
        record.write32::<SEND_COUNTER_DWORD>(0, u32::from(counter));
        B::Barriers::to_device();
        let at = self.uar_offset + BF_OFFSET + self.half * BF_HALF;
        // SAFETY: the queue's own BlueFlame half, with the caller's promise.
        unsafe { be.mmio().write64(at, first8) };
        self.half ^= 1;
    }
}
