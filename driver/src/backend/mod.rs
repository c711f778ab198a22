//! The seam between the driver and a device: MMIO, DMA memory, event delivery and barriers.
//!
//! The driver is generic over [`Backend`] and monomorphised for each one (no `dyn` on the hot
//! path). The device model implements it in [`sim`]; a VFIO backend for real hardware
//! implements the same traits. Nothing here forms a Rust reference to memory the device may
//! write: MMIO is reached through register reads and writes, DMA memory through
//! [`mlx5_prm::rt::DeviceBytes`].

mod barrier;
pub mod deferred;
#[cfg(feature = "sim")]
pub mod sim;

pub use barrier::{Barriers, HostBarriers, ModelBarriers, SeqCstBarriers};
pub use deferred::Deferred;

use crate::error::Result;
use mlx5_prm::rt::DeviceBytes;
use std::ptr::NonNull;
use std::time::Instant;

/// Register access to BAR0: the initialization segment and the UAR pages.
///
/// Values are in host order; implementations convert to and from the device's big-endian
/// order. Implementations must check offsets against the BAR's length (a bad offset reads as
/// all ones and writes nothing, as a PCIe master abort would).
pub trait Mmio {
    /// Length of the BAR in bytes.
    fn len(&self) -> usize;
    /// True for an empty BAR (never, in practice).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// 32-bit read at `offset` (a multiple of 4).
    fn read32(&self, offset: usize) -> u32;
    /// 32-bit write at `offset` (a multiple of 4).
    fn write32(&self, offset: usize, value: u32);
    /// One 64-bit write at `offset` (a multiple of 8): doorbells that must reach the device in
    /// one transaction.
    fn write64(&self, offset: usize, value: u64);
    /// Copies `data` to write-combining space at `offset` (BlueFlame), 64 bits at a time.
    fn copy_wc(&self, offset: usize, data: &[u64]) {
        for (i, v) in data.iter().enumerate() {
            self.write64(offset + i * 8, *v);
        }
    }
}

/// A DMA buffer: host memory the device reaches at `iova`.
///
/// It is not a Rust slice: the device may write it at any time, so the driver reaches it only
/// through [`DmaBuf::bytes`], whose accesses are volatile.
#[derive(Debug)]
pub struct DmaBuf {
    va: NonNull<u8>,
    iova: u64,
    len: usize,
}

// SAFETY: a DmaBuf is an address range; access goes through volatile operations and the
// driver's own synchronisation (one owner at a time), never through shared references.
unsafe impl Send for DmaBuf {}

impl DmaBuf {
    /// Wraps memory a backend allocated.
    ///
    /// # Safety
    ///
    /// `va .. va + len` must stay valid for volatile reads and writes, and mapped for the device
    /// at `iova`, until the buffer is given back to the backend that made it.
    pub unsafe fn new(va: NonNull<u8>, iova: u64, len: usize) -> DmaBuf {
        DmaBuf { va, iova, len }
    }

    /// The IO virtual address the device uses.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The host address (for backends).
    pub fn va(&self) -> NonNull<u8> {
        self.va
    }

    /// Volatile access to the bytes, usable as the storage of any generated view.
    pub fn bytes(&self) -> DeviceBytes<'_> {
        // SAFETY: `new`'s contract keeps the range valid while `self` lives.
        unsafe { DeviceBytes::new(self.va.as_ptr(), self.len) }
    }

    /// Bytes `at .. at + len` of the buffer.
    #[inline]
    pub fn slice(&self, at: usize, len: usize) -> DeviceBytes<'_> {
        if !(at <= self.len && len <= self.len - at) {
            slice_out_of_range(at, len, self.len);
        }
        // SAFETY: a checked sub-range of a valid buffer.
        unsafe { DeviceBytes::new(self.va.as_ptr().add(at), len) }
    }
}

/// The panic of [`DmaBuf::slice`], out of line so the hot path stays small.
#[cold]
#[inline(never)]
#[track_caller]
fn slice_out_of_range(at: usize, len: usize, buf: usize) -> ! {
    panic!("DMA slice {at}+{len} beyond {buf}")
}

/// DMA memory: zeroed, page-aligned, mapped for the device.
pub trait DmaAlloc {
    /// Allocates `len` bytes aligned to `align` (a power of two, at least 4096 for firmware
    /// pages).
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf>;
    /// Gives a buffer back.
    fn free(&self, buf: DmaBuf);
}

/// How the driver learns that the device wrote something: polling, or an interrupt.
pub trait Events {
    /// Waits for an interrupt or until `deadline`, whichever is first. A polled backend
    /// returns at once (or after a short pause), so callers always re-check the memory they
    /// wait on.
    fn wait(&self, deadline: Instant);
}

/// A device, as the driver sees it.
pub trait Backend {
    /// Register access.
    type Mmio: Mmio;
    /// DMA memory.
    type Dma: DmaAlloc;
    /// Event delivery.
    type Events: Events;
    /// The barriers this backend's platform needs.
    type Barriers: Barriers;
    /// BAR0.
    fn mmio(&self) -> &Self::Mmio;
    /// DMA memory.
    fn dma(&self) -> &Self::Dma;
    /// Event delivery.
    fn events(&self) -> &Self::Events;
}

/// Adapts a backend's BAR to the generated register-block views, which read and write through
/// [`mlx5_prm::rt::Mmio32`].
pub struct Regs<'a, M: Mmio>(pub &'a M);

impl<M: Mmio> mlx5_prm::rt::Mmio32 for Regs<'_, M> {
    fn read32(&self, offset: usize) -> u32 {
        self.0.read32(offset)
    }
    fn write32(&self, offset: usize, value: u32) {
        self.0.write32(offset, value)
    }
}
