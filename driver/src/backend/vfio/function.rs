//! [`VfioBackend`]: an opened function, as a [`Backend`].
//!
//! Opening checks the system (`sysfs::locate`), joins the group to a container with the
//! IOMMU model the system has, opens the function (vfio-pci resets it), maps BAR0, turns bus
//! mastering on and
//! routes MSI-X to eventfds. Dropping it turns MSI-X and bus mastering off before any DMA
//! memory can be freed (and vfio-pci resets the function as the descriptor closes): the allocator (held by every buffer too) goes
//! last, so memory the device may still write is never reused while it can.

use super::bar::Bar;
use super::container::Container;
use super::device::Device;
use super::dma::VfioDma;
use super::error::VfioError;
use super::irq::Irqs;
use super::sysfs::{locate, IommuMode, Location};
use super::PciAddress;
use crate::backend::{Backend, Events, HostBarriers};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A ConnectX function reached through VFIO.
pub struct VfioBackend {
    // Field order is drop order: the BAR mapping before the device descriptor; the
    // allocator after both (and `Drop` has stopped the device by then).
    bar: Bar,
    irqs: Irqs,
    device: Device,
    dma: VfioDma,
    location: Location,
    reset_on_open: bool,
}

impl std::fmt::Debug for VfioBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioBackend")
            .field("location", &self.location)
            .field("interrupts", &self.irqs.counts())
            .finish_non_exhaustive()
    }
}

impl VfioBackend {
    /// Opens function `addr` (bound to vfio-pci).
    pub fn open(addr: PciAddress) -> Result<VfioBackend, VfioError> {
        VfioBackend::open_at(Path::new("/"), addr)
    }

    /// Opens function `addr` with sysfs and `/dev` under `root` (`/` on a real system).
    pub fn open_at(root: &Path, addr: PciAddress) -> Result<VfioBackend, VfioError> {
        let location = locate(root, addr)?;
        let container = Arc::new(Container::open(root, &location)?);
        let name = addr.to_string();
        let device = Device::new(container.device(&name)?, &name)?;
        // A known state: vfio-pci resets the function as it is first opened (an FLR or the
        // reset the function has) and offers the reset only when that worked; resetting it
        // again here would cost another 100 ms and change nothing.
        let reset_on_open = device.reset_works();
        if !reset_on_open {
            log::warn!(
                "{name}: VFIO has no working reset for this function; it starts as it was left"
            );
        }
        let bar = device.map_bar0()?;
        device.bus_master(true)?;
        let irqs = Irqs::enable(&device)?;
        let dma = VfioDma::new(container)?;
        log::info!(
            "{name}: opened through VFIO ({}), BAR0 {} KiB, {} MSI-X vectors",
            match location.mode {
                IommuMode::Iommu => "IOMMU",
                IommuMode::NoIommu => "no IOMMU",
            },
            crate::backend::Mmio::len(&bar) / 1024,
            irqs.counts().len()
        );
        Ok(VfioBackend {
            bar,
            irqs,
            device,
            dma,
            location,
            reset_on_open,
        })
    }

    /// Where the function is, and how it reaches memory.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Whether the function was reset when opened (by vfio-pci, as it opens a function whose
    /// reset works).
    pub fn was_reset(&self) -> bool {
        self.reset_on_open
    }

    /// Resets the function now (after it stopped answering, say), then turns bus mastering
    /// back on (the reset clears it). The HCA over it must be brought up again; memory in
    /// quarantine may be released after this ([`crate::backend::DmaAlloc::release_quarantine`]).
    pub fn reset(&self) -> Result<(), VfioError> {
        if !self.device.reset()? {
            return Err(VfioError::Unsupported {
                addr: self.location.addr.to_string(),
                what: "VFIO has no working reset for this function".into(),
            });
        }
        self.device.bus_master(true)
    }

    /// MSI-X interrupts taken so far, per vector.
    pub fn interrupts(&self) -> Vec<u64> {
        self.irqs.counts()
    }

    /// Event waits an interrupt ended before their deadline.
    pub fn wakeups(&self) -> u64 {
        self.irqs.wakeups()
    }
}

impl Drop for VfioBackend {
    fn drop(&mut self) {
        // With bus mastering off the function can start no DMA, so the memory the allocator
        // frees after this (quarantine included) is out of its reach. vfio-pci resets the
        // function when the device descriptor closes; a reset here too would only add one
        // more function-level reset's 100 ms.
        self.irqs.disable(&self.device);
        if let Err(e) = self.device.bus_master(false) {
            log::warn!("{}: turning bus mastering off: {e}", self.location.addr);
        }
    }
}

impl Events for VfioBackend {
    fn wait(&self, deadline: Instant) {
        self.irqs.wait(deadline)
    }
    fn interrupt_driven(&self) -> bool {
        self.irqs.vectors() > 0
    }
}

impl Backend for VfioBackend {
    type Mmio = Bar;
    type Dma = VfioDma;
    type Events = Self;
    type Barriers = HostBarriers;
    fn mmio(&self) -> &Bar {
        &self.bar
    }
    fn dma(&self) -> &VfioDma {
        &self.dma
    }
    fn events(&self) -> &Self {
        self
    }
}
