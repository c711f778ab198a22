//! Reaching a ConnectX function through Linux VFIO (feature `vfio`, Linux only): the parts
//! that come before the device is opened, each tested without one.
//!
//! - [`address`]: PCI addresses as users type them (`0000:03:00.0`, `03:00.0`);
//! - [`sysfs`]: finding the function's IOMMU group and checking the system is ready (the
//!   function exists, is a ConnectX one, is bound to vfio-pci, its group is viable and has
//!   a device node; with an IOMMU or in no-IOMMU mode), with an error that says what to do
//!   for each way it is not;
//! - [`pagemap`]: physical addresses of this process's pages, for no-IOMMU mode.
//!
//! The backend itself (container or iommufd, BAR mapping, DMA mapping, MSI-X through
//! eventfds, function reset) is issue 19's next step; it is proven in the QEMU guest, where
//! the model's PCI function is bound to vfio-pci.

pub mod address;
pub mod error;
pub mod pagemap;
pub mod sysfs;

pub use address::PciAddress;
pub use error::VfioError;
pub use sysfs::{locate, IommuMode, Location};
