//! The function's VFIO device descriptor: its regions (BAR0, configuration space), reset,
//! bus mastering and MSI-X.

use super::bar::Bar;
use super::error::VfioError;
use super::ioctl;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use vfio_bindings::bindings::vfio::{
    vfio_device_info, vfio_irq_info, vfio_irq_set, vfio_region_info, VFIO_DEVICE_FLAGS_RESET,
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
    VFIO_REGION_INFO_FLAG_MMAP,
};

/// PCI command register (configuration space offset 4) and its bits.
const PCI_COMMAND: u64 = 4;
const COMMAND_MEMORY: u16 = 1 << 1;
const COMMAND_MASTER: u16 = 1 << 2;

/// The smallest BAR0 the driver can work with: the initialization segment's page and one
/// UAR page (ConnectX functions have megabytes).
const MIN_BAR0: u64 = 2 * 4096;

/// Where a region lies in the device descriptor's file offsets.
#[derive(Debug, Clone, Copy)]
pub struct RegionInfo {
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Bytes.
    pub size: u64,
    /// Offset in the device descriptor.
    pub offset: u64,
}

/// An open VFIO device.
#[derive(Debug)]
pub struct Device {
    file: File,
    name: String,
    flags: u32,
    config: RegionInfo,
}

impl Device {
    /// Wraps the descriptor of device `name` (its PCI address) and reads what it offers.
    pub fn new(file: File, name: &str) -> Result<Device, VfioError> {
        let mut info = vfio_device_info {
            argsz: ioctl::argsz::<vfio_device_info>(),
            ..Default::default()
        };
        // SAFETY: a device descriptor and a live info structure of the size it declares.
        unsafe { ioctl::device_get_info(file.as_raw_fd(), &mut info) }.map_err(|errno| {
            VfioError::Ioctl {
                what: format!("VFIO_DEVICE_GET_INFO of {name}"),
                errno,
            }
        })?;
        if info.num_regions <= VFIO_PCI_CONFIG_REGION_INDEX {
            return Err(VfioError::Unsupported {
                addr: name.to_owned(),
                what: format!("VFIO shows {} regions: not a PCI device", info.num_regions),
            });
        }
        let mut dev = Device {
            file,
            name: name.to_owned(),
            flags: info.flags,
            config: RegionInfo {
                flags: 0,
                size: 0,
                offset: 0,
            },
        };
        dev.config = dev.region(VFIO_PCI_CONFIG_REGION_INDEX)?;
        Ok(dev)
    }

    /// The region with VFIO index `index`.
    pub fn region(&self, index: u32) -> Result<RegionInfo, VfioError> {
        let mut info = vfio_region_info {
            argsz: ioctl::argsz::<vfio_region_info>(),
            index,
            ..Default::default()
        };
        // SAFETY: a device descriptor and a live info structure of the size it declares.
        unsafe { ioctl::device_get_region_info(self.file.as_raw_fd(), &mut info) }.map_err(
            |errno| VfioError::Ioctl {
                what: format!("VFIO_DEVICE_GET_REGION_INFO {index} of {}", self.name),
                errno,
            },
        )?;
        Ok(RegionInfo {
            flags: info.flags,
            size: info.size,
            offset: info.offset,
        })
    }

    /// Maps BAR0 (the initialization segment and the UAR pages).
    pub fn map_bar0(&self) -> Result<Bar, VfioError> {
        let r = self.region(VFIO_PCI_BAR0_REGION_INDEX)?;
        if r.size == 0 || r.flags & VFIO_REGION_INFO_FLAG_MMAP == 0 {
            return Err(VfioError::Unsupported {
                addr: self.name.clone(),
                what: format!(
                    "BAR0 cannot be mapped (size {:#x}, flags {:#x})",
                    r.size, r.flags
                ),
            });
        }
        // The initialization segment and at least one UAR page.
        if r.size < MIN_BAR0 {
            return Err(VfioError::Unsupported {
                addr: self.name.clone(),
                what: format!(
                    "BAR0 is {} bytes, too small for a ConnectX function (the initialization \
                     segment and a UAR page take {MIN_BAR0}); is this the right function?",
                    r.size
                ),
            });
        }
        Bar::map(&self.file, r, &self.name)
    }

    /// Whether VFIO has a working reset for the function: vfio-pci tries one as it opens the
    /// function, and offers it only if that succeeded.
    pub fn reset_works(&self) -> bool {
        self.flags & VFIO_DEVICE_FLAGS_RESET != 0
    }

    /// Resets the function (an FLR or whatever reset VFIO has for it). Returns false when
    /// VFIO offers none.
    pub fn reset(&self) -> Result<bool, VfioError> {
        if !self.reset_works() {
            return Ok(false);
        }
        // SAFETY: a device descriptor; the request takes no argument.
        unsafe { ioctl::device_reset(self.file.as_raw_fd()) }.map_err(|errno| {
            VfioError::Ioctl {
                what: format!("VFIO_DEVICE_RESET of {}", self.name),
                errno,
            }
        })?;
        Ok(true)
    }

    fn command(&self) -> Result<u16, VfioError> {
        let mut b = [0u8; 2];
        self.file
            .read_exact_at(&mut b, self.config.offset + PCI_COMMAND)
            .map_err(|e| self.config_error("reading", e))?;
        Ok(u16::from_le_bytes(b))
    }

    fn set_command(&self, value: u16) -> Result<(), VfioError> {
        self.file
            .write_all_at(&value.to_le_bytes(), self.config.offset + PCI_COMMAND)
            .map_err(|e| self.config_error("writing", e))
    }

    fn config_error(&self, doing: &str, e: std::io::Error) -> VfioError {
        VfioError::Unsupported {
            addr: self.name.clone(),
            what: format!("{doing} the PCI command register: {e}"),
        }
    }

    /// Turns memory decoding and bus mastering on (`on`) or bus mastering off.
    pub fn bus_master(&self, on: bool) -> Result<(), VfioError> {
        let c = self.command()?;
        let c = if on {
            c | COMMAND_MEMORY | COMMAND_MASTER
        } else {
            c & !COMMAND_MASTER
        };
        self.set_command(c)
    }

    /// How many MSI-X vectors the function has.
    pub fn msix_vectors(&self) -> Result<u32, VfioError> {
        let mut info = vfio_irq_info {
            argsz: ioctl::argsz::<vfio_irq_info>(),
            index: VFIO_PCI_MSIX_IRQ_INDEX,
            ..Default::default()
        };
        // SAFETY: a device descriptor and a live info structure of the size it declares.
        unsafe { ioctl::device_get_irq_info(self.file.as_raw_fd(), &mut info) }.map_err(
            |errno| VfioError::Ioctl {
                what: format!("VFIO_DEVICE_GET_IRQ_INFO (MSI-X) of {}", self.name),
                errno,
            },
        )?;
        Ok(info.count)
    }

    /// Routes MSI-X vectors `0 .. fds.len()` to the eventfds `fds`; an empty list turns
    /// MSI-X off.
    pub fn set_msix(&self, fds: &[RawFd]) -> Result<(), VfioError> {
        let head = std::mem::size_of::<vfio_irq_set>();
        let bytes = head + std::mem::size_of_val(fds);
        // A buffer aligned for the header (u32 fields), then the descriptors.
        let mut buf = vec![0u32; bytes.div_ceil(4)];
        let set = vfio_irq_set {
            argsz: bytes as u32,
            flags: VFIO_IRQ_SET_ACTION_TRIGGER
                | if fds.is_empty() {
                    VFIO_IRQ_SET_DATA_NONE
                } else {
                    VFIO_IRQ_SET_DATA_EVENTFD
                },
            index: VFIO_PCI_MSIX_IRQ_INDEX,
            start: 0,
            count: fds.len() as u32,
            data: Default::default(),
        };
        let base = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: `buf` holds `bytes` bytes, 4-byte aligned: the header, then the descriptors.
        unsafe {
            base.cast::<vfio_irq_set>().write(set);
            for (i, fd) in fds.iter().enumerate() {
                base.add(head + i * 4).cast::<RawFd>().write_unaligned(*fd);
            }
        }
        // SAFETY: a device descriptor and a set structure with `count` descriptors after it.
        unsafe { ioctl::device_set_irqs(self.file.as_raw_fd(), base.cast::<vfio_irq_set>()) }
            .map(drop)
            .map_err(|errno| VfioError::Ioctl {
                what: format!(
                    "VFIO_DEVICE_SET_IRQS (MSI-X, {} vectors) of {}",
                    fds.len(),
                    self.name
                ),
                errno,
            })
    }
}
