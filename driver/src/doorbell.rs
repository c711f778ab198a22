//! The send doorbell, shared by RC QPs and Ethernet SQs: the PRM's hand-over order and the
//! two alternating halves of BlueFlame register 0 of the queue's UAR page.
//!
//! Order: WQEs written → to-device barrier → producer counter into the doorbell record →
//! to-device barrier → the doorbell: the last WQE's first 8 bytes as one 64-bit UAR write, or,
//! for a single WQE that fits one basic block, the whole WQE copied into the BlueFlame half
//! (the device then need not read it from memory), followed by a write-combining flush.

use crate::backend::{Backend, Barriers, Mmio};
use mlx5_prm::rt::{Bytes, DeviceBytes};
use mlx5_prm::QpDoorbellRecord;

/// Bytes per send WQE basic block.
pub(crate) const WQEBB: usize = 64;
/// Byte offset of BlueFlame register 0 in a UAR page, and the size of each of its halves.
const BF_OFFSET: usize = 0x800;
const BF_HALF: usize = 0x100;
/// Bytes in a UAR page.
const UAR_PAGE: usize = 4096;

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

    /// Hands the WQEs up to `counter` to the device. `record` is the queue's 8-byte doorbell
    /// record (the send counter is its second dword); `last` the last WQE posted. With `copy`, `last` (one basic
    /// block) is copied whole to the BlueFlame register instead of ringing with its first 8
    /// bytes.
    #[inline(always)]
    pub(crate) fn ring<B: Backend>(
        &mut self,
        be: &B,
        record: DeviceBytes<'_>,
        counter: u16,
        last: DeviceBytes<'_>,
        copy: bool,
    ) {
        B::Barriers::to_device();
        QpDoorbellRecord::new_unchecked(record).set_send_counter(counter);
        B::Barriers::to_device();
        let at = self.uar_offset + BF_OFFSET + self.half * BF_HALF;
        if copy {
            let mut block = [0u64; WQEBB / 8];
            for (k, word) in block.iter_mut().enumerate() {
                *word = last.read_be64(k * 8);
            }
            be.mmio().copy_wc(at, &block);
            B::Barriers::wc_flush();
        } else {
            be.mmio().write64(at, last.read_be64(0));
        }
        self.half ^= 1;
    }
}
