//! Guest memory the client shares (DMA_MAP with a file descriptor): mapped into this process
//! with `mmap`, kept until DMA_UNMAP, a reset or the end of the connection.
//!
//! Every map is checked before it is made: non-empty, page-aligned, no address overflow, no
//! overlap with a region already mapped, inside the file (an `mmap` past the end of a file
//! maps pages whose access raises SIGBUS: the file's size is checked, so the model can never
//! touch such a page), within the limits on the number and total size of regions and on the
//! bytes of files mapped into this process. The size check would not last if the client could
//! shrink the file afterwards (`ftruncate`): the pages past the new end would raise SIGBUS
//! under the model. So a file is mapped only once it is sealed against shrinking
//! (F_SEAL_SHRINK, added here if it is missing; seals cannot be removed, so the file stays
//! unshrinkable after it is unmapped); files that cannot be sealed are refused. QEMU's
//! `memory-backend-memfd` (`share=on`) makes sealable memfds and seals them itself.
//! Regions
//! without a file descriptor (QEMU sends them for ROM/BIOS ranges) are recorded but give the
//! device nothing to reach: accesses there are DMA faults.
//!
//! Behind a virtual IOMMU the client maps the guest's IO virtual addresses page by page, many
//! thousands of regions over one file (guest RAM), often the same pages under several
//! addresses. So each file is mapped into this process once, whole, and shared by the
//! regions that use it ([`FileMap`]); a region is a view into it, and the last region of a
//! file unmaps it. Regions are kept in an ordered map, so a map or an unmap costs a lookup,
//! not a walk over every region.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Most regions mapped at once: without a virtual IOMMU QEMU maps a handful (RAM below and
/// above 4 GiB, ROMs); behind one, a region per page the guest maps for the device (a
/// quarter of a million covers 1 GiB of guest RAM mapped page by page).
pub const MAX_REGIONS: usize = 1 << 18;
/// Most bytes mapped at once: the regions' sizes add up to at most this, and so do the
/// whole-file mappings alive in this process (each file is mapped whole, so a one-page region
/// of a large sparse file costs the whole file's address space).
pub const MAX_BYTES: u64 = 64 << 30;
const PAGE: u64 = 4096;

/// Why a DMA_MAP or DMA_UNMAP was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MapError {
    /// Size 0, or address/offset/size not page-aligned.
    #[error(
        "region {address:#x}+{size:#x} (file offset {offset:#x}) is empty or not page-aligned"
    )]
    Unaligned {
        /// IOVA.
        address: u64,
        /// Bytes.
        size: u64,
        /// File offset.
        offset: u64,
    },
    /// address + size or offset + size overflows.
    #[error("region {address:#x}+{size:#x} wraps around")]
    Overflow {
        /// IOVA.
        address: u64,
        /// Bytes.
        size: u64,
    },
    /// Overlaps a region already mapped.
    #[error("region {address:#x}+{size:#x} overlaps a mapped region")]
    Overlap {
        /// IOVA.
        address: u64,
        /// Bytes.
        size: u64,
    },
    /// The range is not inside the file.
    #[error("file range {offset:#x}+{size:#x} is not inside the {file_size:#x}-byte file")]
    OutsideFile {
        /// File offset.
        offset: u64,
        /// Bytes.
        size: u64,
        /// The file's size.
        file_size: u64,
    },
    /// The file cannot be sealed against shrinking (a plain file, a memfd made without
    /// MFD_ALLOW_SEALING, one sealed without F_SEAL_SHRINK): mapping it would let the client
    /// pull pages out from under the model.
    #[error("the file cannot be sealed against shrinking (F_SEAL_SHRINK)")]
    Unsealable,
    /// Too many regions or bytes (`size`: the region's, or the whole file's when a mapping of
    /// it would pass the limit on bytes mapped).
    #[error("mapping {size:#x} more bytes would pass the limits ({MAX_REGIONS} regions, {MAX_BYTES:#x} bytes)")]
    Limit {
        /// Bytes asked for.
        size: u64,
    },
    /// fstat or mmap failed.
    #[error("{what}: {err}")]
    Os {
        /// The call.
        what: &'static str,
        /// errno text.
        err: String,
    },
    /// DMA_UNMAP of a range that is not exactly one mapped region.
    #[error("no mapped region is exactly {address:#x}+{size:#x}")]
    NotMapped {
        /// IOVA.
        address: u64,
        /// Bytes.
        size: u64,
    },
}

impl MapError {
    /// The errno a vfio-user error reply carries for it.
    pub fn errno(&self) -> i32 {
        match self {
            MapError::Limit { .. } => libc::ENOSPC,
            MapError::Overlap { .. } => libc::EEXIST,
            MapError::NotMapped { .. } => libc::ENOENT,
            _ => libc::EINVAL,
        }
    }
}

/// One `mmap` of a client's file, whole, unmapped on drop.
#[derive(Debug)]
pub struct FileMap {
    ptr: *mut u8,
    len: usize,
    /// The bytes mapped by its [`GuestMemory`]'s files, alive ones only: this mapping takes
    /// its length back off when it goes.
    live: Arc<AtomicU64>,
}

// SAFETY: the mapping is plain shared memory; the pointer is only handed to the model, which
// accesses it through its own volatile windows under its own rules.
unsafe impl Send for FileMap {}
// SAFETY: as above; this type itself never reads or writes the memory.
unsafe impl Sync for FileMap {}

/// A region's part of a [`FileMap`]: `len` bytes from `offset`. The file's mapping lives as
/// long as a view of it does.
#[derive(Debug)]
pub struct Mapping {
    file: Arc<FileMap>,
    offset: usize,
    len: usize,
}

impl Mapping {
    /// The host address of the first byte.
    pub fn ptr(&self) -> *mut u8 {
        // SAFETY: `offset + len` lies inside the file's mapping (checked when the view was
        // made), so the pointer stays inside it.
        unsafe { self.file.ptr.add(self.offset) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty view (never made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; the last view went, and each view's
        // owner made sure (GuestMemory's contract) that the model no longer reaches it.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
        self.live.fetch_sub(self.len as u64, Ordering::Relaxed);
    }
}

/// One DMA_MAP region.
#[derive(Debug)]
pub struct Region {
    /// IOVA of the first byte (guest-physical under QEMU without a vIOMMU).
    pub iova: u64,
    /// Bytes.
    pub size: u64,
    /// The host mapping; `None` for a region sent without a file descriptor.
    pub map: Option<Mapping>,
}

/// A file as the kernel knows it (device, inode) and whether it is mapped writable: regions
/// of one file share its mapping.
type FileKey = (u64, u64, bool);

/// Every region of the connection, by IOVA.
#[derive(Debug, Default)]
pub struct GuestMemory {
    regions: BTreeMap<u64, Region>,
    bytes: u64,
    /// The files mapped, while a region uses them (the latest mapping of each).
    files: HashMap<FileKey, Weak<FileMap>>,
    /// Bytes of every file mapping alive, the ones `files` no longer names included (a file
    /// that grew is mapped again while regions keep its older mapping).
    live: Arc<AtomicU64>,
}

impl GuestMemory {
    /// Checks a DMA_MAP and makes its mapping (not yet given to the model).
    pub fn map(
        &mut self,
        iova: u64,
        size: u64,
        offset: u64,
        fd: Option<&File>,
        writable: bool,
    ) -> Result<&Region, MapError> {
        if size == 0 || iova % PAGE != 0 || size % PAGE != 0 || offset % PAGE != 0 {
            return Err(MapError::Unaligned {
                address: iova,
                size,
                offset,
            });
        }
        let end = iova
            .checked_add(size)
            .filter(|_| offset.checked_add(size).is_some())
            .ok_or(MapError::Overflow {
                address: iova,
                size,
            })?;
        // The region starting last before `end` is the only one that can overlap.
        if let Some((_, r)) = self.regions.range(..end).next_back() {
            if iova < r.iova + r.size {
                return Err(MapError::Overlap {
                    address: iova,
                    size,
                });
            }
        }
        if self.regions.len() >= MAX_REGIONS || self.bytes.saturating_add(size) > MAX_BYTES {
            return Err(MapError::Limit { size });
        }
        let map = match fd {
            None => None,
            Some(f) => Some(self.view(f, offset, size, writable)?),
        };
        self.bytes += size;
        let region = Region { iova, size, map };
        Ok(self.regions.entry(iova).or_insert(region))
    }

    /// A view of `size` bytes of `f` from `offset`, in the file's shared mapping (made now if
    /// no region uses the file, or if the file grew past it).
    fn view(
        &mut self,
        f: &File,
        offset: u64,
        size: u64,
        writable: bool,
    ) -> Result<Mapping, MapError> {
        // Sealed first: the size read next then stays a lower bound for the mapping's life.
        seal_against_shrinking(f)?;
        let meta = f.metadata().map_err(|_| os_err("fstat"))?;
        let file_size = meta.len();
        if offset.checked_add(size).is_none_or(|end| end > file_size) {
            return Err(MapError::OutsideFile {
                offset,
                size,
                file_size,
            });
        }
        let key = (meta.dev(), meta.ino(), writable);
        let end = offset + size;
        let file = match self.files.get(&key).and_then(Weak::upgrade) {
            Some(m) if end <= m.len as u64 => m,
            _ => {
                // Counted before it is made: the address space is taken by the mmap itself,
                // however little of the file a region uses.
                let live = self.live.load(Ordering::Relaxed);
                if live.checked_add(file_size).is_none_or(|t| t > MAX_BYTES) {
                    return Err(MapError::Limit { size: file_size });
                }
                let m = Arc::new(mmap_file(f, file_size, writable, &self.live)?);
                self.files.retain(|_, w| w.strong_count() > 0);
                self.files.insert(key, Arc::downgrade(&m));
                m
            }
        };
        Ok(Mapping {
            file,
            // Both fit: end <= the mapping's length, a usize.
            offset: offset as usize,
            len: size as usize,
        })
    }

    /// Removes the regions inside `iova .. iova + size` and hands them back (the caller takes
    /// them away from the model before dropping them), as a VFIO type-1 unmap does: a range
    /// may cover many regions (a virtual IOMMU's invalidation), but none that it cuts
    /// through, and at least one.
    pub fn unmap(&mut self, iova: u64, size: u64) -> Result<Vec<Region>, MapError> {
        let inside = self.covered(iova, size)?;
        let mut out = Vec::with_capacity(inside.len());
        for at in inside {
            if let Some(r) = self.regions.remove(&at) {
                self.bytes -= r.size;
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The IOVAs of the regions inside `iova .. iova + size`; an error if the range cuts
    /// through a region or holds none.
    pub fn covered(&self, iova: u64, size: u64) -> Result<Vec<u64>, MapError> {
        let not_mapped = MapError::NotMapped {
            address: iova,
            size,
        };
        let end = iova.checked_add(size).ok_or(MapError::Overflow {
            address: iova,
            size,
        })?;
        if size == 0 {
            return Err(not_mapped);
        }
        // A region starting before the range that reaches into it is cut.
        if let Some((_, r)) = self.regions.range(..iova).next_back() {
            if r.iova + r.size > iova {
                return Err(not_mapped);
            }
        }
        let mut inside = Vec::new();
        for (&at, r) in self.regions.range(iova..end) {
            if r.iova + r.size > end {
                return Err(not_mapped);
            }
            inside.push(at);
        }
        if inside.is_empty() {
            return Err(not_mapped);
        }
        Ok(inside)
    }

    /// Removes every region.
    pub fn take_all(&mut self) -> Vec<Region> {
        self.bytes = 0;
        std::mem::take(&mut self.regions).into_values().collect()
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// The regions, by IOVA.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.regions.values()
    }

    /// Bytes mapped.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Files mapped into this process now (each once, whatever its number of regions).
    pub fn files_mapped(&self) -> usize {
        self.files.values().filter(|w| w.strong_count() > 0).count()
    }

    /// Bytes of the file mappings alive in this process (what the limit on mapped bytes
    /// counts), older mappings of grown files included.
    pub fn bytes_mapped(&self) -> u64 {
        self.live.load(Ordering::Relaxed)
    }
}

/// Makes sure `f` can never shrink while it is mapped: adds F_SEAL_SHRINK, or finds it there
/// already when the seals are closed (F_SEAL_SEAL, as QEMU's sealed memfds have them).
/// Anything else (a file system without seals, a memfd made without MFD_ALLOW_SEALING, a
/// read-only descriptor of an unsealed memfd) is [`MapError::Unsealable`].
fn seal_against_shrinking(f: &File) -> Result<(), MapError> {
    let fd = f.as_raw_fd();
    // SAFETY: fcntl with an int argument on a descriptor `f` keeps open; no memory is passed.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } == 0 {
        return Ok(());
    }
    // SAFETY: as above; F_GET_SEALS takes no argument.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    if seals >= 0 && seals & libc::F_SEAL_SHRINK != 0 {
        Ok(())
    } else {
        Err(MapError::Unsealable)
    }
}

fn os_err(what: &'static str) -> MapError {
    MapError::Os {
        what,
        err: std::io::Error::last_os_error().to_string(),
    }
}

/// Maps all `size` bytes of `f`, shared, adding them to `live` until the mapping goes.
fn mmap_file(
    f: &File,
    size: u64,
    writable: bool,
    live: &Arc<AtomicU64>,
) -> Result<FileMap, MapError> {
    let len = usize::try_from(size).map_err(|_| MapError::Limit { size })?;
    let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
    // SAFETY: a fresh shared mapping at an address the kernel picks; nothing else refers to it.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    live.fetch_add(size, Ordering::Relaxed);
    Ok(FileMap {
        ptr: ptr.cast(),
        len,
        live: live.clone(),
    })
}

#[cfg(test)]
mod tests;
