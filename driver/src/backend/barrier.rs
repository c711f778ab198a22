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
//! must also order MMIO). The device model runs in the same process, so sequentially
//! consistent fences are exactly what it needs.

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

/// Sequentially consistent fences: what the in-process device model needs.
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
