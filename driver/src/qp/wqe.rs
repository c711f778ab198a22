//! Send WQEs written as whole big-endian words.
//!
//! The generated views set one field at a time, each a checked read-modify-write of its
//! dword; a WQE built that way has to be zeroed first (its reserved bits, and the fields it
//! leaves alone, would otherwise keep whatever the slot held the last time round the ring)
//! and then costs a dozen read-modify-writes. Here each segment a WQE uses is composed in
//! registers and stored as whole 64-bit words, reserved bits as zero: every byte of the `ds`
//! units the device reads is written exactly once, and nothing past them is touched (the
//! device reads no further; a BlueFlame copy carries the rest of the basic block, which the
//! device ignores).
//!
//! Field positions come from the generated layouts' field constants ([`Place::of`], checked
//! when the constants are evaluated, so a field that left its word fails the build), never
//! from hand-written bit numbers. The writer is generic over the storage, so the tests run
//! it on plain arrays next to the generated setters.

use super::post::RemoteAddr;
use crate::doorbell::WQEBB;
use crate::ring::Ring;
use mlx5_prm::rt::{BytesMut, Field};
use mlx5_prm::{
    SendOpcode, WqeAtomicSeg, WqeCompletionMode, WqeCtrlSeg, WqeDataSeg, WqeInlineSeg, WqeRaddrSeg,
};

/// Bytes per segment unit: what the control segment's `ds` counts.
pub(crate) const UNIT: usize = 16;
const _: () = assert!(
    WqeCtrlSeg::SIZE == UNIT
        && WqeRaddrSeg::SIZE == UNIT
        && WqeAtomicSeg::SIZE == UNIT
        && WqeDataSeg::SIZE == UNIT
        && WQEBB % UNIT == 0
);

/// Storage the writer stores whole big-endian 64-bit words into: a send queue's slot, or (in
/// the tests) a plain array.
pub(crate) trait Words {
    /// Stores `value` big-endian at byte `at`.
    fn put64(&mut self, at: usize, value: u64);
}

/// Slot `index` of a send queue's ring: where the driver's WQEs go.
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) ring: Ring<WQEBB>,
    pub(crate) index: u32,
}

impl Words for Slot {
    /// One aligned store: the ring masks the index, and the check of `at` folds away on the
    /// writer's constant offsets.
    #[inline(always)]
    fn put64(&mut self, at: usize, value: u64) {
        self.ring.write_be64(self.index, at, value);
    }
}

impl<const N: usize> Words for [u8; N] {
    fn put64(&mut self, at: usize, value: u64) {
        self.write_be64(at, value);
    }
}

/// Where a field sits in the big-endian 64-bit word at some byte of its layout: the value,
/// masked to the field's width, shifted into place.
#[derive(Clone, Copy)]
struct Place {
    shift: u32,
    mask: u64,
}

impl Place {
    /// Field `f` inside the word at byte `word` (a multiple of 8) of its layout. Only ever
    /// evaluated in constants, so a field outside that word is a build error.
    const fn of(f: Field, word: usize) -> Place {
        let (start, end) = (word * 8, f.bit_offset + f.width as usize);
        assert!(word % 8 == 0 && f.width >= 1 && f.bit_offset >= start && end <= start + 64);
        Place {
            shift: (start + 64 - end) as u32,
            mask: u64::MAX >> (64 - f.width),
        }
    }

    /// `v` in place; bits beyond the field's width are dropped, so no value can reach a
    /// neighbouring field (the generated setters drop them likewise).
    #[inline(always)]
    const fn put(self, v: u64) -> u64 {
        (v & self.mask) << self.shift
    }
}

// Control segment: word 0 is the first 8 bytes (opmod, wqe_index, opcode, qpn, ds), also what
// rings the doorbell; word 1 the rest (signature, fm, ce, se, imm). opmod, signature, fm and
// se stay zero, as for every request this driver posts.
const CTRL_WQE_INDEX: Place = Place::of(WqeCtrlSeg::WQE_INDEX, 0);
const CTRL_OPCODE: Place = Place::of(WqeCtrlSeg::OPCODE, 0);
const CTRL_QPN: Place = Place::of(WqeCtrlSeg::QPN, 0);
const CTRL_DS: Place = Place::of(WqeCtrlSeg::DS, 0);
const CTRL_CE: Place = Place::of(WqeCtrlSeg::CE, 8);
const CTRL_IMM: Place = Place::of(WqeCtrlSeg::IMM, 8);
// Remote address segment: the address, then the key in the top half of word 1 (its low half
// reserved).
const RADDR: Place = Place::of(WqeRaddrSeg::RADDR, 0);
const RKEY: Place = Place::of(WqeRaddrSeg::RKEY, 8);
// Atomic segment: swap or add value, then compare value.
const SWAP_ADD: Place = Place::of(WqeAtomicSeg::SWAP_ADD, 0);
const COMPARE: Place = Place::of(WqeAtomicSeg::COMPARE, 8);
// Data segment: length and key, then the address.
const DATA_BYTE_COUNT: Place = Place::of(WqeDataSeg::BYTE_COUNT, 0);
const DATA_LKEY: Place = Place::of(WqeDataSeg::LKEY, 0);
const DATA_ADDR: Place = Place::of(WqeDataSeg::ADDR, 8);
// Inline segment: its header dword is the top half of word 0; the data follows it.
const INLINE_FLAG: Place = Place::of(WqeInlineSeg::INLINE, 0);
const INLINE_BYTE_COUNT: Place = Place::of(WqeInlineSeg::BYTE_COUNT, 0);
/// Byte offset of the inline data in its segment.
pub(crate) const INLINE_DATA: usize = WqeInlineSeg::DATA.bit_offset / 8;
const _: () = assert!(INLINE_DATA == 4 && WqeInlineSeg::DATA.bit_offset % 8 == 0);

/// The remote segments of a request: none (SEND), an address (RDMA), or an address and the
/// atomic operands.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Remote {
    None,
    Addr(RemoteAddr),
    /// The address, the swap (compare-and-swap) or add (fetch-and-add) value, and the compare
    /// value (zero for fetch-and-add).
    Atomic(RemoteAddr, u64, u64),
}

/// The last segment of a request: the local side of the data.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Local<'a> {
    /// No local buffer.
    None,
    /// The data, carried in the WQE itself (its length checked by the caller: it must fit
    /// the basic block after the segments before it).
    Inline(&'a [u8]),
    /// A buffer by key and IO address.
    Gather { len: u32, lkey: u32, addr: u64 },
}

/// One send WQE, by value: what [`SendWqe::write`] stores.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendWqe<'a> {
    pub(crate) opcode: SendOpcode,
    pub(crate) imm: u32,
    /// The producer counter at this WQE (its `wqe_index`).
    pub(crate) index: u16,
    pub(crate) qpn: u32,
    /// A completion for this request (else only on error).
    pub(crate) signaled: bool,
    pub(crate) remote: Remote,
    pub(crate) local: Local<'a>,
}

impl SendWqe<'_> {
    /// Stores the WQE at the start of `wqe` (one basic block, or at least its used units) as
    /// whole words and returns its size in units (`ds`). The offsets are constants for each
    /// shape of request, so on a slot of a fixed size the bounds checks fold away.
    ///
    /// # Panics
    ///
    /// If inline data does not fit the basic block (the caller checks the limits first), or
    /// `wqe` is shorter than the units written.
    #[inline(always)]
    pub(crate) fn write<S: Words>(&self, wqe: &mut S) -> u8 {
        let units = match self.remote {
            Remote::None => 1 + local::<UNIT, S>(wqe, self.local),
            Remote::Addr(r) => {
                raddr::<UNIT, S>(wqe, r);
                2 + local::<{ 2 * UNIT }, S>(wqe, self.local)
            }
            Remote::Atomic(r, swap_add, compare) => {
                raddr::<UNIT, S>(wqe, r);
                wqe.put64(2 * UNIT, SWAP_ADD.put(swap_add));
                wqe.put64(2 * UNIT + 8, COMPARE.put(compare));
                3 + local::<{ 3 * UNIT }, S>(wqe, self.local)
            }
        };
        let ds = units as u8;
        wqe.put64(0, self.ctrl0(ds));
        let ce = if self.signaled {
            WqeCompletionMode::CqUpdate
        } else {
            WqeCompletionMode::OnError
        };
        wqe.put64(
            8,
            CTRL_CE.put(ce.raw().into()) | CTRL_IMM.put(self.imm.into()),
        );
        ds
    }

    /// The control segment's first 8 bytes for a WQE of `ds` units: what rings the doorbell.
    #[inline(always)]
    pub(crate) fn ctrl0(&self, ds: u8) -> u64 {
        CTRL_WQE_INDEX.put(self.index.into())
            | CTRL_OPCODE.put(self.opcode.raw().into())
            | CTRL_QPN.put(self.qpn.into())
            | CTRL_DS.put(ds.into())
    }
}

/// The size in units (`ds`) of the WQE whose control segment begins with `first8`.
#[inline(always)]
pub(crate) fn ctrl_ds(first8: u64) -> usize {
    ((first8 >> CTRL_DS.shift) & CTRL_DS.mask) as usize
}

/// The remote address segment at byte `AT`.
#[inline(always)]
fn raddr<const AT: usize, S: Words>(wqe: &mut S, r: RemoteAddr) {
    wqe.put64(AT, RADDR.put(r.addr));
    wqe.put64(AT + 8, RKEY.put(r.rkey.into()));
}

/// The local segment at byte `AT`; returns its units.
#[inline(always)]
fn local<const AT: usize, S: Words>(wqe: &mut S, local: Local<'_>) -> usize {
    match local {
        Local::None => 0,
        Local::Gather { len, lkey, addr } => {
            let w0 = DATA_BYTE_COUNT.put(len.into()) | DATA_LKEY.put(lkey.into());
            wqe.put64(AT, w0);
            wqe.put64(AT + 8, DATA_ADDR.put(addr));
            1
        }
        Local::Inline(data) => {
            let mut seg = [0u8; WQEBB];
            let units = inline_segment(&mut seg, data);
            for (k, word) in seg[..units * UNIT].chunks_exact(8).enumerate() {
                let word = u64::from_be_bytes(word.try_into().expect("8-byte chunks"));
                wqe.put64(AT + k * 8, word);
            }
            units
        }
    }
}

/// Composes an inline segment in `seg` (zeroed by the caller): header, data, and the zeros
/// up to the end of its last unit. Returns its units. Out of line, and touching only the
/// scratch block, so that the slot's stores stay whole aligned words.
#[inline(never)]
fn inline_segment(seg: &mut [u8; WQEBB], data: &[u8]) -> usize {
    let hdr = INLINE_FLAG.put(1) | INLINE_BYTE_COUNT.put(data.len() as u64);
    seg[..8].copy_from_slice(&hdr.to_be_bytes());
    seg[INLINE_DATA..INLINE_DATA + data.len()].copy_from_slice(data);
    (INLINE_DATA + data.len()).div_ceil(UNIT)
}

#[cfg(test)]
mod tests;
