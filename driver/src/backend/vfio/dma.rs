//! DMA memory for a VFIO function, made reachable for the device.
//!
//! - With an IOMMU each buffer is an anonymous mapping of its own (2 MiB huge pages when the
//!   system has them and the buffer is that large, 4 KiB pages otherwise) with an IOVA from
//!   [`IovaSpace`] and a type-1 mapping; the kernel pins its pages. Giving the buffer back
//!   unmaps it before the memory is freed, so the device can never reach memory the process
//!   reuses.
//! - Without one the device sees physical addresses, so a buffer must be physically
//!   contiguous and must never move. Locking a normal page does not promise the second:
//!   `mlock` keeps it in memory, but compaction may still migrate it (the default
//!   `vm.compact_unevictable_allowed = 1`), after which the device would write a frame that
//!   belongs to someone else. So every buffer, however small, is carved out of a 2 MiB
//!   hugetlb page (`MAP_HUGETLB | MAP_HUGE_2MB`), which compaction leaves where it is, as
//!   DPDK's IOVA-as-PA mode does. The allocator maps and locks such a page when it needs
//!   one, reads its physical address once from `/proc/self/pagemap` (refusing a page that is
//!   not one 2 MiB-aligned frame), and hands out pieces of it in 4 KiB steps at the alignment
//!   asked for; [`super::slab`] keeps the books. A piece given back is zeroed for its next
//!   user; a huge page is unmapped once none of its pieces is in use or in quarantine.
//!   Without free huge pages allocation fails and says how to reserve some. (The kernel can
//!   still move a huge page in use when it offlines memory or assembles a contiguous range,
//!   for CMA or a gigantic page; a machine running without an IOMMU should not do either
//!   while the driver runs. DPDK has the same limit.)
//!
//! Quarantined buffers stay mapped (and allocated; a quarantined piece keeps its huge page)
//! until the allocator goes, which is after the backend has turned bus mastering off and
//! reset the function, or until [`DmaAlloc::release_quarantine`].

use super::container::Container;
use super::error::VfioError;
use super::iova::IovaSpace;
use super::pagemap::Pagemap;
use super::slab::{Freed, Piece, Slab};
use super::sysfs::IommuMode;
use crate::backend::{DmaAlloc, DmaBuf, DmaOwner, Quarantine};
use crate::error::{Error, Result};
use nix::errno::Errno;
use nix::sys::mman::{mlock, mmap_anonymous, munmap, MapFlags, ProtFlags};
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// The base page.
pub const PAGE: usize = 4096;
/// A huge page.
pub const HUGE: usize = 2 << 20;

/// What to do when no-IOMMU mode finds no huge page.
const RESERVE_HUGE_PAGES: &str = "without an IOMMU all DMA memory is carved from 2 MiB huge \
     pages; reserve some (as root): `echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`";

/// How one buffer is backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Bytes mapped (a multiple of the page kind). Without an IOMMU: the huge page the buffer
    /// is carved from, which it shares with others.
    pub map_len: usize,
    /// Huge pages.
    pub huge: bool,
    /// Bytes the buffer shows (`len` rounded up to 4 KiB).
    pub len: usize,
}

/// How a buffer of `len` bytes aligned to `align` (for the device) is backed in `mode`, when
/// huge pages may be tried (`huge`).
pub fn plan(
    len: usize,
    align: usize,
    mode: IommuMode,
    huge: bool,
) -> std::result::Result<Plan, VfioError> {
    let bad = |why: String| VfioError::Memory { len, why };
    if !align.is_power_of_two() {
        return Err(bad(format!("alignment {align} is not a power of two")));
    }
    let len4k = len
        .max(1)
        .checked_next_multiple_of(PAGE)
        .ok_or_else(|| bad("too large".into()))?;
    match mode {
        IommuMode::Iommu => {
            // The IOMMU makes any set of pages contiguous for the device, at any alignment.
            if huge && len4k >= HUGE {
                let map_len = len4k
                    .checked_next_multiple_of(HUGE)
                    .ok_or_else(|| bad("too large".into()))?;
                return Ok(Plan {
                    map_len,
                    huge: true,
                    len: len4k,
                });
            }
            Ok(Plan {
                map_len: len4k,
                huge: false,
                len: len4k,
            })
        }
        IommuMode::NoIommu => {
            // A huge page is the one kind of memory that is both contiguous and stays put, so
            // every buffer is (a piece of) one, and none can be larger.
            if len4k > HUGE || align > HUGE {
                return Err(bad(format!(
                    "without an IOMMU a buffer must be physically contiguous: at most one 2 MiB \
                     huge page (asked: {len4k} bytes aligned to {align})"
                )));
            }
            if !huge {
                return Err(bad(format!(
                    "no 2 MiB huge pages to use: {RESERVE_HUGE_PAGES}"
                )));
            }
            Ok(Plan {
                map_len: HUGE,
                huge: true,
                len: len4k,
            })
        }
    }
}

/// A VFIO function's DMA allocator. Clones share one.
#[derive(Clone)]
pub struct VfioDma(Arc<Owner>);

struct Owner {
    container: Arc<Container>,
    /// Without an IOMMU: where physical addresses come from.
    pagemap: Option<Pagemap>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// With an IOMMU: the IOVAs in use.
    iovas: IovaSpace,
    /// Without an IOMMU: the huge pages buffers are carved from.
    pool: Pool,
    /// Buffers handed out, by host address.
    live: HashMap<usize, Chunk>,
    quarantine: Vec<Chunk>,
}

/// A buffer as the allocator knows it.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    va: NonNull<u8>,
    /// The address the device uses: an IOVA, or without an IOMMU the physical address.
    iova: u64,
    /// Bytes the buffer shows.
    len: usize,
    backing: Backing,
}

#[derive(Debug, Clone, Copy)]
enum Backing {
    /// A mapping of its own, made by this plan and mapped in the IOMMU (IOMMU mode).
    Mapping(Plan),
    /// A piece of a huge page of the pool (no-IOMMU mode).
    Piece(Piece),
}

// SAFETY: a chunk names memory this allocator owns; it is only passed between threads under
// the allocator's lock, never dereferenced here.
unsafe impl Send for Chunk {}

impl VfioDma {
    /// An allocator over `container` (which says whether there is an IOMMU).
    pub fn new(container: Arc<Container>) -> std::result::Result<VfioDma, VfioError> {
        let pagemap = match container.mode() {
            IommuMode::NoIommu => Some(Pagemap::open()?),
            IommuMode::Iommu => None,
        };
        Ok(VfioDma(Arc::new(Owner {
            container,
            pagemap,
            state: Mutex::new(State::default()),
        })))
    }

    /// Buffers handed out and not yet given back.
    pub fn live(&self) -> usize {
        self.0.state().live.len()
    }
}

impl Owner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn alloc(&self, len: usize, align: usize) -> std::result::Result<Chunk, VfioError> {
        let align = align.max(PAGE);
        let chunk = match &self.pagemap {
            Some(pagemap) => self.state().pool.carve(len, align, pagemap)?,
            None => self.map(len, align)?,
        };
        self.state().live.insert(chunk.va.as_ptr() as usize, chunk);
        Ok(chunk)
    }

    /// With an IOMMU: a mapping of its own for the buffer, mapped at an IOVA of ours.
    fn map(&self, len: usize, align: usize) -> std::result::Result<Chunk, VfioError> {
        let mode = IommuMode::Iommu;
        let mut p = plan(len, align, mode, true)?;
        let va = match map_anon(p) {
            Ok(va) => va,
            // No huge page free: 4 KiB pages do, since the IOMMU makes them contiguous.
            Err(_) if p.huge => {
                p = plan(len, align, mode, false)?;
                map_anon(p)?
            }
            Err(e) => return Err(e),
        };
        let iova = match self.state().iovas.alloc(p.map_len as u64, align as u64) {
            Some(iova) => iova,
            None => {
                unmap_anon(va, p);
                return Err(VfioError::Memory {
                    len: p.len,
                    why: "the IOVA window is spent".into(),
                });
            }
        };
        if let Err(e) = self.container.map(va.as_ptr() as usize, iova, p.map_len) {
            self.state().iovas.free(iova, p.map_len as u64);
            unmap_anon(va, p);
            return Err(e);
        }
        Ok(Chunk {
            va,
            iova,
            len: p.len,
            backing: Backing::Mapping(p),
        })
    }

    /// Makes a chunk unreachable for the device, then frees it. A mapping the IOMMU would not
    /// take back is leaked rather than freed: the device could still reach it.
    ///
    /// The caller has taken the chunk out of `live` or the quarantine (so it is released
    /// once), and the device can no longer reach it (the promise of `give_back` or
    /// `release_quarantine`).
    fn release(&self, c: Chunk) {
        match c.backing {
            Backing::Mapping(p) => {
                if let Err(e) = self.container.unmap(c.iova, p.map_len) {
                    log::error!("DMA buffer {:#x} leaked: {e}", c.iova);
                    return;
                }
                self.state().iovas.free(c.iova, p.map_len as u64);
                unmap_anon(c.va, p);
            }
            // SAFETY: the caller's promise above: the piece is this chunk's, freed once, out of
            // the device's reach, and no buffer refers to it any more.
            Backing::Piece(piece) => unsafe { self.state().pool.free(piece) },
        }
    }
}

impl DmaOwner for Owner {
    unsafe fn give_back(&self, va: NonNull<u8>, _iova: u64, _len: usize) {
        let chunk = self.state().live.remove(&(va.as_ptr() as usize));
        match chunk {
            Some(c) => self.release(c),
            None => log::error!("DMA buffer at {va:p} given back twice or never handed out"),
        }
    }

    unsafe fn quarantine(&self, va: NonNull<u8>, iova: u64, len: usize) {
        log::warn!("DMA buffer {iova:#x} ({len} bytes) quarantined: the device may still write it");
        let mut s = self.state();
        // A quarantined piece stays in use in the pool, so its huge page stays mapped.
        if let Some(c) = s.live.remove(&(va.as_ptr() as usize)) {
            s.quarantine.push(c);
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // The backend (which stopped the device) and every buffer are gone.
        let (held, pages) = {
            let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
            let held: Vec<Chunk> = s
                .quarantine
                .drain(..)
                .chain(s.live.drain().map(|(_, c)| c))
                .collect();
            let pages: Vec<HugePage> = s.pool.slab.drain().collect();
            (held, pages)
        };
        for c in held {
            // Pieces need no freeing one by one: their pages all go below.
            if let Backing::Mapping(_) = c.backing {
                self.release(c);
            }
        }
        for page in pages {
            page.unmap();
        }
    }
}

impl DmaAlloc for VfioDma {
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf> {
        let c = self.0.alloc(len, align).map_err(|e| Error::Dma {
            len,
            reason: e.to_string(),
        })?;
        let owner: Arc<dyn DmaOwner> = self.0.clone();
        // SAFETY: the chunk is mapped, zeroed (a fresh mapping, or a piece zeroed when it was
        // last freed) and reachable at `iova` for `len` bytes until the owner takes it back
        // (give_back or quarantine, once, by the buffer).
        Ok(unsafe { DmaBuf::new(c.va, c.iova, c.len, owner) })
    }

    fn quarantined(&self) -> Quarantine {
        let s = self.0.state();
        Quarantine {
            buffers: s.quarantine.len(),
            bytes: s.quarantine.iter().map(|c| c.len).sum(),
        }
    }

    unsafe fn release_quarantine(&self) {
        let held = std::mem::take(&mut self.0.state().quarantine);
        for c in held {
            self.0.release(c);
        }
    }
}

/// Without an IOMMU: buffers carved out of locked 2 MiB huge pages.
#[derive(Default)]
struct Pool {
    slab: Slab<HugePage>,
}

impl Pool {
    /// A zeroed buffer of `len` bytes whose physical address is aligned to `align` (at least
    /// 4 KiB): a piece of a huge page already mapped, or of a new one. The new page is mapped
    /// under the caller's lock, so no other allocation can see it half set up, or leave it
    /// mapped and empty.
    fn carve(
        &mut self,
        len: usize,
        align: usize,
        pagemap: &Pagemap,
    ) -> std::result::Result<Chunk, VfioError> {
        let p = plan(len, align, IommuMode::NoIommu, true)?;
        let (count, align) = (p.len / PAGE, align.max(PAGE) / PAGE);
        let (piece, page) = match self.slab.place(count, align) {
            Some((piece, page)) => (piece, *page),
            None => {
                let page = HugePage::map(len, pagemap)?;
                match self.slab.open(page, count, align) {
                    Ok((piece, page)) => (piece, *page),
                    Err(page) => {
                        page.unmap();
                        return Err(VfioError::Memory {
                            len,
                            why: format!(
                                "{count} pieces of 4 KiB aligned to {align} do not fit a huge \
                                 page (a bug in the allocator's plan)"
                            ),
                        });
                    }
                }
            }
        };
        let offset = piece.offset();
        // SAFETY: the slab places pieces inside their page, so `offset + len <= HUGE`: still
        // inside the page's mapping.
        let va = unsafe { page.va.add(offset) };
        Ok(Chunk {
            va,
            // A huge page is one physically contiguous frame (checked when it was mapped).
            iova: page.pa + offset as u64,
            len: piece.len(),
            backing: Backing::Piece(piece),
        })
    }

    /// Frees a piece: zeroed for its next user (new DMA memory is zero), or, when it was the
    /// last one in use of its huge page, with the page unmapped.
    ///
    /// # Safety
    ///
    /// `piece` was carved from this pool, is freed once, and neither the device nor any
    /// buffer can reach its memory any more.
    unsafe fn free(&mut self, piece: Piece) {
        match self.slab.free(piece) {
            // Zeroed before the caller's lock (held across this `&mut self`) is let go, so no
            // allocation can take the piece with the last user's bytes in it.
            Freed::Kept => match self.slab.page(piece.page) {
                // SAFETY: the piece lies inside its page's mapping, and is ours alone: out of
                // the device's reach and no buffer's (the caller's promise), not yet handed
                // out again (we hold `&mut self`).
                Some(page) => unsafe { page.va.add(piece.offset()).write_bytes(0, piece.len()) },
                None => log::error!("DMA piece {piece:?} freed from a page the pool lost"),
            },
            Freed::Empty(page) => page.unmap(),
            Freed::Unknown => log::error!("DMA piece {piece:?} freed twice or never carved"),
        }
    }
}

/// A 2 MiB huge page mapped for no-IOMMU DMA: locked, its physical address read once.
#[derive(Debug, Clone, Copy)]
struct HugePage {
    va: NonNull<u8>,
    /// The physical address of its first byte (2 MiB aligned, the page contiguous).
    pa: u64,
}

// SAFETY: a huge page names memory this allocator owns; it is only passed between threads
// under the allocator's lock, and dereferenced only to zero a piece no one else has.
unsafe impl Send for HugePage {}

/// The mapping of one huge page.
const HUGE_PLAN: Plan = Plan {
    map_len: HUGE,
    huge: true,
    len: HUGE,
};

impl HugePage {
    /// Maps a huge page (populated, so zero), locks it and reads where it is. `len` is the
    /// buffer it is for, named in errors.
    fn map(len: usize, pagemap: &Pagemap) -> std::result::Result<HugePage, VfioError> {
        let va = map_anon(HUGE_PLAN).map_err(|e| no_huge_page(len, e))?;
        match pin(va, pagemap) {
            Ok(pa) => Ok(HugePage { va, pa }),
            Err(e) => {
                unmap_anon(va, HUGE_PLAN);
                Err(e)
            }
        }
    }

    /// Unmaps the page: none of it is in use, in quarantine, or reachable by the device.
    fn unmap(self) {
        unmap_anon(self.va, HUGE_PLAN)
    }
}

/// The error for a huge page that could not be mapped: the system has none free, most
/// likely.
fn no_huge_page(len: usize, e: VfioError) -> VfioError {
    let why = match e {
        VfioError::Ioctl {
            errno: Errno::ENOMEM,
            ..
        } => "no 2 MiB huge page free".to_owned(),
        other => format!("no 2 MiB huge page could be mapped ({other})"),
    };
    VfioError::Memory {
        len,
        why: format!("{why}: {RESERVE_HUGE_PAGES}"),
    }
}

/// Without an IOMMU: locks the huge page mapped at `va` in memory and returns its physical
/// address, after checking that the page is what the device will be told it is, one 2 MiB
/// frame (2 MiB aligned, its last 4 KiB right below the end), so that every piece of it is
/// where its offset says.
fn pin(va: NonNull<u8>, pagemap: &Pagemap) -> std::result::Result<u64, VfioError> {
    // SAFETY: a mapping of ours, HUGE bytes.
    unsafe { mlock(va.cast(), HUGE) }.map_err(|errno| VfioError::Ioctl {
        what: format!("mlock of a {HUGE}-byte huge page of DMA memory"),
        errno,
    })?;
    let start = va.as_ptr() as usize;
    let pa = pagemap.physical(start)?;
    let last = pagemap.physical(start + HUGE - PAGE)?;
    if pa % HUGE as u64 != 0 || last.checked_sub(pa) != Some((HUGE - PAGE) as u64) {
        return Err(VfioError::Memory {
            len: HUGE,
            why: format!(
                "the huge page at {va:p} lies at physical {pa:#x} (its last 4 KiB at \
                 {last:#x}), not in one 2 MiB-aligned frame, so a device without an IOMMU \
                 cannot use it; check that the kernel gives 2 MiB hugetlb pages \
                 (/sys/kernel/mm/hugepages/hugepages-2048kB), or use an IOMMU"
            ),
        });
    }
    Ok(pa)
}

/// A zeroed, populated anonymous mapping as `p` asks.
fn map_anon(p: Plan) -> std::result::Result<NonNull<u8>, VfioError> {
    let len = NonZeroUsize::new(p.map_len).ok_or_else(|| VfioError::Memory {
        len: 0,
        why: "empty".into(),
    })?;
    let mut flags = MapFlags::MAP_PRIVATE | MapFlags::MAP_ANONYMOUS | MapFlags::MAP_POPULATE;
    if p.huge {
        flags |= MapFlags::MAP_HUGETLB | MapFlags::MAP_HUGE_2MB;
    }
    // SAFETY: a new anonymous mapping at an address the kernel picks.
    let va = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            flags,
        )
    }
    .map_err(|errno| VfioError::Ioctl {
        what: format!(
            "mmap of {} bytes of {} pages",
            p.map_len,
            if p.huge { "2 MiB" } else { "4 KiB" }
        ),
        errno,
    })?;
    Ok(va.cast())
}

fn unmap_anon(va: NonNull<u8>, p: Plan) {
    // SAFETY: a mapping `map_anon` made for `p`, unmapped once, no longer reachable.
    if let Err(e) = unsafe { munmap(va.cast(), p.map_len) } {
        log::warn!("unmapping DMA memory at {va:p}: {e}");
    }
}

#[cfg(test)]
mod tests;
