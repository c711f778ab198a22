//! A lock-free cache of IOVA translations for [`DmaSpace::window`](super::DmaSpace::window).
//!
//! The data path touches a handful of regions per frame (rings, doorbell records, buffers),
//! and finding a region under the space's mutex in a map of thousands of regions cost more
//! than the rest of a frame's work. The cache maps a 4 KiB page number to the region that
//! holds it, in a direct-mapped array of slots read without any lock.
//!
//! Each slot is a sequence lock: its writer (always holding the space's mutex, so writers
//! never race each other) makes the sequence odd, stores the fields, and makes it even again;
//! a reader that sees an odd sequence, or a different sequence after reading the fields,
//! misses. Every slot also records the space's epoch at fill time, and unmapping a region
//! bumps the epoch, so no translation survives a `free`: a later access faults exactly as
//! without the cache. Regions are only added otherwise, and a slot is only ever filled with
//! a region that really holds its page, so an added region cannot make a slot wrong.

use std::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Number of slots (a power of two); a frame's working set is far smaller.
const SLOTS: usize = 512;
/// log2 of the page the cache is keyed by.
const PAGE_SHIFT: u32 = 12;

/// Where a cached region lives: its first IOVA, its length and its host address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hit {
    pub iova: u64,
    pub size: usize,
    pub ptr: *mut u8,
}

#[derive(Default)]
struct Slot {
    seq: AtomicU64,
    /// Page number + 1 (0: empty).
    page: AtomicU64,
    iova: AtomicU64,
    size: AtomicUsize,
    ptr: AtomicPtr<u8>,
    epoch: AtomicU64,
}

/// The cache: slots, and the epoch that `free` advances.
pub(super) struct TranslationCache {
    slots: Box<[Slot]>,
    epoch: AtomicU64,
}

impl TranslationCache {
    pub fn new() -> TranslationCache {
        TranslationCache {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            epoch: AtomicU64::new(0),
        }
    }

    fn slot(&self, iova: u64) -> (&Slot, u64) {
        let page = iova >> PAGE_SHIFT;
        (&self.slots[page as usize & (SLOTS - 1)], page + 1)
    }

    /// The region cached for the page of `iova`, if any (and not unmapped since).
    #[inline]
    pub fn get(&self, iova: u64) -> Option<Hit> {
        let (slot, key) = self.slot(iova);
        let seq = slot.seq.load(Ordering::Acquire);
        if seq & 1 != 0 {
            return None;
        }
        let page = slot.page.load(Ordering::Relaxed);
        let hit = Hit {
            iova: slot.iova.load(Ordering::Relaxed),
            size: slot.size.load(Ordering::Relaxed),
            ptr: slot.ptr.load(Ordering::Relaxed),
        };
        let epoch = slot.epoch.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) != seq
            || page != key
            || epoch != self.epoch.load(Ordering::Acquire)
        {
            return None;
        }
        Some(hit)
    }

    /// Records that `hit` holds the page of `iova`. Only called with the space's mutex held
    /// (so fills never race each other, nor an epoch change).
    pub fn fill(&self, iova: u64, hit: Hit) {
        let (slot, key) = self.slot(iova);
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        slot.page.store(key, Ordering::Relaxed);
        slot.iova.store(hit.iova, Ordering::Relaxed);
        slot.size.store(hit.size, Ordering::Relaxed);
        slot.ptr.store(hit.ptr, Ordering::Relaxed);
        slot.epoch
            .store(self.epoch.load(Ordering::Relaxed), Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// Forgets every translation (a region was unmapped). Called with the mutex held.
    pub fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_misses_and_invalidation() {
        let c = TranslationCache::new();
        let mut byte = 0u8;
        let hit = Hit {
            iova: 0x1_0000_0000,
            size: 8192,
            ptr: &mut byte,
        };
        assert_eq!(c.get(0x1_0000_0010), None);
        c.fill(0x1_0000_0010, hit);
        assert_eq!(c.get(0x1_0000_0ff0), Some(hit), "same page");
        assert_eq!(c.get(0x1_0000_1000), None, "next page not filled");
        // A page that shares the slot evicts the first.
        let other = 0x1_0000_0000 + (SLOTS as u64) * 4096;
        c.fill(other, hit);
        assert_eq!(c.get(0x1_0000_0010), None);
        assert_eq!(c.get(other), Some(hit));
        c.invalidate();
        assert_eq!(c.get(other), None, "unmapping forgets everything");
    }
}
