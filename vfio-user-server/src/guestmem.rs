//! Guest memory the client shares (DMA_MAP with a file descriptor): mapped into this process
//! with `mmap`, kept until DMA_UNMAP, a reset or the end of the connection.
//!
//! Every map is checked before it is made: non-empty, page-aligned, no address overflow, no
//! overlap with a region already mapped, inside the file (an `mmap` past the end of a file
//! maps pages whose access raises SIGBUS: the file's size is checked, so the model can never
//! touch such a page), within the limits on the number and total size of regions. Regions
//! without a file descriptor (QEMU sends them for ROM/BIOS ranges) are recorded but give the
//! device nothing to reach: accesses there are DMA faults.

use std::fs::File;
use std::os::fd::AsRawFd;

/// Most regions mapped at once (QEMU maps a handful: RAM below and above 4 GiB, ROMs).
pub const MAX_REGIONS: usize = 1024;
/// Most bytes mapped at once.
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
    /// Too many regions or bytes.
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

/// One `mmap` of a client's file, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; the pointer is only handed to the model, which
// accesses it through its own volatile windows under its own rules.
unsafe impl Send for Mapping {}
// SAFETY: as above; this type itself never reads or writes the memory.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The host address of the first byte.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty mapping (never made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; the owner of this Mapping made sure
        // (GuestMemory's contract) that the model no longer reaches it.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
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

/// Every region of the connection, by IOVA.
#[derive(Debug, Default)]
pub struct GuestMemory {
    regions: Vec<Region>,
    bytes: u64,
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
        if self
            .regions
            .iter()
            .any(|r| iova < r.iova + r.size && r.iova < end)
        {
            return Err(MapError::Overlap {
                address: iova,
                size,
            });
        }
        if self.regions.len() >= MAX_REGIONS || self.bytes.saturating_add(size) > MAX_BYTES {
            return Err(MapError::Limit { size });
        }
        let map = match fd {
            None => None,
            Some(f) => Some(mmap_file(f, offset, size, writable)?),
        };
        self.bytes += size;
        let at = self.regions.partition_point(|r| r.iova < iova);
        self.regions.insert(at, Region { iova, size, map });
        Ok(&self.regions[at])
    }

    /// Removes the region that is exactly `iova..iova + size` and hands it back (the caller
    /// takes it away from the model before dropping it).
    pub fn unmap(&mut self, iova: u64, size: u64) -> Result<Region, MapError> {
        let i = self
            .regions
            .iter()
            .position(|r| r.iova == iova && r.size == size)
            .ok_or(MapError::NotMapped {
                address: iova,
                size,
            })?;
        self.bytes -= size;
        Ok(self.regions.remove(i))
    }

    /// Removes every region.
    pub fn take_all(&mut self) -> Vec<Region> {
        self.bytes = 0;
        std::mem::take(&mut self.regions)
    }

    /// The regions, by IOVA.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Bytes mapped.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

fn os_err(what: &'static str) -> MapError {
    MapError::Os {
        what,
        err: std::io::Error::last_os_error().to_string(),
    }
}

/// Maps `size` bytes of `f` from `offset`, shared, after checking the range is in the file.
fn mmap_file(f: &File, offset: u64, size: u64, writable: bool) -> Result<Mapping, MapError> {
    let file_size = f.metadata().map_err(|_| os_err("fstat"))?.len();
    if offset.checked_add(size).is_none_or(|end| end > file_size) {
        return Err(MapError::OutsideFile {
            offset,
            size,
            file_size,
        });
    }
    let len = usize::try_from(size).map_err(|_| MapError::Limit { size })?;
    let off = libc::off_t::try_from(offset).map_err(|_| MapError::Overflow {
        address: offset,
        size,
    })?;
    let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
    // SAFETY: a fresh shared mapping at an address the kernel picks; nothing else refers to it.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            off,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    Ok(Mapping {
        ptr: ptr.cast(),
        len,
    })
}
