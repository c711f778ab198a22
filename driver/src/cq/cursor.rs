//! Reading a CQ's ring by the owner rule: a [`Cursor`] at a consumer index, and a
//! [`CqeRun`] of CQEs that do not wrap the ring, the hot poll loops' view.

use super::{CQE, INVALID, OP_OWN, TIMESTAMP};
use crate::backend::Barriers;
use crate::ring::{shift_of, Ring, Run};
use mlx5_prm::Cqe64;

/// A position in a CQ's ring, for hot poll loops (see [`Cq::cursor`]).
#[derive(Clone, Copy)]
pub(crate) struct Cursor {
    pub(super) cqes: Ring<CQE>,
    pub(super) consumer: u32,
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
