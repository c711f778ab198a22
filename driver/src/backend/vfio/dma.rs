//! DMA memory for a VFIO function: anonymous mappings (2 MiB huge pages when the system has
//! them and a buffer is that large, 4 KiB pages otherwise), made reachable for the device.
//!
//! - With an IOMMU each buffer gets an IOVA from [`IovaSpace`] and a type-1 mapping; the
//!   kernel pins its pages. Giving the buffer back unmaps it before the memory is freed, so
//!   the device can never reach memory the process reuses.
//! - Without one the device sees physical addresses, so a buffer must be physically
//!   contiguous and stay where it is: a single 4 KiB page, or a single 2 MiB huge page for
//!   anything larger or aligned past 4 KiB, locked, its address read from
//!   `/proc/self/pagemap` (DPDK's IOVA-as-PA mode does the same).
//!
//! Quarantined buffers stay mapped (and allocated) until the allocator goes, which is after
//! the backend has turned bus mastering off and reset the function, or until
//! [`DmaAlloc::release_quarantine`].

use super::container::Container;
use super::error::VfioError;
use super::iova::IovaSpace;
use super::pagemap::Pagemap;
use super::sysfs::IommuMode;
use crate::backend::{DmaAlloc, DmaBuf, DmaOwner, Quarantine};
use crate::error::{Error, Result};
use nix::sys::mman::{mlock, mmap_anonymous, munmap, MapFlags, ProtFlags};
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// The base page.
pub const PAGE: usize = 4096;
/// A huge page.
pub const HUGE: usize = 2 << 20;

/// How one buffer is backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Bytes mapped (a multiple of the page kind).
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
            if len4k == PAGE && align <= PAGE {
                return Ok(Plan {
                    map_len: PAGE,
                    huge: false,
                    len: PAGE,
                });
            }
            if len4k > HUGE || align > HUGE {
                return Err(bad(format!(
                    "without an IOMMU a buffer must be physically contiguous: at most one 2 MiB \
                     huge page (asked: {len4k} bytes aligned to {align})"
                )));
            }
            if !huge {
                return Err(bad(
                    "without an IOMMU, buffers over 4 KiB need 2 MiB huge pages (none free: \
                     `echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`)"
                        .into(),
                ));
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
    pagemap: Option<Pagemap>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    iovas: IovaSpace,
    /// Buffers handed out, by host address.
    live: HashMap<usize, Chunk>,
    quarantine: Vec<Chunk>,
}

#[derive(Debug, Clone, Copy)]
struct Chunk {
    va: NonNull<u8>,
    iova: u64,
    plan: Plan,
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
        let mode = self.container.mode();
        let align = align.max(PAGE);
        let mut p = plan(len, align, mode, true)?;
        let va = match map_anon(p) {
            Ok(va) => va,
            // No huge page free: 4 KiB pages do with an IOMMU.
            Err(_) if p.huge && mode == IommuMode::Iommu => {
                p = plan(len, align, mode, false)?;
                map_anon(p)?
            }
            Err(_) if p.huge => {
                return Err(VfioError::Memory {
                    len,
                    why:
                        "no 2 MiB huge page free (without an IOMMU, buffers over 4 KiB need \
                          one: `echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`)"
                            .into(),
                })
            }
            Err(e) => return Err(e),
        };
        let chunk = match self.reach(va, p, align) {
            Ok(iova) => Chunk { va, iova, plan: p },
            Err(e) => {
                unmap_anon(va, p);
                return Err(e);
            }
        };
        self.state().live.insert(va.as_ptr() as usize, chunk);
        Ok(chunk)
    }

    /// Makes `va` reachable for the device; returns the address it uses.
    fn reach(&self, va: NonNull<u8>, p: Plan, align: usize) -> std::result::Result<u64, VfioError> {
        match &self.pagemap {
            None => {
                let iova = self
                    .state()
                    .iovas
                    .alloc(p.map_len as u64, align as u64)
                    .ok_or_else(|| VfioError::Memory {
                        len: p.len,
                        why: "the IOVA window is spent".into(),
                    })?;
                if let Err(e) = self.container.map(va.as_ptr() as usize, iova, p.map_len) {
                    self.state().iovas.free(iova, p.map_len as u64);
                    return Err(e);
                }
                Ok(iova)
            }
            Some(pagemap) => pin(va, p, align, pagemap),
        }
    }

    /// Makes a chunk unreachable for the device, then frees it. A mapping the IOMMU would not
    /// take back is leaked rather than freed: the device could still reach it.
    fn release(&self, c: Chunk) {
        if self.pagemap.is_none() {
            if let Err(e) = self.container.unmap(c.iova, c.plan.map_len) {
                log::error!("DMA buffer {:#x} leaked: {e}", c.iova);
                return;
            }
            self.state().iovas.free(c.iova, c.plan.map_len as u64);
        }
        unmap_anon(c.va, c.plan);
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
        if let Some(c) = s.live.remove(&(va.as_ptr() as usize)) {
            s.quarantine.push(c);
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // The backend (which stopped the device) and every buffer are gone.
        let held: Vec<Chunk> = {
            let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
            s.quarantine
                .drain(..)
                .chain(s.live.drain().map(|(_, c)| c))
                .collect()
        };
        for c in held {
            self.release(c);
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
        // SAFETY: the chunk is mapped, zeroed and reachable at `iova` for `len` bytes until
        // the owner takes it back (give_back or quarantine, once, by the buffer).
        Ok(unsafe { DmaBuf::new(c.va, c.iova, c.plan.len, owner) })
    }

    fn quarantined(&self) -> Quarantine {
        let s = self.0.state();
        Quarantine {
            buffers: s.quarantine.len(),
            bytes: s.quarantine.iter().map(|c| c.plan.len).sum(),
        }
    }

    unsafe fn release_quarantine(&self) {
        let held = std::mem::take(&mut self.0.state().quarantine);
        for c in held {
            self.0.release(c);
        }
    }
}

/// Without an IOMMU: locks the mapping `va` made for `p` in memory and returns its physical
/// address (one contiguous page, normal or huge, so the device may use the whole buffer from
/// there), checked against `align`.
fn pin(
    va: NonNull<u8>,
    p: Plan,
    align: usize,
    pagemap: &Pagemap,
) -> std::result::Result<u64, VfioError> {
    // SAFETY: a mapping of ours, `map_len` bytes.
    unsafe { mlock(va.cast(), p.map_len) }.map_err(|errno| VfioError::Ioctl {
        what: format!("mlock of {} bytes of DMA memory", p.map_len),
        errno,
    })?;
    let pa = pagemap.physical(va.as_ptr() as usize)?;
    if pa % align as u64 != 0 {
        return Err(VfioError::Memory {
            len: p.len,
            why: format!("physical address {pa:#x} is not aligned to {align}"),
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
mod tests {
    use super::*;

    #[test]
    fn with_an_iommu_any_buffer_maps_and_large_ones_use_huge_pages() {
        let p = plan(100, 64, IommuMode::Iommu, true).unwrap();
        assert_eq!(
            p,
            Plan {
                map_len: PAGE,
                huge: false,
                len: PAGE
            }
        );
        let p = plan(3 * PAGE + 1, 1 << 16, IommuMode::Iommu, true).unwrap();
        assert_eq!(
            p,
            Plan {
                map_len: 4 * PAGE,
                huge: false,
                len: 4 * PAGE
            }
        );
        let p = plan(HUGE + 1, PAGE, IommuMode::Iommu, true).unwrap();
        assert_eq!(
            p,
            Plan {
                map_len: 2 * HUGE,
                huge: true,
                len: HUGE + PAGE
            }
        );
        let p = plan(HUGE, PAGE, IommuMode::Iommu, false).unwrap();
        assert!(!p.huge);
        assert!(plan(usize::MAX, PAGE, IommuMode::Iommu, true).is_err());
        assert!(plan(PAGE, 3, IommuMode::Iommu, true).is_err());
    }

    #[test]
    fn without_an_iommu_buffers_are_one_contiguous_page() {
        let p = plan(PAGE, PAGE, IommuMode::NoIommu, false).unwrap();
        assert_eq!(
            p,
            Plan {
                map_len: PAGE,
                huge: false,
                len: PAGE
            }
        );
        let p = plan(2 * PAGE, PAGE, IommuMode::NoIommu, true).unwrap();
        assert_eq!(
            p,
            Plan {
                map_len: HUGE,
                huge: true,
                len: 2 * PAGE
            }
        );
        let p = plan(PAGE, 1 << 16, IommuMode::NoIommu, true).unwrap();
        assert!(p.huge, "an alignment past 4 KiB needs a huge page");
        let e = plan(2 * PAGE, PAGE, IommuMode::NoIommu, false).unwrap_err();
        assert!(e.to_string().contains("nr_hugepages"), "{e}");
        let e = plan(HUGE + 1, PAGE, IommuMode::NoIommu, true).unwrap_err();
        assert!(e.to_string().contains("physically contiguous"), "{e}");
    }

    /// No-IOMMU mode's pinning on this machine: a locked page has a physical address (as
    /// root), or the pagemap says it hides them (`PagemapHidden`) — never a zero address. A
    /// huge page, when the system has one free, is pinned the same way.
    #[test]
    fn pinned_pages_have_physical_addresses() {
        let pagemap = Pagemap::open().unwrap();
        let p = plan(PAGE, PAGE, IommuMode::NoIommu, false).unwrap();
        let va = map_anon(p).unwrap();
        match pin(va, p, PAGE, &pagemap) {
            Ok(pa) => assert!(pa != 0 && pa % PAGE as u64 == 0, "{pa:#x}"),
            Err(e) => assert!(matches!(e, VfioError::PagemapHidden), "{e}"),
        }
        unmap_anon(va, p);
        let p = plan(2 * PAGE, PAGE, IommuMode::NoIommu, true).unwrap();
        if let Ok(va) = map_anon(p) {
            match pin(va, p, HUGE, &pagemap) {
                Ok(pa) => assert!(pa != 0 && pa % HUGE as u64 == 0, "{pa:#x}"),
                Err(e) => assert!(matches!(e, VfioError::PagemapHidden), "{e}"),
            }
            unmap_anon(va, p);
        }
    }

    #[test]
    fn anonymous_memory_maps_zeroed_and_unmaps() {
        let p = plan(3 * PAGE, PAGE, IommuMode::Iommu, false).unwrap();
        let va = map_anon(p).unwrap();
        // SAFETY: the mapping just made, p.map_len bytes.
        let zero = (0..p.map_len).all(|i| unsafe { va.as_ptr().add(i).read_volatile() } == 0);
        assert!(zero);
        unmap_anon(va, p);
    }
}
