//! Host memory that the driver allocates for the device, addressed by IO virtual address
//! (IOVA): what IOMMU-mapped DMA memory is on real hardware.
//!
//! The driver gets a region's host address (`va`, for its own accesses) and its IOVA (what it
//! writes into command entries, contexts and page lists). The model reaches the memory only
//! through the IOVA, by [`DmaSpace::window`], which returns `None` for any byte that is not
//! mapped, as an IOMMU would fault. IOVAs start at [`IOVA_BASE`], far from any host address,
//! and every region is followed by an unmapped guard page, so a driver that passes a virtual
//! address where an IOVA belongs, or overruns a buffer, is caught instead of silently working.
//!
//! This is the only module of the crate with `unsafe` code: it owns the raw host memory and
//! hands out [`DeviceBytes`] windows onto it. Lookups go through a lock-free translation
//! cache first ([`cache`]), as the data path makes several per frame.
//!
//! Soundness rests on one rule: host memory is returned to the allocator only when the
//! `DmaSpace` itself is dropped. [`DmaSpace::free`] unmaps a region at once (no new window
//! can reach it, and its IOVAs are never reused) but keeps its memory until then, so a window
//! taken just before a racing `free` (a driver bug, which real hardware turns into a DMA after
//! free) still points at live memory. Every window borrows the `DmaSpace`, so none outlives
//! the memory.

mod cache;

use cache::{Hit, TranslationCache};
use mlx5_prm::rt::{Bytes, BytesMut, DeviceBytes};

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

/// The first IOVA handed out. Far above typical user-space heap addresses only by convention;
/// what matters is that IOVAs and host addresses of the same region always differ.
pub const IOVA_BASE: u64 = 0x1_0000_0000;

/// Granule of every allocation: the 4 KiB page of the PRM (`MLX5_ADAPTER_PAGE_SIZE`).
pub const DMA_PAGE_SIZE: usize = 4096;

/// Default cap on the bytes one `DmaSpace` maps at a time, so that a runaway driver fails an
/// allocation instead of exhausting the machine.
pub const DEFAULT_DMA_LIMIT: usize = 1 << 30;

/// Largest alignment `alloc` accepts (1 GiB, the largest page a PRM page list describes).
const MAX_ALIGN: usize = 1 << 30;

/// Why a DMA allocation, free or access failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DmaError {
    /// `alloc` was asked for zero bytes.
    ZeroLength,
    /// The alignment is not a power of two, or is larger than 1 GiB.
    BadAlign(usize),
    /// The allocation would exceed the space's limit, or the host allocator failed.
    Exhausted {
        /// Bytes asked for (after rounding up to whole pages).
        requested: usize,
        /// Bytes still available under the limit.
        available: usize,
    },
    /// No mapped region covers this IOVA (for `free`: no region starts there).
    NotMapped(u64),
}

impl fmt::Display for DmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmaError::ZeroLength => write!(f, "DMA allocation of zero bytes"),
            DmaError::BadAlign(a) => {
                write!(f, "DMA alignment {a:#x} is not a power of two up to 1 GiB")
            }
            DmaError::Exhausted {
                requested,
                available,
            } => write!(
                f,
                "DMA allocation of {requested:#x} bytes exceeds the {available:#x} bytes left"
            ),
            DmaError::NotMapped(iova) => write!(f, "IOVA {iova:#x} is not mapped"),
        }
    }
}

impl std::error::Error for DmaError {}

/// One allocation: its host address, IOVA and length in bytes (a whole number of pages).
///
/// `DmaRegion` is plain data, `Send` and `Sync`: it only describes memory owned by its
/// [`DmaSpace`] and performs no access itself. Whoever dereferences `va` must keep to the rules
/// of device-shared memory: the memory stays valid until the `DmaSpace` is dropped; it may be
/// written by the device at any time, so it must be accessed with volatile or atomic accesses
/// (for instance through [`DeviceBytes`]), never through a Rust reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaRegion {
    /// Host address of the first byte, for the driver's own accesses.
    pub va: *mut u8,
    /// IO virtual address of the first byte: what the device is told.
    pub iova: u64,
    /// Length in bytes, the requested length rounded up to whole 4 KiB pages.
    pub len: usize,
}

// SAFETY: a `DmaRegion` is an address and a length. It grants no access by itself; the rules
// for dereferencing `va` (documented on the type) do not depend on the thread that holds it.
unsafe impl Send for DmaRegion {}
// SAFETY: as for `Send`; sharing the description shares no memory access.
unsafe impl Sync for DmaRegion {}

/// One block of host memory and where it is mapped.
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
    iova: u64,
}

// SAFETY: a `Block` owns its allocation exclusively (it is only ever freed by the `DmaSpace`
// that allocated it), and nothing in it is tied to the thread that allocated it.
unsafe impl Send for Block {}

struct Inner {
    /// Mapped blocks by first IOVA.
    mapped: BTreeMap<u64, Block>,
    /// Unmapped blocks whose memory is kept until the space is dropped (see the module doc).
    retired: Vec<Block>,
    /// Next free IOVA; only grows, so IOVAs are never reused.
    next_iova: u64,
    /// Bytes currently mapped.
    mapped_bytes: usize,
}

/// Host memory addressed by IOVA: what IOMMU-mapped DMA memory is for real hardware.
pub struct DmaSpace {
    inner: Mutex<Inner>,
    limit: usize,
    /// Page → region translations, read without the lock.
    cache: TranslationCache,
}

impl fmt::Debug for DmaSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("DmaSpace")
            .field("regions", &inner.mapped.len())
            .field("allocated", &inner.mapped_bytes)
            .field("limit", &self.limit)
            .finish()
    }
}

impl Default for DmaSpace {
    fn default() -> Self {
        DmaSpace::new(DEFAULT_DMA_LIMIT)
    }
}

impl DmaSpace {
    /// An empty space that maps at most `limit` bytes at a time.
    pub fn new(limit: usize) -> DmaSpace {
        DmaSpace {
            inner: Mutex::new(Inner {
                mapped: BTreeMap::new(),
                retired: Vec::new(),
                next_iova: IOVA_BASE,
                mapped_bytes: 0,
            }),
            limit,
            cache: TranslationCache::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock guards plain bookkeeping that is consistent between statements, so a
        // panic elsewhere while it was held leaves nothing half-done.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `len` bytes of zeroed memory, rounded up to whole 4 KiB pages, with host
    /// address and IOVA both aligned to `align` (at least 4 KiB).
    pub fn alloc(&self, len: usize, align: usize) -> Result<DmaRegion, DmaError> {
        if len == 0 {
            return Err(DmaError::ZeroLength);
        }
        if !align.is_power_of_two() || align > MAX_ALIGN {
            return Err(DmaError::BadAlign(align));
        }
        let align = align.max(DMA_PAGE_SIZE);
        let mut inner = self.lock();
        let available = self.limit.saturating_sub(inner.mapped_bytes);
        let size = match len.checked_next_multiple_of(DMA_PAGE_SIZE) {
            Some(size) if size <= available => size,
            _ => {
                return Err(DmaError::Exhausted {
                    requested: len,
                    available,
                })
            }
        };
        let layout = Layout::from_size_align(size, align).map_err(|_| DmaError::BadAlign(align))?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(DmaError::Exhausted {
                requested: size,
                available,
            });
        };
        let iova = inner.next_iova.next_multiple_of(align as u64);
        // One unmapped guard page after every region.
        inner.next_iova = iova + size as u64 + DMA_PAGE_SIZE as u64;
        inner.mapped_bytes += size;
        inner.mapped.insert(iova, Block { ptr, layout, iova });
        Ok(DmaRegion {
            va: ptr.as_ptr(),
            iova,
            len: size,
        })
    }

    /// Unmaps the region that starts at `iova`. Its IOVAs are never handed out again; its
    /// host memory stays allocated until the space is dropped (see the module doc).
    pub fn free(&self, iova: u64) -> Result<(), DmaError> {
        let mut inner = self.lock();
        let block = inner
            .mapped
            .remove(&iova)
            .ok_or(DmaError::NotMapped(iova))?;
        inner.mapped_bytes -= block.layout.size();
        inner.retired.push(block);
        self.cache.invalidate();
        Ok(())
    }

    /// Device-side access to `len` bytes at `iova`, or `None` if any of them is unmapped (or
    /// `len` is 0). A window never spans two regions.
    #[inline(always)]
    pub fn window(&self, iova: u64, len: usize) -> Option<DeviceBytes<'_>> {
        if len == 0 {
            return None;
        }
        let hit = match self.cache.get(iova) {
            Some(hit) => hit,
            None => self.lookup(iova)?,
        };
        // The cached region holds `iova`'s page, so it is the region the map would find.
        let offset = usize::try_from(iova - hit.iova).ok()?;
        let end = offset.checked_add(len)?;
        if end > hit.size {
            return None;
        }
        // SAFETY: `hit` describes a block of this space that held `iova` when it was found
        // (under the lock, or in the cache, which forgets everything when a block is
        // unmapped), and `offset + len` lies inside it (checked above). Block memory stays
        // allocated until `self` is dropped (blocks are only retired, never freed, before
        // that), so it is valid for volatile reads and writes for the window's lifetime,
        // which borrows `self`. This crate never forms references to DMA memory, and the
        // driver is bound to the same rule by `DmaRegion`'s contract.
        Some(unsafe { DeviceBytes::new(hit.ptr.add(offset), len) })
    }

    /// A window on `len` bytes at `iova` kept to be read again (see [`Held`]).
    #[inline]
    pub(crate) fn hold(&self, iova: u64, len: usize) -> Option<Held<'_>> {
        // The epoch first: a region freed after this read, even before the window is made,
        // makes the window stale for `held`.
        let epoch = self.cache.epoch();
        let window = self.window(iova, len)?;
        Some(Held { window, epoch })
    }

    /// The window `h` holds, while no region has been freed since it was made.
    #[inline]
    pub(crate) fn held<'h>(&self, h: &'h Held<'_>) -> Option<&'h DeviceBytes<'h>> {
        (self.cache.epoch() == h.epoch).then_some(&h.window)
    }

    /// The mapped block holding `iova`, from the map (and recorded in the cache).
    #[cold]
    fn lookup(&self, iova: u64) -> Option<Hit> {
        let inner = self.lock();
        let (_, block) = inner.mapped.range(..=iova).next_back()?;
        let hit = Hit {
            iova: block.iova,
            size: block.layout.size(),
            ptr: block.ptr.as_ptr(),
        };
        if iova - block.iova < hit.size as u64 {
            self.cache.fill(iova, hit);
        }
        Some(hit)
    }

    /// Copies `out.len()` bytes at `iova` into `out`.
    pub fn read(&self, iova: u64, out: &mut [u8]) -> Result<(), DmaError> {
        if out.is_empty() {
            return Ok(());
        }
        let w = self
            .window(iova, out.len())
            .ok_or(DmaError::NotMapped(iova))?;
        copy_out(&w, out);
        Ok(())
    }

    /// Appends the `len` bytes at `iova` to `out`; false (and `out` unchanged) when they are
    /// not mapped.
    pub(crate) fn append(&self, iova: u64, len: usize, out: &mut Vec<u8>) -> bool {
        if len == 0 {
            return true;
        }
        let Some(w) = self.window(iova, len) else {
            return false;
        };
        let at = out.len();
        out.resize(at + len, 0);
        copy_out(&w, &mut out[at..]);
        true
    }

    /// Copies `out.len()` bytes at `iova` (4-byte aligned, a multiple of 4 bytes long) into
    /// `out` with aligned 4-byte loads: for rings the driver has just written in 4-byte
    /// stores (send WQEs), which 8-byte loads straddling two of them would wait for (store
    /// forwarding fails) when they are still on their way to memory. False when not mapped
    /// or not aligned.
    pub(crate) fn read_dwords(&self, iova: u64, out: &mut [u8]) -> bool {
        if iova % 4 != 0 || out.len() % 4 != 0 {
            return false;
        }
        let Some(w) = self.window(iova, out.len()) else {
            return out.is_empty();
        };
        let p = w.as_ptr();
        for (k, o) in out.chunks_exact_mut(4).enumerate() {
            // SAFETY: 4-byte aligned (the window's host address has its IOVA's alignment
            // within a page) and inside the window (4k + 4 <= out.len() = w.len()).
            let v = unsafe { p.add(4 * k).cast::<u32>().read_volatile() };
            o.copy_from_slice(&v.to_ne_bytes());
        }
        true
    }

    /// Copies `data` to `iova`.
    pub fn write(&self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        if data.is_empty() {
            return Ok(());
        }
        let mut w = self
            .window(iova, data.len())
            .ok_or(DmaError::NotMapped(iova))?;
        copy_in(&mut w, data);
        Ok(())
    }

    /// True when every byte of `iova .. iova + len` is mapped.
    pub fn is_mapped(&self, iova: u64, len: usize) -> bool {
        self.window(iova, len).is_some()
    }

    /// Bytes currently mapped.
    pub fn allocated(&self) -> usize {
        self.lock().mapped_bytes
    }

    /// Number of regions currently mapped.
    pub fn regions(&self) -> usize {
        self.lock().mapped.len()
    }
}

/// A window kept to be read again within one run of a queue (its doorbell record), with the
/// translation cache's epoch when it was made. It is read through only while the epoch is
/// unchanged: no region was freed since, so the memory is still mapped and a new window would
/// be this one (the rule the cache itself follows). Otherwise the caller makes a new window,
/// which faults as any access to freed memory does.
pub(crate) struct Held<'a> {
    window: DeviceBytes<'a>,
    epoch: u64,
}

impl<'a> Held<'a> {
    /// The window, as made (for the first read).
    pub(crate) fn window(&self) -> &DeviceBytes<'a> {
        &self.window
    }
}

/// Copies the start of window `w` into `out` (which must not be longer than `w`): aligned
/// 8-byte volatile loads, with aligned 4-, 2- and 1-byte loads at the ends. Through the
/// bounds-checked accessors of [`DeviceBytes`], byte by byte, copies were the larger part of
/// moving a frame.
pub(crate) fn copy_out(w: &DeviceBytes<'_>, out: &mut [u8]) {
    if out.len() > w.len() {
        w.read_bytes(0, out); // Panics, as any access past a window does.
        return;
    }
    let p = w.as_ptr();
    let head = p.align_offset(8).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    for (i, o) in first.iter_mut().enumerate() {
        // SAFETY: i < out.len() <= w.len(): inside the window, valid for volatile reads.
        *o = unsafe { p.add(i).read_volatile() };
    }
    // SAFETY: head <= out.len() <= w.len().
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact_mut(8);
    let mut at = 0;
    for o in &mut words {
        // SAFETY: `p + at` is 8-byte aligned (p is, at is a multiple of 8) and the word lies
        // inside the window (head + at + 8 <= out.len() <= w.len()).
        let v = unsafe { p.add(at).cast::<u64>().read_volatile() };
        o.copy_from_slice(&v.to_ne_bytes());
        at += 8;
    }
    let tail = words.into_remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        // SAFETY: aligned to 4 (8-aligned plus a multiple of 4), inside the window.
        let v = unsafe { p.add(at + t).cast::<u32>().read_volatile() };
        tail[t..t + 4].copy_from_slice(&v.to_ne_bytes());
        t += 4;
    }
    if tail.len() - t >= 2 {
        // SAFETY: aligned to 2, inside the window.
        let v = unsafe { p.add(at + t).cast::<u16>().read_volatile() };
        tail[t..t + 2].copy_from_slice(&v.to_ne_bytes());
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the window.
        tail[t] = unsafe { p.add(at + t).read_volatile() };
    }
}

/// Stores `words` (numeric values of big-endian 8-byte units) at the start of window `w`
/// (8-byte aligned, at least that long), one aligned 8-byte volatile store each, in order.
/// False, and nothing stored, when the window is too short or not aligned.
pub(crate) fn store_words(w: &mut DeviceBytes<'_>, words: &[u64]) -> bool {
    let p = w.as_ptr();
    if words.len() * 8 > w.len() || p.align_offset(8) != 0 {
        return false;
    }
    for (k, &v) in words.iter().enumerate() {
        // SAFETY: 8-byte aligned (checked) and inside the window (8k + 8 <= w.len()).
        unsafe { p.add(8 * k).cast::<u64>().write_volatile(v.to_be()) };
    }
    true
}

/// Copies `data` (not longer than `w`) to the start of window `w`, like [`copy_out`].
pub(crate) fn copy_in(w: &mut DeviceBytes<'_>, data: &[u8]) {
    if data.len() > w.len() {
        w.write_bytes(0, data); // Panics, as any access past a window does.
        return;
    }
    let p = w.as_ptr();
    let head = p.align_offset(8).min(data.len());
    let (first, rest) = data.split_at(head);
    for (i, &d) in first.iter().enumerate() {
        // SAFETY: i < data.len() <= w.len(): inside the window, valid for volatile writes.
        unsafe { p.add(i).write_volatile(d) };
    }
    // SAFETY: head <= data.len() <= w.len().
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact(8);
    let mut at = 0;
    for d in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(d);
        // SAFETY: an aligned word inside the window, as in `copy_out`.
        unsafe {
            p.add(at)
                .cast::<u64>()
                .write_volatile(u64::from_ne_bytes(b))
        };
        at += 8;
    }
    let tail = words.remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&tail[t..t + 4]);
        // SAFETY: aligned to 4, inside the window.
        unsafe {
            p.add(at + t)
                .cast::<u32>()
                .write_volatile(u32::from_ne_bytes(b))
        };
        t += 4;
    }
    if tail.len() - t >= 2 {
        let b = [tail[t], tail[t + 1]];
        // SAFETY: aligned to 2, inside the window.
        unsafe {
            p.add(at + t)
                .cast::<u16>()
                .write_volatile(u16::from_ne_bytes(b))
        };
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the window.
        unsafe { p.add(at + t).write_volatile(tail[t]) };
    }
}

impl Drop for DmaSpace {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let blocks = std::mem::take(&mut inner.mapped)
            .into_values()
            .chain(inner.retired.drain(..));
        for block in blocks {
            // SAFETY: `block.ptr` came from `alloc_zeroed(block.layout)` and is freed exactly
            // once, here. No window outlives `self` (windows borrow it).
            unsafe { dealloc(block.ptr.as_ptr(), block.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_zeroed_aligned_and_guarded() {
        let dma = DmaSpace::default();
        let a = dma.alloc(100, 1 << 16).unwrap();
        assert_eq!(a.len, 4096);
        assert_eq!(a.iova % (1 << 16), 0);
        assert_eq!(a.va as usize % (1 << 16), 0);
        assert_ne!(a.iova, a.va as u64);
        let w = dma.window(a.iova, 4096).unwrap();
        assert!((0..4096).all(|i| w.read_u8(i) == 0));
        assert!(dma.window(a.iova + 4095, 2).is_none(), "guard page");
        assert!(dma.window(a.iova - 1, 1).is_none());
        assert_eq!(dma.allocated(), 4096);
    }

    #[test]
    fn held_windows_last_until_a_region_is_freed() {
        let dma = DmaSpace::default();
        let a = dma.alloc(4096, 4096).unwrap();
        let b = dma.alloc(4096, 4096).unwrap();
        let h = dma.hold(a.iova, 4).unwrap();
        dma.window(a.iova, 4).unwrap().write_be32(0, 5);
        assert_eq!(
            dma.held(&h).map(|w| w.read_be32(0)),
            Some(5),
            "a fresh read"
        );
        dma.alloc(4096, 4096).unwrap();
        assert!(dma.held(&h).is_some(), "mapping more changes nothing");
        dma.free(b.iova).unwrap();
        assert!(dma.held(&h).is_none(), "any free: made again");
        assert!(dma.hold(a.iova, 4).is_some());
        dma.free(a.iova).unwrap();
        assert!(dma.hold(a.iova, 4).is_none(), "then it faults");
    }

    #[test]
    fn free_unmaps_and_never_reuses() {
        let dma = DmaSpace::default();
        let a = dma.alloc(4096, 4096).unwrap();
        dma.window(a.iova, 8).unwrap().write_be64(0, 7);
        dma.free(a.iova).unwrap();
        assert!(dma.window(a.iova, 1).is_none());
        assert_eq!(dma.free(a.iova), Err(DmaError::NotMapped(a.iova)));
        let b = dma.alloc(4096, 4096).unwrap();
        assert!(b.iova > a.iova);
        assert_eq!(dma.allocated(), 4096);
    }

    #[test]
    fn copies_at_every_alignment() {
        let dma = DmaSpace::default();
        let a = dma.alloc(4096, 4096).unwrap();
        let data: Vec<u8> = (0..100u8).collect();
        for start in 0..9u64 {
            for len in [0usize, 1, 7, 8, 9, 23, 64, 91] {
                dma.write(a.iova + 200, &[0xee; 120]).unwrap();
                dma.write(a.iova + 200 + start, &data[..len]).unwrap();
                let mut back = vec![0u8; 120];
                dma.read(a.iova + 200, &mut back).unwrap();
                let s = start as usize;
                assert!(back[..s].iter().all(|&b| b == 0xee));
                assert_eq!(&back[s..s + len], &data[..len]);
                assert!(back[s + len..].iter().all(|&b| b == 0xee));
                let mut part = vec![0u8; len];
                dma.read(a.iova + 200 + start, &mut part).unwrap();
                assert_eq!(part, &data[..len]);
                if start % 4 == 0 && len % 4 == 0 {
                    let mut dw = vec![0u8; len];
                    assert!(dma.read_dwords(a.iova + 200 + start, &mut dw));
                    assert_eq!(dw, &data[..len]);
                }
                let mut appended = vec![7u8];
                assert!(dma.append(a.iova + 200 + start, len, &mut appended));
                assert_eq!((appended[0], &appended[1..]), (7, &data[..len]));
            }
        }
    }

    #[test]
    fn words_go_out_big_endian() {
        let dma = DmaSpace::default();
        let a = dma.alloc(4096, 4096).unwrap();
        let mut w = dma.window(a.iova + 64, 64).unwrap();
        assert!(store_words(&mut w, &[0x0102_0304_0506_0708, 0x1122]));
        let mut back = [0u8; 16];
        dma.read(a.iova + 64, &mut back).unwrap();
        assert_eq!(back[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(back[8..], [0, 0, 0, 0, 0, 0, 0x11, 0x22]);
        assert!(!store_words(&mut w, &[0; 9]), "longer than the window");
        let mut odd = dma.window(a.iova + 4, 16).unwrap();
        assert!(!store_words(&mut odd, &[1]), "not aligned");
    }

    #[test]
    fn bad_requests() {
        let dma = DmaSpace::new(8192);
        assert_eq!(dma.alloc(0, 4096), Err(DmaError::ZeroLength));
        assert_eq!(dma.alloc(1, 3), Err(DmaError::BadAlign(3)));
        assert!(matches!(
            dma.alloc(3 * 4096, 4096),
            Err(DmaError::Exhausted { .. })
        ));
        assert!(matches!(
            dma.alloc(usize::MAX, 4096),
            Err(DmaError::Exhausted { .. })
        ));
        assert!(dma.window(u64::MAX, 16).is_none());
        let mut out = vec![1u8];
        assert!(!dma.append(0, 4, &mut out));
        assert_eq!(out, [1]);
        assert!(dma.window(0, 16).is_none());
    }
}
