//! Host memory the device reaches by IO virtual address (IOVA): what IOMMU-mapped DMA memory
//! is on real hardware. Two kinds of space:
//!
//! - **Allocating** ([`DmaSpace::new`], the default): the driver in this process allocates
//!   regions ([`DmaSpace::alloc`]) and gets each one's host address (`va`, for its own
//!   accesses) and IOVA (what it writes into command entries, contexts and page lists). IOVAs
//!   start at [`IOVA_BASE`], far from any host address, and every region is followed by an
//!   unmapped guard page, so a driver that passes a virtual address where an IOVA belongs, or
//!   overruns a buffer, is caught instead of silently working.
//! - **External** ([`DmaSpace::external`]): a host outside the model (a vfio-user server
//!   presenting the device to a guest) maps memory it owns at IOVAs it chooses
//!   ([`DmaSpace::map`], unsafe: the host vouches for the memory) and unmaps it again
//!   ([`DmaSpace::unmap`]).
//!
//! The model reaches memory only by IOVA, through windows ([`DmaSpace::window`], crate-private),
//! which are `None` for any byte outside the mapped regions, as an IOMMU would fault: a fault
//! never touches host memory outside a region.
//!
//! This is the only module of the crate with `unsafe` code: it owns (or borrows) the raw host
//! memory and hands out [`DeviceBytes`] windows onto it. Lookups go through a lock-free
//! translation cache first ([`cache`]), as the data path makes several per frame.
//!
//! # When memory may go away
//!
//! Every window the model takes lives inside one *session*: a stretch of work on a doorbell,
//! a command or an event during which the model's lock is held (`Core::model` in
//! `device.rs`), and no window outlives its session. The only other windows are those of the
//! host-side copies ([`DmaSpace::read`], [`DmaSpace::write`]), which hold this space's own
//! mutex for the whole copy. Memory leaves a space only through [`DmaSpace::unmap`] and
//! [`DmaSpace::free`] (and the space's drop, which no window outlives), which
//!
//! 1. removes the regions from the map and advances the translation cache's epoch, under this
//!    space's mutex, so that no window made afterwards can reach them, and
//! 2. does so inside the *quiescer* the owning device installs (`set_quiescer`): a function
//!    that holds the model's lock while it runs, so it waits for the session in progress, if
//!    any, to end, and every later session sees the new epoch (the lock orders them).
//!
//! So once `unmap` or `free` returns, no model thread holds or can make a window on the
//! memory: `free` returns an allocated region's memory to the allocator right there, and an
//! external host may release its memory. The lock order is model lock, then this space's
//! mutex; nothing takes them the other way round.

mod cache;
mod copy;
mod error;
mod external;
#[cfg(test)]
mod tests;

use cache::{Hit, TranslationCache};
pub(crate) use copy::store_words;
pub use error::DmaError;
use mlx5_prm::rt::{Bytes as _, BytesMut as _, DeviceBytes};

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The first IOVA an allocating space hands out. Far above typical user-space heap addresses
/// only by convention; what matters is that IOVAs and host addresses of the same region
/// always differ.
pub const IOVA_BASE: u64 = 0x1_0000_0000;

/// Granule of every allocation and mapping: the 4 KiB page of the PRM
/// (`MLX5_ADAPTER_PAGE_SIZE`).
pub const DMA_PAGE_SIZE: usize = 4096;

/// Default cap on the bytes one allocating `DmaSpace` holds at a time, so that a runaway
/// driver fails an allocation instead of exhausting the machine.
pub const DEFAULT_DMA_LIMIT: usize = 1 << 30;

/// Largest alignment `alloc` accepts (1 GiB, the largest page a PRM page list describes).
const MAX_ALIGN: usize = 1 << 30;

/// Where a device's DMA memory comes from ([`Config::dma`](crate::Config::dma)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaBacking {
    /// The space allocates its own memory for a driver in this process ([`DmaSpace::alloc`]),
    /// holding at most `limit` bytes at a time.
    Allocated {
        /// Cap on the bytes held.
        limit: usize,
    },
    /// The space has no memory of its own: a host maps regions of its memory at IOVAs
    /// ([`Device::map_dma`](crate::Device::map_dma)), e.g. a guest's RAM.
    External,
}

impl Default for DmaBacking {
    fn default() -> Self {
        DmaBacking::Allocated {
            limit: DEFAULT_DMA_LIMIT,
        }
    }
}

/// One allocation: its host address, IOVA and length in bytes (a whole number of pages).
///
/// `DmaRegion` is plain data, `Send` and `Sync`: it only describes memory owned by its
/// [`DmaSpace`] and performs no access itself. Whoever dereferences `va` must keep to the rules
/// of device-shared memory: the memory stays valid until the region is freed; it may be
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

/// Whose memory a block is.
#[derive(Debug)]
enum Memory {
    /// Allocated by the space with this layout; the space frees it.
    Owned(Layout),
    /// Mapped by the host ([`DmaSpace::map`]); never freed here.
    External,
}

/// One block of host memory and where it is mapped.
struct Block {
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
    memory: Memory,
    /// The device may write it (an external host may map memory for reading only).
    writable: bool,
}

impl Block {
    /// One past the last IOVA of the block.
    fn end(&self) -> u64 {
        self.iova + self.len as u64
    }

    fn hit(&self) -> Hit {
        Hit {
            iova: self.iova,
            size: self.len,
            ptr: self.ptr.as_ptr(),
            wsize: if self.writable { self.len } else { 0 },
        }
    }

    /// Returns the block's memory to the allocator if the space owns it.
    ///
    /// # Safety
    /// No window on the block may exist or be made any more (see the module doc).
    unsafe fn release(self) {
        if let Memory::Owned(layout) = self.memory {
            // SAFETY: `ptr` came from `alloc_zeroed(layout)`, and the block is consumed, so
            // this runs once; the caller guarantees no window can reach it.
            unsafe { dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

// SAFETY: a `Block` owns its allocation exclusively (only the `DmaSpace` that made it ever
// frees it) or describes host memory the host vouched for at `map`; nothing in it is tied to
// the thread that made it.
unsafe impl Send for Block {}

struct Inner {
    /// Mapped blocks by first IOVA.
    mapped: BTreeMap<u64, Block>,
    /// Next free IOVA of an allocating space; only grows, so IOVAs are never reused.
    next_iova: u64,
    /// Bytes of owned memory currently held (all of it mapped: freed memory is released at
    /// once), what the limit counts.
    mapped_bytes: usize,
}

/// Runs the function it is given while no model session can be in progress (the owning
/// device holds its model lock around it).
pub(crate) type Quiescer = Box<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

/// IOVA-addressed host memory: what IOMMU-mapped DMA memory is for real hardware. See the
/// module documentation for the two kinds and for when memory may go away.
pub struct DmaSpace {
    inner: Mutex<Inner>,
    limit: usize,
    external: bool,
    /// Page → region translations, read without the lock.
    cache: TranslationCache,
    /// Installed by the device that owns the space (see the module doc).
    quiescer: OnceLock<Quiescer>,
}

impl fmt::Debug for DmaSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("DmaSpace")
            .field("external", &self.external)
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
    /// An empty allocating space that holds at most `limit` bytes at a time.
    pub fn new(limit: usize) -> DmaSpace {
        DmaSpace::with(limit, false)
    }

    /// An empty external space: no memory of its own, regions come from [`DmaSpace::map`].
    pub fn external() -> DmaSpace {
        DmaSpace::with(0, true)
    }

    /// The space `backing` describes.
    pub fn of(backing: DmaBacking) -> DmaSpace {
        match backing {
            DmaBacking::Allocated { limit } => DmaSpace::new(limit),
            DmaBacking::External => DmaSpace::external(),
        }
    }

    fn with(limit: usize, external: bool) -> DmaSpace {
        DmaSpace {
            inner: Mutex::new(Inner {
                mapped: BTreeMap::new(),
                next_iova: IOVA_BASE,
                mapped_bytes: 0,
            }),
            limit,
            external,
            cache: TranslationCache::new(),
            quiescer: OnceLock::new(),
        }
    }

    /// True for a space whose memory is mapped from outside.
    pub fn is_external(&self) -> bool {
        self.external
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock guards plain bookkeeping that is consistent between statements, so a
        // panic elsewhere while it was held leaves nothing half-done.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Installs the function that runs memory removal outside every model session (once;
    /// the device that owns the space does it at creation).
    pub(crate) fn set_quiescer(&self, q: Quiescer) {
        let _ = self.quiescer.set(q);
    }

    /// Runs `f` while no model session is in progress (directly when no device owns the
    /// space: then the crate takes no windows on it).
    fn quiesce(&self, f: &mut dyn FnMut()) {
        match self.quiescer.get() {
            Some(q) => q(f),
            None => f(),
        }
    }

    /// Allocates `len` bytes of zeroed memory, rounded up to whole 4 KiB pages, with host
    /// address and IOVA both aligned to `align` (at least 4 KiB).
    pub fn alloc(&self, len: usize, align: usize) -> Result<DmaRegion, DmaError> {
        if self.external {
            return Err(DmaError::External);
        }
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
        inner.mapped.insert(
            iova,
            Block {
                ptr,
                len: size,
                iova,
                memory: Memory::Owned(layout),
                writable: true,
            },
        );
        Ok(DmaRegion {
            va: ptr.as_ptr(),
            iova,
            len: size,
        })
    }

    /// Unmaps the region that starts at `iova` and returns its memory to the allocator. Its
    /// IOVAs are never handed out again. Like [`DmaSpace::unmap`], it returns only once no
    /// model thread can touch the region (it waits for the model's work in progress), so the
    /// memory is released at once and counts against the limit no longer. The driver must not
    /// touch the region's `va` afterwards.
    pub fn free(&self, iova: u64) -> Result<(), DmaError> {
        if self.external {
            return Err(DmaError::External);
        }
        let mut result = Err(DmaError::NotMapped(iova));
        self.quiesce(&mut || {
            let mut inner = self.lock();
            if let Some(block) = inner.mapped.remove(&iova) {
                inner.mapped_bytes -= block.len;
                self.cache.invalidate();
                // SAFETY: the block is out of the map and the epoch has advanced, under the
                // mutex and inside the quiescer: no session is in progress and no host copy
                // (they hold the mutex), so no window exists on the block, and none can be made
                // on it any more.
                unsafe { block.release() };
                result = Ok(());
            }
        });
        result
    }

    /// Device-side access to `len` bytes at `iova`, or `None` if any of them is unmapped or
    /// mapped for reading only (or `len` is 0). A window never spans two regions. Only for
    /// model sessions (see the module doc): the window must not outlive the session.
    #[inline(always)]
    pub(crate) fn window(&self, iova: u64, len: usize) -> Option<DeviceBytes<'_>> {
        let hit = self.translate(iova, len)?;
        window_in(hit, iova, len, hit.wsize)
    }

    /// [`DmaSpace::window`] for reading only: read-only regions too. The model reads through
    /// it only what a device reads (send gathers), never a structure it also writes.
    #[inline(always)]
    fn read_window(&self, iova: u64, len: usize) -> Option<DeviceBytes<'_>> {
        let hit = self.translate(iova, len)?;
        window_in(hit, iova, len, hit.size)
    }

    /// The region holding `iova`, for a non-empty access.
    #[inline(always)]
    fn translate(&self, iova: u64, len: usize) -> Option<Hit> {
        if len == 0 {
            return None;
        }
        // The cached region holds `iova`'s page, so it is the region the map would find.
        match self.cache.get(iova) {
            Some(hit) => Some(hit),
            None => self.lookup(iova),
        }
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
        let hit = find(&inner, iova)?;
        self.cache.fill(iova, hit);
        Some(hit)
    }

    /// Copies `out.len()` bytes at `iova` into `out` (a host-side copy: it holds the space's
    /// mutex, so no region it reads can go away meanwhile).
    pub fn read(&self, iova: u64, out: &mut [u8]) -> Result<(), DmaError> {
        if out.is_empty() {
            return Ok(());
        }
        let inner = self.lock();
        let w = find(&inner, iova)
            .and_then(|hit| window_in(hit, iova, out.len(), hit.size))
            .ok_or(DmaError::NotMapped(iova))?;
        w.read_bytes(0, out);
        Ok(())
    }

    /// Copies `data` to `iova` (a host-side copy, like [`DmaSpace::read`]).
    pub fn write(&self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        if data.is_empty() {
            return Ok(());
        }
        let inner = self.lock();
        let mut w = find(&inner, iova)
            .and_then(|hit| window_in(hit, iova, data.len(), hit.wsize))
            .ok_or(DmaError::NotMapped(iova))?;
        w.write_bytes(0, data);
        Ok(())
    }

    /// [`DmaSpace::read`] for the model, inside a session: lock-free. Read-only regions too.
    pub(crate) fn read_dev(&self, iova: u64, out: &mut [u8]) -> bool {
        if out.is_empty() {
            return true;
        }
        let Some(w) = self.read_window(iova, out.len()) else {
            return false;
        };
        w.read_bytes(0, out);
        true
    }

    /// [`DmaSpace::write`] for the model, inside a session: lock-free.
    pub(crate) fn write_dev(&self, iova: u64, data: &[u8]) -> bool {
        if data.is_empty() {
            return true;
        }
        let Some(mut w) = self.window(iova, data.len()) else {
            return false;
        };
        w.write_bytes(0, data);
        true
    }

    /// Appends the `len` bytes at `iova` to `out`; false (and `out` unchanged) when they are
    /// not mapped (read-only regions are read).
    pub(crate) fn append(&self, iova: u64, len: usize, out: &mut Vec<u8>) -> bool {
        if len == 0 {
            return true;
        }
        let Some(w) = self.read_window(iova, len) else {
            return false;
        };
        let at = out.len();
        out.resize(at + len, 0);
        w.read_bytes(0, &mut out[at..]);
        true
    }

    /// Copies `out.len()` bytes at `iova` (4-byte aligned, a multiple of 4 bytes long) into
    /// `out` with aligned 4-byte loads: for rings the driver has just written in 4-byte
    /// stores (send WQEs), which 8-byte loads straddling two of them would wait for (store
    /// forwarding fails) when they are still on their way to memory; and for a host reading
    /// an entry whose owner dword the device writes with a 4-byte store (CQEs, EQEs, command
    /// entries), where an 8-byte load over that dword would race the store in the threaded
    /// mode. False when not mapped or not aligned.
    pub fn read_dwords(&self, iova: u64, out: &mut [u8]) -> bool {
        if iova % 4 != 0 || out.len() % 4 != 0 {
            return false;
        }
        let Some(w) = self.window(iova, out.len()) else {
            return out.is_empty();
        };
        copy::read_dwords(&w, out);
        true
    }

    /// True when every byte of `iova .. iova + len` is mapped for the device to write (and
    /// read): what pages given to the device and queue rings must be.
    pub fn is_mapped(&self, iova: u64, len: usize) -> bool {
        // Only a translation: the window is never read through.
        self.window(iova, len).is_some()
    }

    /// Bytes of memory the space allocated and has mapped (0 for an external space).
    pub fn allocated(&self) -> usize {
        self.lock().mapped_bytes
    }

    /// Bytes currently mapped, allocated or external.
    pub fn mapped(&self) -> usize {
        self.lock().mapped.values().map(|b| b.len).sum()
    }

    /// Number of regions currently mapped.
    pub fn regions(&self) -> usize {
        self.lock().mapped.len()
    }
}

/// The mapped block of `inner` that holds `iova`.
fn find(inner: &Inner, iova: u64) -> Option<Hit> {
    let (_, block) = inner.mapped.range(..=iova).next_back()?;
    (iova < block.end()).then(|| block.hit())
}

/// The window on `len` bytes at `iova` inside the region `hit`, if they lie inside it.
#[inline(always)]
fn window_in<'a>(hit: Hit, iova: u64, len: usize, limit: usize) -> Option<DeviceBytes<'a>> {
    // Callers pass a non-zero `len` and a region that holds `iova` (so no wrap here; were it
    // to wrap, the offset would be huge and fail the check below all the same). `limit` is
    // the region's size for reading, `wsize` for writing (0 for read-only memory, which then
    // fails the check, `len` being non-zero).
    debug_assert!(limit <= hit.size);
    let offset = usize::try_from(iova.wrapping_sub(hit.iova)).ok()?;
    let end = offset.checked_add(len)?;
    if end > limit {
        return None;
    }
    // SAFETY: `hit` describes a block that held `iova` when it was found (under the mutex,
    // or in the cache, which forgets everything when a block is unmapped), and
    // `offset + len` lies inside it (checked above), so the window is inside the block. The
    // block's memory stays valid while the window is used: windows are made only inside a
    // model session or under the space's mutex (host copies), and memory leaves the space
    // only outside every session and under the mutex (see the module doc), or when the
    // space is dropped, which no window outlives (they borrow it). This crate never forms
    // references to DMA memory, and a driver in this process is bound to the same rule by
    // `DmaRegion`'s contract, an external host by `map`'s.
    Some(unsafe { DeviceBytes::new(hit.ptr.add(offset), len) })
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

impl Drop for DmaSpace {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        for block in std::mem::take(&mut inner.mapped).into_values() {
            // SAFETY: no window outlives `self` (windows borrow it), and each block is
            // released once, here.
            unsafe { block.release() };
        }
    }
}
