//! A lock-free cache of IOVA translations for [`DmaSpace::window`](super::DmaSpace::window).
//!
//! The data path touches a handful of regions per frame (rings, doorbell records, buffers),
//! and finding a region under the space's mutex in a map of thousands of regions cost more
//! than the rest of a frame's work. The cache maps a page number to the region that holds
//! it, in direct-mapped arrays of slots read without any lock, like a TLB with two page
//! sizes: 2 MiB pages for regions of 2 MiB or more (a pool of packet buffers),
//! 4 KiB pages for the rest (rings, doorbell records). With one size, the many pages of a
//! large buffer pool evicted the rings' pages on every pass. A large page may hold the ends
//! of two regions, so a large slot only answers for addresses inside its region.
//!
//! Each slot is a sequence lock: its writer (always holding the space's mutex, so writers
//! never race each other) makes the sequence odd, stores the fields, and makes it even again;
//! a reader that sees an odd sequence, or a different sequence after reading the fields,
//! misses. A slot is only ever filled with a region that really holds its page (found in the
//! map under the mutex), so a region added later cannot make a slot wrong.
//!
//! Why a hit never reaches released memory. Every slot records the space's epoch at fill
//! time, and a hit needs the slot's epoch to equal the current one. Memory leaves the space
//! (`free`, `unmap`) only inside the owning device's quiescer, which holds the model's lock,
//! and there, under the mutex, the region leaves the map and the epoch advances *before*
//! its memory is released. Readers are model sessions, which hold the model's lock for as
//! long as they use what they looked up. So:
//!
//! - a session in progress when a region goes keeps the quiescer waiting: the memory is
//!   released only after the session, and everything it looked up, is done;
//! - a session that starts afterwards takes the model's lock after the quiescer released it,
//!   so the epoch's advance happens before the session's reads (lock release and acquire
//!   order them; the epoch is also read with acquire ordering) and every slot filled before
//!   is a miss; the miss goes to the map, which no longer has the region: the access
//!   faults, exactly as without the cache.
//!
//! IOVAs of an external space can be mapped again after an unmap; a slot of the old mapping
//! is stale by its epoch, and a new fill finds the new region. Host-side copies do not use
//! the cache (they look up under the mutex).

use std::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Slots (powers of two) and log2 of the page size, for small and large pages.
const SMALL_SLOTS: usize = 512;
const SMALL_SHIFT: u32 = 12;
const LARGE_SLOTS: usize = 64;
const LARGE_SHIFT: u32 = 21;

/// Where a cached region lives: its first IOVA, its length and its host address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hit {
    pub iova: u64,
    pub size: usize,
    pub ptr: *mut u8,
    /// The bytes the device may write: `size`, or 0 for a region mapped for the device to
    /// read only (so a write window is bounded by this where a read window is by `size`,
    /// and refusing writes to read-only memory costs no test of its own).
    pub wsize: usize,
}

/// One translation; a cache line each, so that reading one touches one line.
#[derive(Default)]
#[repr(align(64))]
struct Slot {
    seq: AtomicU64,
    /// Page number + 1 (0: empty).
    page: AtomicU64,
    iova: AtomicU64,
    size: AtomicUsize,
    ptr: AtomicPtr<u8>,
    wsize: AtomicUsize,
    epoch: AtomicU64,
}

/// The cache: slots for each page size, and the epoch that `free` advances.
pub(super) struct TranslationCache {
    small: Box<[Slot; SMALL_SLOTS]>,
    large: Box<[Slot; LARGE_SLOTS]>,
    epoch: AtomicU64,
}

/// The slot of `iova`'s page in `slots` (pages of 1 << `shift` bytes), and its key. `N` is a
/// power of two known at compile time, so the index is a mask and needs no bounds check.
#[inline(always)]
fn slot_in<const N: usize>(slots: &[Slot; N], shift: u32, iova: u64) -> (&Slot, u64) {
    let page = iova >> shift;
    (&slots[page as usize & (N - 1)], page + 1)
}

impl TranslationCache {
    pub fn new() -> TranslationCache {
        TranslationCache {
            small: Box::new(std::array::from_fn(|_| Slot::default())),
            large: Box::new(std::array::from_fn(|_| Slot::default())),
            epoch: AtomicU64::new(0),
        }
    }

    /// The region cached for `iova` (in a small page, else in a large one), if any and not
    /// unmapped since.
    #[inline]
    pub fn get(&self, iova: u64) -> Option<Hit> {
        self.get_in(&self.small, SMALL_SHIFT, iova).or_else(|| {
            // A large page may hold the end of one region and the start of another.
            self.get_in(&self.large, LARGE_SHIFT, iova)
                .filter(|h| iova.wrapping_sub(h.iova) < h.size as u64)
        })
    }

    #[inline(always)]
    fn get_in<const N: usize>(&self, slots: &[Slot; N], shift: u32, iova: u64) -> Option<Hit> {
        let (slot, key) = slot_in(slots, shift, iova);
        let seq = slot.seq.load(Ordering::Acquire);
        // Another page's slot (the usual miss) is told early; a torn read of the key is caught
        // by the sequence check below like any other.
        let page = slot.page.load(Ordering::Relaxed);
        if seq & 1 != 0 || page != key {
            return None;
        }
        let hit = Hit {
            iova: slot.iova.load(Ordering::Relaxed),
            size: slot.size.load(Ordering::Relaxed),
            ptr: slot.ptr.load(Ordering::Relaxed),
            wsize: slot.wsize.load(Ordering::Relaxed),
        };
        let epoch = slot.epoch.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) != seq || epoch != self.epoch.load(Ordering::Acquire) {
            return None;
        }
        Some(hit)
    }

    /// Records that region `hit` holds `iova`: in the slot of its large page when the region
    /// is at least a large page long, else of its small page. Only called with the space's
    /// mutex held (so fills never race each other, nor an epoch change).
    pub fn fill(&self, iova: u64, hit: Hit) {
        let (slot, key) = if hit.size >= 1 << LARGE_SHIFT {
            slot_in(&self.large, LARGE_SHIFT, iova)
        } else {
            slot_in(&self.small, SMALL_SHIFT, iova)
        };
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        slot.page.store(key, Ordering::Relaxed);
        slot.iova.store(hit.iova, Ordering::Relaxed);
        slot.size.store(hit.size, Ordering::Relaxed);
        slot.ptr.store(hit.ptr, Ordering::Relaxed);
        slot.wsize.store(hit.wsize, Ordering::Relaxed);
        slot.epoch
            .store(self.epoch.load(Ordering::Relaxed), Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// How many times translations were forgotten: unchanged since a translation was made,
    /// it still holds.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
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
            wsize: 8192,
        };
        assert_eq!(c.get(0x1_0000_0010), None);
        c.fill(0x1_0000_0010, hit);
        assert_eq!(c.get(0x1_0000_0ff0), Some(hit), "same page");
        assert_eq!(c.get(0x1_0000_1000), None, "next page not filled");
        // A page that shares the slot evicts the first.
        let other = 0x1_0000_0000 + (SMALL_SLOTS as u64) * 4096;
        c.fill(other, hit);
        assert_eq!(c.get(0x1_0000_0010), None);
        assert_eq!(c.get(other), Some(hit));
        c.invalidate();
        assert_eq!(c.get(other), None, "unmapping forgets everything");
        // A region covering a whole 2 MiB page is cached for all of it, in a large slot that
        // small pages do not evict.
        let pool = Hit {
            iova: 0x2_0000_0000,
            size: 8 << 20,
            ptr: &mut byte,
            wsize: 8 << 20,
        };
        c.fill(0x2_0030_0000, pool);
        assert_eq!(c.get(0x2_0020_0000), Some(pool));
        assert_eq!(c.get(0x2_003f_ffff), Some(pool));
        assert_eq!(c.get(0x2_0040_0000), None, "the next large page");
        assert_eq!(c.get(0x1_ffff_ffff), None, "outside the region");
        c.fill(0x2_0000_0000 + (SMALL_SLOTS as u64) * 4096 * 2, hit);
        assert_eq!(c.get(0x2_0030_0000), Some(pool));
        // A region smaller than a large page goes to a small slot only.
        c.fill(0x2_0000_0000 - 0x1000, pool);
        assert_eq!(
            c.get(0x2_0000_0000 - 0x1000),
            None,
            "not the region's large page"
        );
        let small = Hit {
            iova: 0x3_0000_0000,
            size: 1 << 20,
            ptr: &mut byte,
            wsize: 1 << 20,
        };
        c.fill(0x3_0000_1000, small);
        assert_eq!(c.get(0x3_0000_1000), Some(small));
        assert_eq!(c.get(0x3_0000_2000), None);
        c.invalidate();
        assert_eq!(c.get(0x2_0030_0000), None);
    }
}
