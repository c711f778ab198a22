//! The allocator side of a [`super::ForgeBackend`]: every buffer it hands out is recorded by
//! IO address, so that device memory named by an address (a ring, a mailbox) can be reached
//! and forged.

use super::ForgeBackend;
use crate::backend::{Backend, DmaAlloc, DmaBuf, DmaOwner, Quarantine};
use crate::error::Result;
use mlx5_prm::rt::{Bytes, BytesMut};
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// The buffers handed out, by IO address: the inner backend's buffer and a generation.
pub(super) struct Book {
    pub(super) bufs: Mutex<BTreeMap<u64, (u64, DmaBuf)>>,
    pub(super) next_generation: Mutex<u64>,
}

impl Book {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, (u64, DmaBuf)>> {
        self.bufs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on bytes `iova .. iova + len` if one live buffer holds them all.
    fn with<R>(
        &self,
        iova: u64,
        len: usize,
        f: impl FnOnce(u64, &DmaBuf, usize) -> R,
    ) -> Option<R> {
        let bufs = self.lock();
        let (&base, (generation, buf)) = bufs.range(..=iova).next_back()?;
        let at = usize::try_from(iova - base).ok()?;
        (at <= buf.len() && len <= buf.len() - at).then(|| f(*generation, buf, at))
    }

    pub(super) fn read(&self, iova: u64, out: &mut [u8]) -> Option<u64> {
        self.with(iova, out.len(), |g, b, at| {
            b.slice(at, out.len()).read_bytes(0, out);
            g
        })
    }

    pub(super) fn write(&self, iova: u64, data: &[u8]) {
        self.with(iova, data.len(), |_, b, at| {
            b.slice(at, data.len()).write_bytes(0, data)
        });
    }
}

impl DmaOwner for Book {
    unsafe fn give_back(&self, _va: NonNull<u8>, iova: u64, _len: usize) {
        // Dropping the inner buffer gives it back to the inner allocator.
        drop(self.lock().remove(&iova));
    }

    unsafe fn quarantine(&self, _va: NonNull<u8>, iova: u64, _len: usize) {
        if let Some((_, b)) = self.lock().remove(&iova) {
            b.quarantine();
        }
    }
}

impl<B: Backend> DmaAlloc for ForgeBackend<B> {
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf> {
        let b = self.inner.dma().alloc(len, align)?;
        let (va, iova, len) = (b.va(), b.iova(), b.len());
        let generation = {
            let mut g = self
                .book
                .next_generation
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *g += 1;
            *g
        };
        self.book.lock().insert(iova, (generation, b));
        let owner: Arc<dyn DmaOwner> = self.book.clone();
        // SAFETY: the inner buffer, which keeps the range valid and mapped, stays in the book
        // until this buffer gives it back or quarantines it (exactly once, by its drop or
        // `DmaBuf::quarantine`).
        Ok(unsafe { DmaBuf::new(va, iova, len, owner) })
    }

    fn quarantined(&self) -> Quarantine {
        self.inner.dma().quarantined()
    }

    unsafe fn release_quarantine(&self) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.inner.dma().release_quarantine() }
    }
}
