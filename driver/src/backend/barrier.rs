//! Memory barriers between the driver and the device, per architecture.
//!
//! Three orderings matter (the ones Linux calls `dma_wmb`/`wmb`, `dma_rmb` and the
//! write-combining flush):
//! - **to device**: every store to DMA memory (a WQE, a command entry) is visible to the
//!   device before a later store that hands it over (an ownership bit, a doorbell record, an
//!   MMIO doorbell);
//! - **from device**: after reading a value that says the device is done (an owner bit), later
//!   reads see what the device wrote before it;
//! - **write-combining flush**: a BlueFlame copy has left the CPU before the next doorbell.
//!
//! x86-64 keeps stores in order and loads in order with respect to other memory, so "from
//! device" is a compiler barrier; stores to MMIO and write-combining memory need `sfence`.
//! aarch64 orders nothing by itself: `dmb oshld` for loads, `dsb st` before doorbells (it
//! must also order MMIO). The device model runs in the same process: release and acquire
//! fences, the same orderings in the language's terms ([`ModelBarriers`]).

use std::sync::atomic::{compiler_fence, fence, Ordering};

/// The three barriers a driver needs.
pub trait Barriers {
    /// Stores to DMA memory before a later store or MMIO write reach the device in order.
    fn to_device();
    /// Loads of DMA memory after an ownership check see what the device wrote before it.
    fn from_device();
    /// Write-combining stores are flushed before the next MMIO write.
    fn wc_flush();
}

/// The barriers of the machine the driver runs on, for real hardware.
pub struct HostBarriers;

impl Barriers for HostBarriers {
    #[inline(always)]
    fn to_device() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `sfence` only orders stores; it has no memory operands.
        unsafe {
            core::arch::asm!("sfence", options(nostack, preserves_flags))
        };
        #[cfg(target_arch = "aarch64")]
        // SAFETY: a data synchronisation barrier over stores; no operands.
        unsafe {
            core::arch::asm!("dsb st", options(nostack, preserves_flags))
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        fence(Ordering::SeqCst);
        compiler_fence(Ordering::SeqCst);
    }

    #[inline(always)]
    fn from_device() {
        #[cfg(target_arch = "aarch64")]
        // SAFETY: a data memory barrier over loads in the outer shareable domain; no operands.
        unsafe {
            core::arch::asm!("dmb oshld", options(nostack, preserves_flags))
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        fence(Ordering::SeqCst);
        compiler_fence(Ordering::SeqCst);
    }

    #[inline(always)]
    fn wc_flush() {
        Self::to_device()
    }
}

/// Sequentially consistent fences: stronger than any of the three orderings needs (kept for
/// code that wants a full fence; the model's backend uses [`ModelBarriers`]).
pub struct SeqCstBarriers;

impl Barriers for SeqCstBarriers {
    #[inline(always)]
    fn to_device() {
        fence(Ordering::SeqCst);
    }
    #[inline(always)]
    fn from_device() {
        fence(Ordering::SeqCst);
    }
    #[inline(always)]
    fn wc_flush() {
        fence(Ordering::SeqCst);
    }
}

/// The barriers for the device model, which runs in this process (on the driver's thread, or
/// on threads of its own: the firmware thread, a TAP reader): each ordering as the language's
/// memory model states it. "To device" is a release fence (earlier loads and stores before a
/// later store that hands memory over: a doorbell record, an ownership bit, a consumer index),
/// "from device" an acquire fence (the load of an owner bit before the loads of what the
/// device wrote; the model writes the owner last, after a release fence), which is what the
/// model pairs them with. Neither needs a store to be ordered before a later load, the one
/// thing a sequentially consistent fence adds (on x86-64 an `mfence`, paid on every received
/// packet). The write-combining flush stays a full fence (the model has no write-combining
/// memory; it is rare).
pub struct ModelBarriers;

impl Barriers for ModelBarriers {
    #[inline(always)]
    fn to_device() {
        fence(Ordering::Release);
    }
    #[inline(always)]
    fn from_device() {
        fence(Ordering::Acquire);
    }
    #[inline(always)]
    fn wc_flush() {
        fence(Ordering::SeqCst);
    }
}
