//! The UAR pages of BAR 0 as the device decodes writes into them: EQ doorbells, the CQ arm
//! doorbell, send doorbells at the start of a BlueFlame register half, and BlueFlame copies.

use crate::bar::{self, uar};
use crate::datapath;
use crate::device::{Core, UarWrite};
use crate::events;
use crate::model::Model;

impl Core {
    /// A 32-bit write into UAR page `index`: an EQ doorbell, or one half of a 64-bit
    /// doorbell written as two dwords (high first), as 32-bit hosts do.
    pub(crate) fn uar_write32(&self, index: u32, offset: usize, value: u32) -> UarWrite {
        let mut m = self.model();
        if !m.uars.contains(index) {
            return UarWrite::Other;
        }
        match offset {
            uar::EQ_ARM => events::eq_doorbell(&mut m, index, value, true),
            uar::EQ_UPDATE => events::eq_doorbell(&mut m, index, value, false),
            o if is_doorbell64(o & !7) => {
                let state = m.uar_state.entry(index);
                if o % 8 == 0 {
                    state.pending_high = Some(value);
                } else if let Some(high) = state.pending_high.take() {
                    let full = (u64::from(high) << 32) | u64::from(value);
                    drop(m);
                    return self.uar_write64(index, o - 4, full);
                }
            }
            _ => {}
        }
        UarWrite::Other
    }

    /// A 64-bit write into UAR page `index`: the CQ arm doorbell, or a send doorbell at the
    /// start of a BlueFlame register half (value: the first 8 bytes of the last WQE's control
    /// segment). Other 64-bit writes into the BlueFlame registers (the rest of a copy written
    /// word by word) carry nothing the device uses.
    pub(crate) fn uar_write64(&self, index: u32, offset: usize, value: u64) -> UarWrite {
        if !is_doorbell64(offset) {
            self.uar_write32(index, offset, (value >> 32) as u32);
            return self.uar_write32(index, offset + 4, value as u32);
        }
        if offset == uar::CQ_DOORBELL {
            let mut m = self.model();
            if m.uars.contains(index) {
                m.uar_state.entry(index).cq_doorbell = Some(value);
                datapath::cq::arm(&mut m, &self.dma, index, value);
            }
            return UarWrite::Other;
        }
        // A send doorbell: checked and run under one lock of the model.
        self.sides(|a, b| {
            if !a.m.uars.contains(index) || !is_send_doorbell(a.m, offset) {
                return UarWrite::Other;
            }
            a.m.uar_state.entry(index).bf_doorbell = Some(value);
            datapath::doorbell(a, b, index, (value as u32) >> 8, None);
            UarWrite::Send
        })
    }

    /// A BlueFlame copy: a whole WQE written at the start of a BlueFlame register half. It
    /// rings the doorbell like its first 8 bytes would, and the device executes the copy
    /// instead of reading the WQE from the ring when it is the next WQE due.
    pub(crate) fn uar_block(&self, index: u32, offset: usize, data: &[u64]) -> UarWrite {
        let Some(&first) = data.first() else {
            return UarWrite::Other;
        };
        // The copy, cut to the register half (at most 1 KiB), on the stack.
        let mut bytes = [0u8; BF_HALF_MAX];
        let mut len = 0;
        for (chunk, w) in bytes.chunks_exact_mut(8).zip(data) {
            chunk.copy_from_slice(&w.to_be_bytes());
            len += 8;
        }
        self.sides(|a, b| {
            if !a.m.uars.contains(index) || !is_send_doorbell(a.m, offset) {
                return UarWrite::Other;
            }
            let room = bf_half(a.m).min(len);
            a.m.uar_state.entry(index).bf_doorbell = Some(first);
            let qn = (first as u32) >> 8;
            datapath::doorbell(a, b, index, qn, Some(&bytes[..room]));
            UarWrite::Send
        })
    }
}

/// True for the UAR offsets of 64-bit doorbells: the CQ arm doorbell and the BlueFlame
/// registers.
fn is_doorbell64(offset: usize) -> bool {
    offset == uar::CQ_DOORBELL || offset >= uar::BF_START
}

/// Bytes in one half of a BlueFlame register (half of 1 << log_bf_reg_size).
fn bf_half(m: &Model) -> usize {
    (1usize << m.gen().log_bf_reg_size().clamp(7, 11)) / 2
}

/// The largest [`bf_half`].
const BF_HALF_MAX: usize = (1 << 11) / 2;

/// True for the start of a BlueFlame register half: 0x800 + k × half, inside the page.
fn is_send_doorbell(m: &Model, offset: usize) -> bool {
    (uar::BF_START..bar::UAR_PAGE_SIZE).contains(&offset)
        && (offset - uar::BF_START) % bf_half(m) == 0
}
