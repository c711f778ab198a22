//! Word access to a ring of fixed-size slots in DMA memory, for the data path.
//!
//! The generated views check every access against their window and handle unaligned windows,
//! which costs a few instructions per field; on the data path that is most of the budget. A
//! [`Ring`] knows more: its memory is aligned and a whole number of slots long, a slot index is
//! masked to the ring, and the offset inside a slot is a constant checked against the slot size
//! at compile time. So each access here is one aligned relaxed atomic load or store (`mlx5_prm::rt::shared`), with the byte
//! order conversion, and nothing else. Offsets come from the generated layouts' field
//! constants ([`dword_of`], [`shift_of`]), never from hand-written numbers.
//!
//! A hot loop over consecutive slots takes a [`Run`] instead: slots that do not wrap, checked
//! once ([`Ring::run`]), then addressed by their number in the run without masking.

use crate::backend::DmaBuf;
use mlx5_prm::rt::{shared, DeviceBytes, Field};
use std::ptr::NonNull;

/// `SLOT`-byte slots over DMA memory. Holds a raw pointer: the owner keeps the [`DmaBuf`]
/// alive (and unfreed) for as long as the ring is used. Copies are for hot loops (so the
/// compiler keeps base and mask in registers); they live no longer than the owner's borrow.
#[derive(Clone, Copy)]
pub(crate) struct Ring<const SLOT: usize> {
    base: NonNull<u8>,
    mask: u32,
}

// SAFETY: like DmaBuf, an address range reached only through atomic operations by its one
// owner.
unsafe impl<const SLOT: usize> Send for Ring<SLOT> {}

/// Byte offset of the dword holding `f` (a field inside one dword, or a 64-bit field).
pub(crate) const fn dword_of(f: Field) -> usize {
    f.bit_offset / 32 * 4
}

/// Left shift of `f` inside its dword.
pub(crate) const fn shift_of(f: Field) -> u32 {
    32 - (f.bit_offset % 32) as u32 - f.width
}

/// The values `f` holds (1 to 32 bits wide), as a mask of its low bits: what a counter kept
/// wider is reduced to before it goes into the field.
pub(crate) const fn low_bits(f: Field) -> u32 {
    assert!(f.width >= 1 && f.width <= 32);
    u32::MAX >> (32 - f.width)
}

impl<const SLOT: usize> Ring<SLOT> {
    /// A ring of `entries` (a power of two) slots at the start of `buf`.
    ///
    /// # Safety
    ///
    /// The caller must keep `buf` alive and unfreed while the ring is used.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than the ring, or not aligned to 8 bytes, or `entries` is not a
    /// power of two.
    pub(crate) unsafe fn over(buf: &DmaBuf, entries: usize) -> Ring<SLOT> {
        const { assert!(SLOT.is_power_of_two() && SLOT >= 8) };
        assert!(entries.is_power_of_two() && entries <= 1 << 24);
        assert!(buf.len() >= entries * SLOT && buf.va().as_ptr() as usize % 8 == 0);
        Ring {
            base: buf.va(),
            mask: entries as u32 - 1,
        }
    }

    /// A ring of `entries` (a power of two) slots starting `offset` bytes into `buf`: a queue
    /// that shares its buffer with another, as an RC QP's send queue follows its receive queue
    /// in one allocation.
    ///
    /// # Safety
    ///
    /// As [`Ring::over`]: the caller must keep `buf` alive and unfreed while the ring is used.
    ///
    /// # Panics
    ///
    /// If the ring does not fit in `buf` from `offset`, or does not start 8-aligned, or
    /// `entries` is not a power of two.
    pub(crate) unsafe fn over_at(buf: &DmaBuf, offset: usize, entries: usize) -> Ring<SLOT> {
        const { assert!(SLOT.is_power_of_two() && SLOT >= 8) };
        assert!(entries.is_power_of_two() && entries <= 1 << 24);
        let end = offset.checked_add(entries * SLOT);
        assert!(end.is_some_and(|end| end <= buf.len()));
        let base = buf.va().as_ptr().wrapping_add(offset);
        assert!(base as usize % 8 == 0);
        Ring {
            // SAFETY: `offset` is inside the buffer (checked above), so `base` is an address in
            // it, hence not null.
            base: unsafe { NonNull::new_unchecked(base) },
            mask: entries as u32 - 1,
        }
    }

    #[inline(always)]
    fn at<const AT: usize, const N: usize>(&self, index: u32) -> *mut u8 {
        const { assert!(AT % N == 0 && AT + N <= SLOT) };
        let slot = (index & self.mask) as usize;
        // SAFETY: slot <= mask, and `over` checked that the buffer holds mask + 1 slots.
        unsafe { self.base.as_ptr().add(slot * SLOT + AT) }
    }

    /// Writes the big-endian dword at byte `AT` of slot `index` (masked).
    #[inline(always)]
    pub(crate) fn write32<const AT: usize>(&self, index: u32, value: u32) {
        let p = self.at::<AT, 4>(index) as *mut u32;
        // SAFETY: in the ring, 4-aligned (slot and AT are), valid for atomic writes.
        unsafe { shared::store32(p, value.to_be()) }
    }

    /// Stores `raw`, a 64-bit quantity already in the device's (big-endian) byte order, at
    /// byte `AT` of slot `index` (masked).
    #[inline(always)]
    pub(crate) fn write64_raw<const AT: usize>(&self, index: u32, raw: u64) {
        let p = self.at::<AT, 8>(index) as *mut u64;
        // SAFETY: in the ring, 8-aligned, valid for atomic writes.
        unsafe { shared::store64(p, raw) }
    }

    /// Stores `value` big-endian at byte `at` of slot `index` (masked), for writers whose
    /// offsets become constants only once inlined (a WQE writer generic over its storage):
    /// the check of `at` then folds away, leaving one aligned store as [`Ring::write64_raw`].
    ///
    /// # Panics
    ///
    /// If `at` is not a multiple of 8 or the 8 bytes run past the slot.
    #[inline(always)]
    pub(crate) fn write_be64(&self, index: u32, at: usize, value: u64) {
        assert!(at % 8 == 0 && at < SLOT, "a 64-bit store off its slot");
        let slot = (index & self.mask) as usize;
        // SAFETY: slot <= mask, and `over`/`over_at` checked that the buffer holds mask + 1
        // slots from an 8-aligned base; `at` is 8-aligned and its 8 bytes end inside the slot
        // (SLOT is a power of two >= 8, so `at < SLOT` with `at % 8 == 0` means at + 8 <= SLOT).
        let p = unsafe { self.base.as_ptr().add(slot * SLOT + at) } as *mut u64;
        // SAFETY: in the ring, 8-aligned, valid for atomic writes.
        unsafe { shared::store64(p, value.to_be()) }
    }

    /// Reads the big-endian dword at byte `AT` of slot `index` (masked).
    #[inline(always)]
    pub(crate) fn read32<const AT: usize>(&self, index: u32) -> u32 {
        let p = self.at::<AT, 4>(index) as *const u32;
        // SAFETY: in the ring, 4-aligned, valid for atomic reads.
        u32::from_be(unsafe { shared::load32(p) })
    }

    /// Slot `index` (masked) as bytes, for the generated views (slow paths: decoding an error
    /// CQE, setting a ring up).
    pub(crate) fn slot(&self, index: u32) -> DeviceBytes<'_> {
        // SAFETY: a whole slot inside the ring (`at` masks the index), valid while the owner
        // holds the memory (this ring's contract), reached only by atomic accesses.
        unsafe { DeviceBytes::new(self.at::<0, 1>(index), SLOT) }
    }

    /// Slots in the ring.
    #[inline(always)]
    pub(crate) fn entries(&self) -> u32 {
        self.mask + 1
    }

    /// Slots from `index` (masked) to the end of the ring: at least 1.
    #[inline(always)]
    pub(crate) fn until_wrap(&self, index: u32) -> usize {
        (self.mask - (index & self.mask)) as usize + 1
    }

    /// The `len` slots from `index` (masked) on, which must not wrap.
    ///
    /// # Panics
    ///
    /// If `len` is more than [`Ring::until_wrap`].
    #[inline(always)]
    pub(crate) fn run(&self, index: u32, len: usize) -> Run<SLOT> {
        assert!(
            len <= self.until_wrap(index),
            "a run must not wrap the ring"
        );
        Run {
            first: self.at::<0, 1>(index),
            len,
        }
    }
}

/// Consecutive slots of a [`Ring`] that do not wrap, for loops over `0..len`: slot `k` is at a
/// fixed stride from the first, so an access is one load or store with no masking, and its
/// bounds check (`k < len`) is one the compiler removes in such a loop. Like the ring, it
/// lives no longer than the owner's borrow.
#[derive(Clone, Copy)]
pub(crate) struct Run<const SLOT: usize> {
    first: *mut u8,
    len: usize,
}

impl<const SLOT: usize> Run<SLOT> {
    #[inline(always)]
    fn at<const AT: usize, const N: usize>(&self, k: usize) -> *mut u8 {
        const { assert!(AT % N == 0 && AT + N <= SLOT) };
        assert!(k < self.len, "past the end of a run");
        // SAFETY: k < len, and `Ring::run` checked that the run's `len` slots are in the ring.
        unsafe { self.first.add(k * SLOT + AT) }
    }

    /// Writes the big-endian dword at byte `AT` of slot `k`.
    #[inline(always)]
    pub(crate) fn write32<const AT: usize>(&self, k: usize, value: u32) {
        let p = self.at::<AT, 4>(k) as *mut u32;
        // SAFETY: in the ring, 4-aligned, valid for atomic writes.
        unsafe { shared::store32(p, value.to_be()) }
    }

    /// Stores `raw`, a dword already in the device's (big-endian) byte order, at byte `AT`
    /// of slot `k`.
    #[inline(always)]
    pub(crate) fn write32_raw<const AT: usize>(&self, k: usize, raw: u32) {
        let p = self.at::<AT, 4>(k) as *mut u32;
        // SAFETY: in the ring, 4-aligned, valid for atomic writes.
        unsafe { shared::store32(p, raw) }
    }

    /// As [`Ring::write64_raw`].
    #[inline(always)]
    pub(crate) fn write64_raw<const AT: usize>(&self, k: usize, raw: u64) {
        let p = self.at::<AT, 8>(k) as *mut u64;
        // SAFETY: in the ring, 8-aligned, valid for atomic writes.
        unsafe { shared::store64(p, raw) }
    }

    /// Reads the big-endian dword at byte `AT` of slot `k`.
    #[inline(always)]
    pub(crate) fn read32<const AT: usize>(&self, k: usize) -> u32 {
        u32::from_be(self.read32_raw::<AT>(k))
    }

    /// Reads the dword at byte `AT` of slot `k` as it is, in the device's byte order.
    #[inline(always)]
    pub(crate) fn read32_raw<const AT: usize>(&self, k: usize) -> u32 {
        let p = self.at::<AT, 4>(k) as *const u32;
        // SAFETY: in the ring, 4-aligned, valid for atomic reads.
        unsafe { shared::load32(p) }
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::backend::{Backend, DmaAlloc};
    use mlx5_prm::rt::Bytes;
    use mlx5_prm::{Cqe64, WqeCtrlSeg, WqeDataSeg};

    #[test]
    fn offsets_from_field_constants_match_the_generated_accessors() {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let buf = be.dma().alloc(4096, 4096).unwrap();
        // SAFETY: 64 slots of 64 bytes fill the 4 KiB buffer, which outlives the ring.
        let ring: Ring<64> = unsafe { Ring::over(&buf, 64) };
        const IDX: usize = dword_of(WqeCtrlSeg::WQE_INDEX);
        const ADDR: usize = 32 + dword_of(WqeDataSeg::ADDR);
        // Index 70 wraps to slot 6.
        ring.write32::<IDX>(70, 0xbeef << shift_of(WqeCtrlSeg::WQE_INDEX));
        ring.write64_raw::<ADDR>(70, 0x1122_3344_5566_7788u64.to_be());
        let ctrl = WqeCtrlSeg::new_unchecked(buf.slice(6 * 64, 16));
        assert_eq!(ctrl.wqe_index(), 0xbeef);
        let data = WqeDataSeg::new_unchecked(buf.slice(6 * 64 + 32, 16));
        assert_eq!(data.addr(), 0x1122_3344_5566_7788);
        assert_eq!(
            dword_of(Cqe64::WQE_COUNTER),
            60,
            "wqe_counter shares the last dword with opcode and owner"
        );
        assert_eq!(buf.slice(6 * 64, 4).read_be32(0) >> 8, 0xbeef);
        drop(buf);
    }

    #[test]
    fn a_ring_at_an_offset_addresses_its_slots_from_there() {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let buf = be.dma().alloc(4096, 4096).unwrap();
        // SAFETY: 8 slots of 64 bytes from byte 512 fit the 4 KiB buffer, which outlives the
        // ring.
        let ring: Ring<64> = unsafe { Ring::over_at(&buf, 512, 8) };
        // Index 9 wraps to slot 1.
        ring.write_be64(9, 16, 0x1122_3344_5566_7788);
        assert_eq!(
            buf.slice(512 + 64 + 16, 8).read_be64(0),
            0x1122_3344_5566_7788
        );
        assert_eq!(ring.read32::<20>(1), 0x5566_7788);
        let off_slot = std::panic::catch_unwind(|| ring.write_be64(0, 64, 0));
        assert!(off_slot.is_err(), "a store past the slot is refused");
        use std::panic::AssertUnwindSafe;
        let too_long = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: refused (it panics) before a ring exists.
            unsafe { Ring::<64>::over_at(&buf, 3584, 16) }
        }));
        assert!(too_long.is_err(), "a ring past the buffer's end is refused");
        let misaligned = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: refused (it panics) before a ring exists.
            unsafe { Ring::<64>::over_at(&buf, 4, 8) }
        }));
        assert!(
            misaligned.is_err(),
            "a ring off 8-byte alignment is refused"
        );
        drop(buf);
    }

    #[test]
    fn a_run_addresses_the_ring_slots_it_covers_and_must_not_wrap() {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let buf = be.dma().alloc(4096, 4096).unwrap();
        // SAFETY: 64 slots of 64 bytes fill the 4 KiB buffer, which outlives the ring.
        let ring: Ring<64> = unsafe { Ring::over(&buf, 64) };
        // Index 125 is slot 61: three slots to the end.
        assert_eq!(ring.until_wrap(125), 3);
        let run = ring.run(125, 3);
        for k in 0..3 {
            run.write32::<4>(k, 0x100 + k as u32);
            run.write32_raw::<8>(k, (0x200 + k as u32).to_be());
        }
        for k in 0..3u32 {
            assert_eq!(ring.read32::<4>(125 + k), 0x100 + k);
            assert_eq!(ring.read32::<8>(125 + k), 0x200 + k);
            assert_eq!(run.read32::<4>(k as usize), 0x100 + k);
        }
        let wraps = std::panic::catch_unwind(|| ring.run(125, 4));
        assert!(wraps.is_err(), "a run past the ring's end is refused");
        drop(buf);
    }
}
