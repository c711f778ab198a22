//! Why a DMA allocation, mapping, free or access failed.

use std::fmt;

/// Why a DMA allocation, mapping, free or access failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// `alloc` or `free` on a space whose memory is mapped from outside
    /// ([`DmaSpace::external`](super::DmaSpace::external)): the host that maps it owns it.
    External,
    /// `map` or `unmap` on a space that allocates its own memory.
    NotExternal,
    /// A mapping of zero bytes, not 4 KiB aligned (IOVA, host address or length), with a null
    /// host address, or past the end of the IOVA space.
    BadMapping {
        /// The IOVA asked for.
        iova: u64,
        /// The length asked for.
        len: u64,
    },
    /// The new mapping overlaps the region mapped at this IOVA.
    Overlap(u64),
    /// The range to unmap cuts through the region mapped at this IOVA (regions are unmapped
    /// whole, as VFIO does); nothing was unmapped.
    PartialUnmap(u64),
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
            DmaError::External => write!(
                f,
                "this DMA space maps host memory from outside; it does not allocate or free"
            ),
            DmaError::NotExternal => write!(
                f,
                "this DMA space allocates its own memory; it does not map host memory"
            ),
            DmaError::BadMapping { iova, len } => write!(
                f,
                "cannot map {len:#x} bytes at IOVA {iova:#x}: zero, not 4 KiB aligned, null or \
                 past the end of the IOVA space"
            ),
            DmaError::Overlap(iova) => {
                write!(
                    f,
                    "the mapping overlaps the region mapped at IOVA {iova:#x}"
                )
            }
            DmaError::PartialUnmap(iova) => write!(
                f,
                "the range cuts through the region mapped at IOVA {iova:#x}; regions are \
                 unmapped whole"
            ),
        }
    }
}

impl std::error::Error for DmaError {}
