//! A ConnectX function through Linux VFIO (feature `vfio`, Linux only): real hardware, or the
//! model's PCI function inside a QEMU guest.
//!
//! - [`address`]: PCI addresses as users type them (`0000:03:00.0`, `03:00.0`);
//! - [`sysfs`]: finding the function's IOMMU group and checking the system is ready (the
//!   function exists, is a ConnectX one, is bound to vfio-pci, its group is viable and has
//!   a device node; with an IOMMU or in no-IOMMU mode), with an error that says what to do
//!   for each way it is not;
//! - [`container`], [`device`], [`bar`], [`irq`]: the container and its IOMMU model, the
//!   device's regions, reset and bus mastering, BAR0 as MMIO, MSI-X as eventfds;
//! - [`dma`], [`iova`], [`pagemap`], [`slab`]: DMA memory, the IOVAs chosen for it with an
//!   IOMMU, and without one physical addresses and the books of the huge pages every buffer
//!   is carved from;
//! - [`VfioBackend`]: all of it as a [`crate::backend::Backend`].
//!
//! The ioctls are nix's over rust-vmm's `vfio-bindings` structures. The crates that wrap
//! them (`vfio-ioctls`, `pci-driver`) were set aside: both only set up type-1 containers
//! (no-IOMMU mode would need our own ioctls anyway), `vfio-ioctls` brings `vm-memory` and
//! a VMM's view of devices, and `pci-driver` has had no release since 2022.

pub mod address;
pub mod bar;
pub mod container;
pub mod device;
pub mod dma;
pub mod error;
pub mod function;
mod ioctl;
pub mod iova;
pub mod irq;
pub mod pagemap;
pub mod slab;
pub mod sysfs;

pub use address::PciAddress;
pub use error::VfioError;
pub use function::VfioBackend;
pub use sysfs::{locate, IommuMode, Location};
