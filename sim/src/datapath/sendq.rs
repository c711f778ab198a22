//! Send queues as rings of 64-byte WQE basic blocks: the producer counter the driver publishes
//! in dword 1 of the doorbell record, reading a WQE (which may wrap around the end of the
//! ring), and parsing its gather list.

use crate::dma::{DmaSpace, Held};
use crate::pas::PageList;
use crate::stackvec::StackVec;
use mlx5_prm::rt::Bytes as _;
use std::ops::Deref;
use std::sync::atomic::{fence, Ordering};

/// Bytes per WQEBB.
pub(crate) const WQEBB: u64 = mlx5_prm::SEND_WQE_BB;
/// Bytes per DS unit.
pub(crate) const DS: usize = mlx5_prm::SEND_WQE_DS as usize;

/// The send counter: dword 1 (byte 4) of the doorbell record, low 16 bits.
pub(crate) fn counter(dma: &DmaSpace, dbr: u64) -> Option<u16> {
    let at = dbr.checked_add(4)?;
    let pc = dma.window(at, 4)?.read_be32(0) as u16;
    posted();
    Some(pc)
}

/// After reading a producer counter, before reading the WQEs it covers: an acquire fence,
/// paired with the driver's release fence between WQEs and record. The doorbell's own
/// hand-over (the job queue, or the driver's thread) orders only the WQEs up to the one it
/// names; the counter may already cover later ones (tests/tests/loom_doorbell.rs,
/// `weak_send_device_without_acquire_on_record`). On x86-64 it costs no instruction.
#[inline(always)]
pub(crate) fn posted() {
    fence(Ordering::Acquire);
}

/// [`counter`] for a run of the queue that reads it more than once: through the window
/// `held` keeps while it is valid (see [`Held`]), else through a new one, then kept.
pub(crate) fn counter_held<'d>(
    dma: &'d DmaSpace,
    dbr: u64,
    held: &mut Option<Held<'d>>,
) -> Option<u16> {
    if let Some(w) = held.as_ref().and_then(|h| dma.held(h)) {
        let pc = w.read_be32(0) as u16;
        posted();
        return Some(pc);
    }
    let h = dma.hold(dbr.checked_add(4)?, 4)?;
    let pc = h.window().read_be32(0) as u16;
    posted();
    *held = Some(h);
    Some(pc)
}

/// The DS count of a WQE (control segment byte 7, bits 5:0).
pub(crate) fn ds(wqe: &[u8]) -> usize {
    usize::from(wqe.get(7).copied().unwrap_or(0) & 0x3f)
}

/// WQEBBs a WQE occupies (at least one, even for a malformed DS of 0).
pub(crate) fn wqebbs(wqe: &[u8]) -> u16 {
    (ds(wqe).div_ceil(4) as u16).max(1)
}

/// The wqe_index of a control segment.
pub(crate) fn index_of(wqe: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*wqe.get(1)?, *wqe.get(2)?]))
}

/// The opcode of a control segment.
pub(crate) fn opcode(wqe: &[u8]) -> u8 {
    wqe.get(3).copied().unwrap_or(0)
}

/// Largest WQE: a DS count of 63 rounds up to 16 blocks.
const MAX_WQE: usize = 16 * WQEBB as usize;

/// One WQE's bytes, whole blocks, in a buffer the caller keeps for a whole run of the queue
/// (a WQE per frame made a heap allocation per frame).
#[derive(Clone)]
pub(crate) struct Wqe {
    buf: [u8; MAX_WQE],
    len: usize,
}

impl Wqe {
    /// An empty buffer.
    pub fn new() -> Wqe {
        Wqe {
            buf: [0u8; MAX_WQE],
            len: 0,
        }
    }

    /// Holds a copy of `bytes` (a BlueFlame copy), truncated to the largest WQE.
    pub fn copy_from(&mut self, bytes: &[u8]) {
        let len = bytes.len().min(MAX_WQE);
        self.buf[..len].copy_from_slice(&bytes[..len]);
        self.len = len;
    }
}

impl Deref for Wqe {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Reads the WQE at WQEBB counter `index` of a ring of 2^`log_size` blocks that starts `base`
/// bytes into `ring` into `wqe`: its first block, then as many more as its DS count needs,
/// wrapping at the end of the ring. The result holds whole blocks (at least DS × 16 bytes).
/// False when a block is not mapped.
pub(crate) fn read(
    dma: &DmaSpace,
    ring: &PageList,
    base: u64,
    log_size: u8,
    index: u16,
    wqe: &mut Wqe,
) -> bool {
    let size = 1u64 << log_size.min(16);
    let block = |k: u64, out: &mut [u8]| {
        // A mask, not `%`: the size is a power of two the compiler cannot see, and a division
        // per block was a visible cost.
        let slot = (u64::from(index) + k) & (size - 1);
        ring.addr(base + slot * WQEBB, WQEBB)
            .is_some_and(|a| dma.read_dwords(a, out))
    };
    wqe.len = 0;
    if !block(0, &mut wqe.buf[..WQEBB as usize]) {
        return false;
    }
    let n = u64::from(wqebbs(&wqe.buf));
    for k in 1..n {
        let at = (k * WQEBB) as usize;
        if !block(k, &mut wqe.buf[at..at + WQEBB as usize]) {
            return false;
        }
    }
    wqe.len = (n * WQEBB) as usize;
    true
}

/// One element of a gather list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Inline data: the bytes `start .. end` of the WQE.
    Inline { start: usize, end: usize },
    /// A data segment.
    Data { len: u32, lkey: u32, addr: u64 },
}

/// An empty inline piece: the filler of unused slots in [`Pieces`].
impl Default for Piece {
    fn default() -> Piece {
        Piece::Inline { start: 0, end: 0 }
    }
}

impl Piece {
    /// Bytes the piece contributes.
    pub fn len(&self) -> u64 {
        match *self {
            Piece::Inline { start, end } => (end - start) as u64,
            Piece::Data { len, .. } => u64::from(len),
        }
    }
}

/// A gather list, collected (for the RC path; the Ethernet path walks [`gather`] twice).
pub(crate) type Pieces = StackVec<Piece, 4>;

/// A data or inline segment overruns the WQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overrun;

/// Parses the data and inline segments of `wqe[start..end]`. An inline segment is a word with
/// bit 31 set and the byte count in bits 30:0, the data right after it, padded to 16 bytes;
/// data segments of length 0 are skipped. `None` when a segment overruns the WQE.
pub(crate) fn gather_list(wqe: &[u8], start: usize, end: usize) -> Option<Pieces> {
    let mut pieces = Pieces::new();
    for p in gather(wqe, start, end) {
        pieces.push(p.ok()?);
    }
    Some(pieces)
}

/// The segments of [`gather_list`] one by one, without collecting them (a list of pieces
/// built per frame cost more than walking the WQE twice); an [`Overrun`] ends the walk.
pub(crate) fn gather(wqe: &[u8], start: usize, end: usize) -> Gather<'_> {
    Gather {
        end: end.min(wqe.len()),
        wqe,
        at: start,
    }
}

/// The walk of [`gather`].
#[derive(Debug, Clone)]
pub(crate) struct Gather<'w> {
    wqe: &'w [u8],
    at: usize,
    end: usize,
}

impl Iterator for Gather<'_> {
    type Item = Result<Piece, Overrun>;

    /// Always inlined: a piece returned through memory stalled on store forwarding.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        while self.at + 4 <= self.end {
            let p = self.at;
            let word = self.wqe.read_be32(p);
            if word & 0x8000_0000 != 0 {
                let len = (word & 0x7fff_ffff) as usize;
                let data = p + 4;
                if len > self.end - data {
                    self.at = self.end;
                    return Some(Err(Overrun));
                }
                self.at += (4 + len).div_ceil(DS) * DS;
                if len > 0 {
                    return Some(Ok(Piece::Inline {
                        start: data,
                        end: data + len,
                    }));
                }
            } else {
                if p + DS > self.end {
                    self.at = self.end;
                    return Some(Err(Overrun));
                }
                self.at += DS;
                if word > 0 {
                    return Some(Ok(Piece::Data {
                        len: word,
                        lkey: self.wqe.read_be32(p + 4),
                        addr: self.wqe.read_be64(p + 8),
                    }));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_lists_mix_inline_and_data() {
        let mut w = vec![0u8; 96];
        // Inline of 13 bytes at 16 (padded to 32 bytes), then a data segment at 48.
        w[16..20].copy_from_slice(&(0x8000_0000u32 | 13).to_be_bytes());
        w[48..52].copy_from_slice(&100u32.to_be_bytes());
        w[52..56].copy_from_slice(&0x1234u32.to_be_bytes());
        w[56..64].copy_from_slice(&0xabcdu64.to_be_bytes());
        let l = gather_list(&w, 16, 64).unwrap();
        assert_eq!(
            &l[..],
            &[
                Piece::Inline { start: 20, end: 33 },
                Piece::Data {
                    len: 100,
                    lkey: 0x1234,
                    addr: 0xabcd
                }
            ]
        );
        // An inline segment longer than the WQE.
        w[16..20].copy_from_slice(&(0x8000_0000u32 | 200).to_be_bytes());
        assert!(gather_list(&w, 16, 64).is_none());
    }
}
