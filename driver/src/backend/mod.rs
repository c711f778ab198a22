//! The seam between the driver and a device: MMIO, DMA memory, event delivery and barriers.
//!
//! The driver is generic over [`Backend`] and monomorphised for each one (no `dyn` on the hot
//! path). The device model implements it in `sim` (the `sim` feature); a VFIO backend for real hardware
//! implements the same traits. Nothing here forms a Rust reference to memory the device may
//! write: MMIO is reached through register reads and writes, DMA memory through
//! [`mlx5_prm::rt::DeviceBytes`].

mod any;
mod barrier;
pub mod deferred;
#[cfg(feature = "forge")]
pub mod forge;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(all(feature = "vfio", target_os = "linux"))]
pub mod vfio;
mod with_barriers;

pub use any::AnyBackend;
pub use barrier::{Barriers, HostBarriers, ModelBarriers, SeqCstBarriers};
pub use deferred::Deferred;
pub use with_barriers::WithBarriers;

use crate::error::Result;
use mlx5_prm::rt::DeviceBytes;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Instant;

/// Register access to BAR0: the initialization segment and the UAR pages.
///
/// Values are in host order; implementations convert to and from the device's big-endian
/// order. Implementations must check offsets against the BAR's length (a bad offset reads as
/// all ones and writes nothing, as a PCIe master abort would).
///
/// Writes are `unsafe`: a BAR write can make the device reach host memory. The command
/// queue's address (0x10, 0x14) and doorbell (0x18) make it read and write a queue page and
/// the mailboxes its entries name; a UAR doorbell or BlueFlame copy makes it run work
/// requests, whose buffers it reads or writes. Only the driver knows which writes its own
/// memory is ready for, so safe code outside it (holding [`Hca::backend`](crate::Hca::backend))
/// reads registers but writes none.
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
    ///
    /// # Safety
    ///
    /// The write is one the driver that owns the device makes at this point of its protocol
    /// (or a wrapper forwards for it): every host address it gives the device, and all
    /// memory it makes the device read or write (a command queue page, the mailboxes and
    /// memory its commands name, the rings, buffers and records of the queue a doorbell
    /// rings), stays allocated and out of other use until the device is done with it, or
    /// is quarantined.
    unsafe fn write32(&self, offset: usize, value: u32);
    /// One 64-bit write at `offset` (a multiple of 8): doorbells that must reach the device in
    /// one transaction.
    ///
    /// # Safety
    ///
    /// As for [`Mmio::write32`].
    unsafe fn write64(&self, offset: usize, value: u64);
    /// Copies `data` to write-combining space at `offset` (BlueFlame), 64 bits at a time.
    ///
    /// # Safety
    ///
    /// As for [`Mmio::write32`]: a BlueFlame copy is a work request the device runs.
    unsafe fn copy_wc(&self, offset: usize, data: &[u64]) {
        for (i, v) in data.iter().enumerate() {
            // SAFETY: the caller's promise, for the copy as a whole.
            unsafe { self.write64(offset + i * 8, *v) };
        }
    }
}

/// Where a [`DmaBuf`]'s memory goes when the buffer is done with: the allocator that made it.
///
/// A buffer holds an `Arc` of its owner, which is its keep-alive: the memory stays allocated
/// and mapped for as long as the buffer exists, whatever happened to the backend handle or
/// the HCA meanwhile. Backends implement this; the driver never calls it directly.
pub trait DmaOwner: Send + Sync {
    /// Takes back memory the device can no longer reach: it may be unmapped, reused or freed.
    ///
    /// # Safety
    ///
    /// `va`, `iova` and `len` describe one buffer this owner handed out, given back once,
    /// with no access to it left.
    unsafe fn give_back(&self, va: NonNull<u8>, iova: u64, len: usize);

    /// Takes back memory the device may still write (a command or destroy that did not
    /// complete, pages the device never returned): it stays allocated and mapped, is never
    /// reused, and is freed only when the owner itself goes (the backend is dropped) or the
    /// function is reset ([`DmaAlloc::release_quarantine`]).
    ///
    /// # Safety
    ///
    /// As for [`DmaOwner::give_back`].
    unsafe fn quarantine(&self, va: NonNull<u8>, iova: u64, len: usize);
}

/// A DMA buffer: host memory the device reaches at `iova`, owned.
///
/// It is not a Rust slice: the device may write it at any time, so the driver reaches it only
/// through [`DmaBuf::bytes`], whose accesses are volatile. Dropping it gives the memory back
/// to the allocator that made it (and only to that one); [`DmaBuf::quarantine`] hands it to
/// that allocator's quarantine instead, for memory the device may still write.
pub struct DmaBuf {
    va: NonNull<u8>,
    iova: u64,
    len: usize,
    owner: Arc<dyn DmaOwner>,
}

impl std::fmt::Debug for DmaBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuf")
            .field("iova", &format_args!("{:#x}", self.iova))
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

// SAFETY: a DmaBuf owns an address range (its owner is Send + Sync); access goes through
// volatile operations by its one owner, never through shared references. It is not `Sync`:
// two threads holding `&DmaBuf` could write the same bytes through `bytes()`.
unsafe impl Send for DmaBuf {}

impl DmaBuf {
    /// Wraps memory a backend allocated.
    ///
    /// # Safety
    ///
    /// `va .. va + len` must be valid for volatile reads and writes, and mapped for the device
    /// at `iova`, until `owner` takes it back ([`DmaOwner::give_back`] or
    /// [`DmaOwner::quarantine`], called exactly once, by the buffer's drop or
    /// [`DmaBuf::quarantine`]).
    pub unsafe fn new(va: NonNull<u8>, iova: u64, len: usize, owner: Arc<dyn DmaOwner>) -> DmaBuf {
        DmaBuf {
            va,
            iova,
            len,
            owner,
        }
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

    /// The host address (for backends, and for word access on the data path).
    pub fn va(&self) -> NonNull<u8> {
        self.va
    }

    /// Volatile access to the bytes, usable as the storage of any generated view.
    pub fn bytes(&self) -> DeviceBytes<'_> {
        // SAFETY: `new`'s contract keeps the range valid while `self` lives.
        unsafe { DeviceBytes::new(self.va.as_ptr(), self.len) }
    }

    /// Bytes `at .. at + len` of the buffer.
    ///
    /// # Panics
    ///
    /// If the range is not inside the buffer (a driver bug: offsets come from its own
    /// layouts).
    #[inline]
    pub fn slice(&self, at: usize, len: usize) -> DeviceBytes<'_> {
        if !(at <= self.len && len <= self.len - at) {
            slice_out_of_range(at, len, self.len);
        }
        // SAFETY: a checked sub-range of a valid buffer.
        unsafe { DeviceBytes::new(self.va.as_ptr().add(at), len) }
    }

    /// Hands the memory to its allocator's quarantine: the device may still write it, so it
    /// is never reused or freed until the backend goes or the function is reset.
    pub fn quarantine(self) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the owner is read out once and `this` is never used or dropped again.
        let owner = unsafe { std::ptr::read(&this.owner) };
        // SAFETY: the buffer came from `owner` and is taken back once, here.
        unsafe { owner.quarantine(this.va, this.iova, this.len) };
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // SAFETY: the buffer came from its owner and is taken back once, here.
        unsafe { self.owner.give_back(self.va, self.iova, self.len) };
    }
}

/// The panic of [`DmaBuf::slice`], out of line so the hot path stays small.
#[cold]
#[inline(never)]
#[track_caller]
fn slice_out_of_range(at: usize, len: usize, buf: usize) -> ! {
    panic!("DMA slice {at}+{len} beyond {buf}")
}

/// What an allocator holds in quarantine: buffers the device may still write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quarantine {
    /// Buffers.
    pub buffers: usize,
    /// Their bytes.
    pub bytes: usize,
}

/// DMA memory: zeroed, page-aligned, mapped for the device. Buffers go back by being dropped
/// (or quarantined), to the allocator that made them.
pub trait DmaAlloc {
    /// Allocates `len` bytes aligned to `align` (a power of two, at least 4096 for firmware
    /// pages).
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf>;
    /// What is in quarantine now.
    fn quarantined(&self) -> Quarantine;
    /// Frees the quarantine, after the function was reset (a function-level reset, or the
    /// device otherwise proven to do no more DMA).
    ///
    /// # Safety
    ///
    /// The device must no longer be able to write any quarantined buffer.
    unsafe fn release_quarantine(&self);
}

/// How the driver learns that the device wrote something: polling, or an interrupt.
pub trait Events {
    /// Waits for an interrupt or until `deadline`, whichever is first. A polled backend
    /// returns at once (or after a short pause), so callers always re-check the memory they
    /// wait on.
    fn wait(&self, deadline: Instant);

    /// True when the device's events arrive as interrupts that end [`Events::wait`] (MSI-X
    /// through VFIO): then a driver waiting for an event may sleep until its deadline, and
    /// an event that never raises its interrupt shows as a timeout rather than being found
    /// by polling. False (the default) for backends whose `wait` only pauses.
    fn interrupt_driven(&self) -> bool {
        false
    }

    /// Waits for the device to have written an event the caller then looks for: with
    /// interrupts, until one comes or `deadline`; without, a pause of at most
    /// [`POLL_STEP`] before the caller looks at memory again.
    fn wait_for_event(&self, deadline: Instant) {
        if self.interrupt_driven() {
            self.wait(deadline)
        } else {
            self.wait(deadline.min(Instant::now() + POLL_STEP))
        }
    }
}

/// How long a polled wait pauses before the driver looks at device memory again.
pub const POLL_STEP: std::time::Duration = std::time::Duration::from_micros(50);

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
/// [`mlx5_prm::rt::Mmio32`]. Their setters are safe, so making one is not: see
/// [`Regs::new`].
pub struct Regs<'a, M: Mmio>(&'a M);

impl<'a, M: Mmio> Regs<'a, M> {
    /// The BAR `m`, for a generated register-block view.
    ///
    /// # Safety
    ///
    /// Every write made through it (a view's setter) keeps the promise of [`Mmio::write32`].
    /// A view that is only read keeps it.
    pub unsafe fn new(m: &'a M) -> Regs<'a, M> {
        Regs(m)
    }
}

impl<M: Mmio> mlx5_prm::rt::Mmio32 for Regs<'_, M> {
    fn read32(&self, offset: usize) -> u32 {
        self.0.read32(offset)
    }
    fn write32(&self, offset: usize, value: u32) {
        // SAFETY: whoever made this `Regs` promised that its writes are the driver's to make
        // (`Regs::new`).
        unsafe { self.0.write32(offset, value) }
    }
}
