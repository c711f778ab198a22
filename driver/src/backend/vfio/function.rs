//! [`VfioBackend`]: an opened function, as a [`Backend`].
//!
//! Opening checks the system (`sysfs::locate`), joins the group to a container with the
//! IOMMU model the system has, resets the function, maps BAR0, turns bus mastering on and
//! routes MSI-X to eventfds. Dropping it turns MSI-X and bus mastering off and resets the
//! function before any DMA memory can be freed: the allocator (held by every buffer too) goes
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
        // A known state: whatever an earlier user left running stops here.
        let reset_on_open = device.reset()?;
        if !reset_on_open {
            log::warn!("{name}: VFIO offers no reset for this function; it starts as it was left");
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

    /// Whether the function was reset when opened.
    pub fn was_reset(&self) -> bool {
        self.reset_on_open
    }

    /// MSI-X interrupts taken so far, per vector.
    pub fn interrupts(&self) -> Vec<u64> {
        self.irqs.counts()
    }
}

impl Drop for VfioBackend {
    fn drop(&mut self) {
        self.irqs.disable(&self.device);
        if let Err(e) = self.device.bus_master(false) {
            log::warn!("{}: turning bus mastering off: {e}", self.location.addr);
        }
        if let Err(e) = self.device.reset() {
            log::warn!("{}: reset on close: {e}", self.location.addr);
        }
    }
}

impl Events for VfioBackend {
    fn wait(&self, deadline: Instant) {
        self.irqs.wait(deadline)
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
