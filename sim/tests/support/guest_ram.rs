//! Guest RAM for harnesses that map memory of their own into a device (`DmaBacking::External`)
//! and must catch a DMA write that leaves it: [`RAM`] bytes between two guard areas that are
//! never mapped and hold [`CANARY`] bytes, so a stray write shows as a changed canary.
//!
//! Included by path (`#[path]`) into `sim/tests/drive` (the `device` fuzz target and its
//! property test) and `sim/tests/roce_bad_input` (the `roce_rx` fuzz target and its tests).
//! Each keeps one per thread and clears it for every run: allocating and filling it afresh
//! was most of a short fuzz input's time.

#![allow(dead_code)]

use std::alloc::{alloc, dealloc, Layout};

/// Guest RAM's size.
pub const RAM: usize = 1 << 20;
/// Unmapped bytes on each side of guest RAM, filled with [`CANARY`].
const GUARD: usize = 64 << 10;
pub const CANARY: u8 = 0xa5;

/// A guard's worth of canary bytes, to compare guards with.
static CANARY_FILL: [u8; GUARD] = [CANARY; GUARD];

/// True when every byte of `b` is [`CANARY`]. Compared a block at a time (one `memcmp` each):
/// a byte loop costs a traced comparison per byte in a fuzz build, which made these checks
/// half of each run.
pub fn is_canary(b: &[u8]) -> bool {
    b.chunks(GUARD).all(|c| c == &CANARY_FILL[..c.len()])
}

/// Guest RAM between its guards (one allocation; only the middle is ever mapped).
pub struct GuestRam {
    ptr: *mut u8,
}

impl GuestRam {
    pub fn new() -> GuestRam {
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { alloc(GuestRam::layout()) };
        assert!(!ptr.is_null(), "allocating guest RAM");
        GuestRam { ptr }
    }

    fn layout() -> Layout {
        Layout::from_size_align(RAM + 2 * GUARD, 4096).unwrap()
    }

    /// Guards full of canaries, guest RAM zeroed. Nothing may have it mapped.
    pub fn clear(&self) {
        // SAFETY: all three ranges lie inside the allocation, and no device maps it now.
        unsafe {
            std::ptr::write_bytes(self.ptr, CANARY, GUARD);
            std::ptr::write_bytes(self.ptr.add(GUARD), 0, RAM);
            std::ptr::write_bytes(self.ptr.add(GUARD + RAM), CANARY, GUARD);
        }
    }

    /// The first byte of guest RAM proper: what a device maps, [`RAM`] bytes from here.
    pub fn mapped(&self) -> *mut u8 {
        // SAFETY: GUARD is less than the allocation's size.
        unsafe { self.ptr.add(GUARD) }
    }

    /// No byte of either guard changed since [`GuestRam::clear`].
    pub fn guards_intact(&self) -> bool {
        // SAFETY: the guards lie inside the allocation and are never mapped, and the harnesses
        // run their devices inline on this thread: nothing writes the guards meanwhile.
        let (low, high) = unsafe {
            (
                std::slice::from_raw_parts(self.ptr, GUARD),
                std::slice::from_raw_parts(self.ptr.add(GUARD + RAM), GUARD),
            )
        };
        is_canary(low) && is_canary(high)
    }
}

impl Drop for GuestRam {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`, and freed only here.
        unsafe { dealloc(self.ptr, GuestRam::layout()) };
    }
}
