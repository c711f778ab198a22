//! Physical addresses of this process's pages, from `/proc/self/pagemap`: what a device
//! without an IOMMU (VFIO's no-IOMMU mode) must be given, as DPDK does in its IOVA-as-PA
//! mode. Each page has a 64-bit entry: bit 63 "present", bits 0..=54 the page frame number.
//! The kernel shows frame numbers only to CAP_SYS_ADMIN (zeros otherwise), and a page that
//! is not in memory has none; both are errors here, never a zero address handed to a device.
//! The memory must stay where it is while the device may use it. Locking (`mlock`) keeps a
//! page from being swapped out but not from being migrated by compaction, so `dma.rs` gives
//! the device only 2 MiB hugetlb pages, which compaction leaves in place.

use super::error::VfioError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bit 63 of an entry: the page is in memory.
const PRESENT: u64 = 1 << 63;
/// Bits 0..=54: the page frame number.
const PFN_MASK: u64 = (1 << 55) - 1;

/// The open pagemap of this process.
#[derive(Debug)]
pub struct Pagemap {
    file: File,
    path: PathBuf,
    page: usize,
}

impl Pagemap {
    /// Opens `/proc/self/pagemap`.
    pub fn open() -> Result<Pagemap, VfioError> {
        Pagemap::open_at(Path::new("/proc/self/pagemap"), page_size())
    }

    /// Opens a pagemap file for pages of `page` bytes (tests give their own).
    pub fn open_at(path: &Path, page: usize) -> Result<Pagemap, VfioError> {
        let file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => VfioError::Permission {
                path: path.to_owned(),
            },
            _ => VfioError::System {
                path: path.to_owned(),
                what: e.to_string(),
            },
        })?;
        Ok(Pagemap {
            file,
            path: path.to_owned(),
            page,
        })
    }

    /// The physical address of virtual address `va` of this process.
    pub fn physical(&self, va: usize) -> Result<u64, VfioError> {
        let mut entry = [0u8; 8];
        let at = (va / self.page) as u64 * 8;
        self.file
            .read_exact_at(&mut entry, at)
            .map_err(|e| VfioError::System {
                path: self.path.clone(),
                what: format!("reading the entry of {va:#x}: {e}"),
            })?;
        decode(u64::from_ne_bytes(entry), va, self.page)
    }
}

/// The physical address an entry gives for `va`.
pub fn decode(entry: u64, va: usize, page: usize) -> Result<u64, VfioError> {
    if entry & PRESENT == 0 {
        return Err(VfioError::PageNotPresent { va });
    }
    let pfn = entry & PFN_MASK;
    if pfn == 0 {
        return Err(VfioError::PagemapHidden);
    }
    pfn.checked_mul(page as u64)
        .map(|base| base + (va % page) as u64)
        .ok_or(VfioError::BadPagemapEntry { va, entry })
}

/// The base page size.
pub fn page_size() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_decode_to_frame_and_offset() {
        assert_eq!(
            decode(PRESENT | 0x1234, 0x7000_0abc, 4096).unwrap(),
            0x1234abc
        );
        assert!(matches!(
            decode(0x1234, 0x1000, 4096),
            Err(VfioError::PageNotPresent { va: 0x1000 })
        ));
        assert!(matches!(
            decode(PRESENT, 0x1000, 4096),
            Err(VfioError::PagemapHidden)
        ));
        // A frame number past the 64-bit address space is an error, not an overflow.
        assert!(matches!(
            decode(PRESENT | PFN_MASK, 0, 4096),
            Err(VfioError::BadPagemapEntry { .. })
        ));
        // The flag bits above the frame number are not part of it.
        assert_eq!(
            decode(PRESENT | 1 << 61 | 1 << 55 | 7, 5, 4096).unwrap(),
            7 * 4096 + 5
        );
    }

    proptest! {
        #[test]
        fn any_entry_decodes_or_errs(entry: u64, va: usize) {
            if let Ok(pa) = decode(entry, va, 4096) {
                prop_assert_eq!(pa % 4096, (va % 4096) as u64);
                prop_assert!(pa >= 4096);
            }
        }
    }

    /// This process's own pages: as root, every touched page has a frame, distinct pages
    /// have distinct frames and the offset carries over; without CAP_SYS_ADMIN the frames are
    /// hidden, which must be the error that says so.
    #[test]
    fn this_process_pages() {
        let page = page_size();
        let mut buf = vec![1u8; 4 * page];
        let map = Pagemap::open().unwrap();
        let base = buf.as_mut_ptr() as usize;
        let root = nix::unistd::geteuid().is_root();
        let first = map.physical(base + 3);
        if !root {
            assert!(matches!(first, Err(VfioError::PagemapHidden)), "{first:?}");
            return;
        }
        let first = first.unwrap();
        assert_eq!(first % page as u64, ((base + 3) % page) as u64);
        let starts: Vec<u64> = (0..4)
            .map(|k| map.physical(base + k * page).unwrap() / page as u64)
            .collect();
        let mut uniq = starts.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(
            uniq.len(),
            starts.len(),
            "two pages on one frame: {starts:x?}"
        );
        buf[0] = 2;
    }

    /// A page never touched has no frame yet: the error says to touch and lock it.
    #[test]
    fn an_untouched_page_is_not_present() {
        let page = page_size();
        // SAFETY: a fresh private mapping at an address the kernel picks; nothing else
        // refers to it.
        let mem = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                std::num::NonZeroUsize::new(page).unwrap(),
                nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE,
                nix::sys::mman::MapFlags::MAP_PRIVATE,
            )
        }
        .unwrap();
        let va = mem.as_ptr() as usize;
        let e = Pagemap::open().unwrap().physical(va).unwrap_err();
        assert!(matches!(e, VfioError::PageNotPresent { .. }), "{e}");
        assert!(e.to_string().contains("touched and locked"), "{e}");
        // SAFETY: the mapping made above, never referenced.
        unsafe { nix::sys::mman::munmap(mem, page) }.unwrap();
    }

    #[test]
    fn a_missing_pagemap_is_a_system_error() {
        let e = Pagemap::open_at(Path::new("/proc/self/no-such-file"), 4096).unwrap_err();
        assert!(e.to_string().contains("/proc/self/no-such-file"), "{e}");
    }
}
