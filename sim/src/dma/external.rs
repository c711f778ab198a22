//! Mapping and unmapping host memory in an external space ([`DmaSpace::external`]): the
//! regions a vfio-user server maps from a guest's DMA_MAP messages.

use super::{Block, DmaError, DmaSpace, Memory, DMA_PAGE_SIZE};
use std::ptr::NonNull;

impl DmaSpace {
    /// Maps the `len` bytes of host memory at `ptr` at IOVAs `iova .. iova + len` of an
    /// external space. All three must be multiples of 4 KiB (`len` > 0), and the range may
    /// overlap no mapped region.
    ///
    /// # Safety
    /// The memory must be valid for reads and writes of any size at any offset until an
    /// [`DmaSpace::unmap`] that covers it has returned, or the space is dropped: the model
    /// reads and writes it with volatile accesses at any time in between, from any thread. The
    /// memory may be shared with others (a guest writes it concurrently): the model never forms
    /// references to it, but whatever it reads is untrusted and is checked like any device
    /// input.
    pub unsafe fn map(&self, iova: u64, ptr: *mut u8, len: usize) -> Result<(), DmaError> {
        // SAFETY: forwarded contract.
        unsafe { self.map_as(iova, ptr, len, true) }
    }

    /// [`DmaSpace::map`] for memory the device may only read (a guest's `DMA_TO_DEVICE`
    /// mapping, which an IOMMU maps read-only): the model's reads of it succeed, and anything
    /// it would write there (a CQE, received data, a page it was given) is a DMA fault, as
    /// an IOMMU would report.
    ///
    /// # Safety
    /// As for [`DmaSpace::map`], but only reads are made (the memory may be mapped read-only).
    pub unsafe fn map_read_only(
        &self,
        iova: u64,
        ptr: *mut u8,
        len: usize,
    ) -> Result<(), DmaError> {
        // SAFETY: forwarded contract; the block is marked read-only, so no window that can
        // write is ever made on it (`window` refuses it, only `read_window` takes it).
        unsafe { self.map_as(iova, ptr, len, false) }
    }

    /// Maps a block, writable or not.
    ///
    /// # Safety
    /// As for [`DmaSpace::map`] (reads only when `writable` is false).
    unsafe fn map_as(
        &self,
        iova: u64,
        ptr: *mut u8,
        len: usize,
        writable: bool,
    ) -> Result<(), DmaError> {
        if !self.external {
            return Err(DmaError::NotExternal);
        }
        let bad = DmaError::BadMapping {
            iova,
            len: len as u64,
        };
        let page = DMA_PAGE_SIZE as u64;
        let end = iova.checked_add(len as u64).ok_or(bad.clone())?;
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(bad);
        };
        if len == 0
            || iova % page != 0
            || len % DMA_PAGE_SIZE != 0
            || ptr.as_ptr() as usize % DMA_PAGE_SIZE != 0
        {
            return Err(bad);
        }
        let mut inner = self.lock();
        if let Some((&at, b)) = inner.mapped.range(..end).next_back() {
            if b.end() > iova {
                return Err(DmaError::Overlap(at));
            }
        }
        inner.mapped.insert(
            iova,
            Block {
                ptr,
                len,
                iova,
                memory: Memory::External,
                writable,
            },
        );
        Ok(())
    }

    /// Unmaps every region of an external space inside `iova .. iova + len`, and returns only
    /// once no model thread can touch them any more (see the module doc): the host may then
    /// release the memory. Returns the bytes unmapped (0 when no region lies in the range).
    /// A region the range only partly covers fails the call, and nothing is unmapped.
    pub fn unmap(&self, iova: u64, len: u64) -> Result<usize, DmaError> {
        if !self.external {
            return Err(DmaError::NotExternal);
        }
        let end = iova.saturating_add(len);
        let mut result = Ok(0);
        self.quiesce(&mut || result = self.unmap_now(iova, end));
        result
    }

    /// Unmaps every region (a host disconnecting or resetting the device); like
    /// [`DmaSpace::unmap`] over all IOVAs.
    pub fn unmap_all(&self) -> Result<usize, DmaError> {
        self.unmap(0, u64::MAX)
    }

    /// The work of `unmap`, inside the quiescer.
    fn unmap_now(&self, iova: u64, end: u64) -> Result<usize, DmaError> {
        let mut inner = self.lock();
        let before = inner.mapped.range(..iova).next_back();
        if let Some((&at, b)) = before {
            if b.end() > iova {
                return Err(DmaError::PartialUnmap(at));
            }
        }
        let inside: Vec<u64> = inner.mapped.range(iova..end).map(|(&at, _)| at).collect();
        if let Some(&last) = inside.last() {
            if inner.mapped.get(&last).is_some_and(|b| b.end() > end) {
                return Err(DmaError::PartialUnmap(last));
            }
        }
        let mut bytes = 0;
        for at in inside {
            if let Some(block) = inner.mapped.remove(&at) {
                bytes += block.len;
                // SAFETY: the block is out of the map and the epoch advances below, before
                // the mutex and the quiescer's model lock are released: no window exists on
                // it (sessions are excluded, host copies hold the mutex) and none can be made.
                // External blocks are not freed here anyway; owned blocks never reach this
                // (an allocating space refuses `unmap`).
                unsafe { block.release() };
            }
        }
        if bytes > 0 {
            self.cache.invalidate();
        }
        Ok(bytes)
    }
}
