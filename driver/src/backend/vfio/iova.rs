//! IO virtual addresses for the type-1 IOMMU: the backend chooses them, so it needs an
//! allocator. Ranges are handed out from a window above 4 GiB (clear of the low PCI hole and
//! the MSI window at 0xfee0_0000); a freed range goes to a list for its size and is reused by
//! the next request of that size it satisfies, so a driver that frees and allocates the same
//! buffers in a loop never walks through the address space.

use std::collections::HashMap;

/// The first IOVA handed out.
pub const BASE: u64 = 1 << 32;
/// One past the last: 2^39, the smallest address width IOMMUs offer (Intel's 3-level tables,
/// QEMU's default).
pub const END: u64 = 1 << 39;

/// An IOVA allocator.
#[derive(Debug)]
pub struct IovaSpace {
    next: u64,
    end: u64,
    free: HashMap<u64, Vec<u64>>,
}

impl Default for IovaSpace {
    fn default() -> Self {
        IovaSpace::new(BASE, END)
    }
}

impl IovaSpace {
    /// The window `base .. end`.
    pub fn new(base: u64, end: u64) -> IovaSpace {
        IovaSpace {
            next: base,
            end,
            free: HashMap::new(),
        }
    }

    /// `len` bytes aligned to `align` (a power of two); `None` when the window is spent.
    pub fn alloc(&mut self, len: u64, align: u64) -> Option<u64> {
        debug_assert!(align.is_power_of_two());
        if let Some(list) = self.free.get_mut(&len) {
            if let Some(i) = list.iter().rposition(|iova| iova % align == 0) {
                return Some(list.swap_remove(i));
            }
        }
        let start = self.next.checked_add(align - 1)? & !(align - 1);
        let end = start.checked_add(len)?;
        if end > self.end {
            return None;
        }
        self.next = end;
        Some(start)
    }

    /// Takes back a range [`IovaSpace::alloc`] gave.
    pub fn free(&mut self, iova: u64, len: u64) {
        self.free.entry(len).or_default().push(iova);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_aligned_disjoint_and_reused() {
        let mut s = IovaSpace::default();
        let a = s.alloc(4096, 4096).unwrap();
        let b = s.alloc(8192, 1 << 21).unwrap();
        assert_eq!(a, BASE);
        assert_eq!(b % (1 << 21), 0);
        assert!(b >= a + 4096);
        s.free(b, 8192);
        // Same size: the freed range again, if aligned enough.
        assert_eq!(s.alloc(8192, 4096), Some(b));
        s.free(a, 4096);
        // BASE is 2^32: not aligned to 2^33.
        let c = s.alloc(4096, 1 << 33).unwrap();
        assert_eq!(c % (1 << 33), 0);
        assert_ne!(c, a, "a range not aligned enough is not reused");
    }

    #[test]
    fn the_window_runs_out_as_none() {
        let mut s = IovaSpace::new(0x1000, 0x4000);
        assert_eq!(s.alloc(0x2000, 0x1000), Some(0x1000));
        assert_eq!(s.alloc(0x2000, 0x1000), None);
        assert_eq!(s.alloc(u64::MAX, 0x1000), None);
        assert_eq!(s.alloc(0x1000, 0x1000), Some(0x3000));
    }
}
