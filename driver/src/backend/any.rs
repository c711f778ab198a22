//! [`AnyBackend`]: whichever backend a [`crate::DeviceSpec`] chose, as one type, so that a
//! program takes `--device` and runs the same code on each. Every access is a match on the
//! variant (one predictable branch); code that needs the last instruction uses the concrete
//! backend type instead.

// A build with neither backend has an empty enum: its methods have nothing to use.
#![cfg_attr(
    not(any(feature = "sim", all(feature = "vfio", target_os = "linux"))),
    allow(unused_variables)
)]

use super::{Backend, DmaAlloc, DmaBuf, Events, HostBarriers, Mmio, Quarantine};
use crate::error::Result;
use std::time::Instant;

/// A backend chosen at run time.
pub enum AnyBackend {
    /// The device model.
    #[cfg(feature = "sim")]
    Sim(super::sim::SimBackend),
    /// A function through VFIO.
    #[cfg(all(feature = "vfio", target_os = "linux"))]
    Vfio(super::vfio::VfioBackend),
}

/// Runs `$e` with `$b` bound to the variant's backend.
macro_rules! each {
    ($self:expr, $b:ident => $e:expr) => {
        match *$self {
            #[cfg(feature = "sim")]
            AnyBackend::Sim(ref $b) => $e,
            #[cfg(all(feature = "vfio", target_os = "linux"))]
            AnyBackend::Vfio(ref $b) => $e,
        }
    };
}

impl std::fmt::Debug for AnyBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            #[cfg(feature = "sim")]
            AnyBackend::Sim(_) => f.write_str("AnyBackend::Sim"),
            #[cfg(all(feature = "vfio", target_os = "linux"))]
            AnyBackend::Vfio(ref b) => f.debug_tuple("AnyBackend::Vfio").field(b).finish(),
        }
    }
}

impl AnyBackend {
    /// The model, when this is one (to look at what it holds, or inject faults).
    #[cfg(feature = "sim")]
    pub fn sim_device(&self) -> Option<&std::sync::Arc<mlx5_sim::Device>> {
        #[allow(unreachable_patterns)]
        match self {
            AnyBackend::Sim(b) => Some(b.device()),
            _ => None,
        }
    }

    /// MSI-X interrupts taken per vector, when the device has them (VFIO).
    pub fn interrupts(&self) -> Option<Vec<u64>> {
        #[allow(unreachable_patterns)]
        match self {
            #[cfg(all(feature = "vfio", target_os = "linux"))]
            AnyBackend::Vfio(b) => Some(b.interrupts()),
            _ => None,
        }
    }

    /// Event waits an interrupt ended before their deadline, when the device has interrupts.
    pub fn wakeups(&self) -> Option<u64> {
        #[allow(unreachable_patterns)]
        match self {
            #[cfg(all(feature = "vfio", target_os = "linux"))]
            AnyBackend::Vfio(b) => Some(b.wakeups()),
            _ => None,
        }
    }
}

impl Mmio for AnyBackend {
    fn len(&self) -> usize {
        each!(self, b => b.mmio().len())
    }
    fn read32(&self, offset: usize) -> u32 {
        each!(self, b => b.mmio().read32(offset))
    }
    unsafe fn write32(&self, offset: usize, value: u32) {
        // SAFETY: forwarded; the caller's promise.
        each!(self, b => unsafe { b.mmio().write32(offset, value) })
    }
    unsafe fn write64(&self, offset: usize, value: u64) {
        // SAFETY: forwarded; the caller's promise.
        each!(self, b => unsafe { b.mmio().write64(offset, value) })
    }
    unsafe fn copy_wc(&self, offset: usize, data: &[u64]) {
        // SAFETY: forwarded; the caller's promise.
        each!(self, b => unsafe { b.mmio().copy_wc(offset, data) })
    }
}

impl DmaAlloc for AnyBackend {
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf> {
        each!(self, b => b.dma().alloc(len, align))
    }
    fn quarantined(&self) -> Quarantine {
        each!(self, b => b.dma().quarantined())
    }
    unsafe fn release_quarantine(&self) {
        // SAFETY: the caller's promise, passed on.
        each!(self, b => unsafe { b.dma().release_quarantine() })
    }
}

impl Events for AnyBackend {
    fn wait(&self, deadline: Instant) {
        each!(self, b => b.events().wait(deadline))
    }
    fn interrupt_driven(&self) -> bool {
        each!(self, b => b.events().interrupt_driven())
    }
}

impl Backend for AnyBackend {
    type Mmio = Self;
    type Dma = Self;
    type Events = Self;
    // The strongest: right for hardware, and sound (if more than needed) for the model.
    type Barriers = HostBarriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &Self {
        self
    }
    fn events(&self) -> &Self {
        self
    }
}
