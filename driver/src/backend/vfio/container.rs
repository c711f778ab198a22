//! The VFIO container: the IOMMU context the function's group joins, and the DMA mappings in
//! it.
//!
//! With an IOMMU the container runs the type-1 (v2) model: the backend chooses IO virtual
//! addresses and maps its buffers at them ([`Container::map`]); the kernel pins the pages.
//! Without one (`enable_unsafe_noiommu_mode`) the container runs the no-IOMMU model, which
//! maps nothing: the device sees physical addresses (see `dma.rs`).

use super::error::VfioError;
use super::ioctl;
use super::sysfs::{IommuMode, Location};
use nix::errno::Errno;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::Path;
use vfio_bindings::bindings::vfio::{
    vfio_group_status, vfio_iommu_type1_dma_map, vfio_iommu_type1_dma_unmap, VFIO_TYPE1v2_IOMMU,
    VFIO_API_VERSION, VFIO_DMA_MAP_FLAG_READ, VFIO_DMA_MAP_FLAG_WRITE, VFIO_GROUP_FLAGS_VIABLE,
    VFIO_NOIOMMU_IOMMU,
};

/// An open container with the function's group in it.
#[derive(Debug)]
pub struct Container {
    file: File,
    group: File,
    mode: IommuMode,
}

impl Container {
    /// Opens `root/dev/vfio/vfio`, puts the group of `loc` in it and sets the IOMMU model
    /// `loc.mode` asks for.
    pub fn open(root: &Path, loc: &Location) -> Result<Container, VfioError> {
        let path = root.join("dev/vfio/vfio");
        let file = open_rw(&path)?;
        // SAFETY: a VFIO container descriptor; the request takes no argument.
        let version = unsafe { ioctl::get_api_version(file.as_raw_fd()) }
            .map_err(|errno| ioctl_error("VFIO_GET_API_VERSION", &path, errno))?;
        if version != VFIO_API_VERSION as i32 {
            return Err(VfioError::ApiVersion {
                path,
                found: version,
                expected: VFIO_API_VERSION as i32,
            });
        }
        let (model, wanted, hint) = match loc.mode {
            IommuMode::Iommu => (
                VFIO_TYPE1v2_IOMMU,
                "type-1 v2",
                "load vfio_iommu_type1 (`modprobe vfio_iommu_type1`)",
            ),
            IommuMode::NoIommu => (
                VFIO_NOIOMMU_IOMMU,
                "no-IOMMU",
                "load vfio with enable_unsafe_noiommu_mode=1 (kernel built with CONFIG_VFIO_NOIOMMU)",
            ),
        };
        // SAFETY: as above; the argument is a plain integer.
        let has = unsafe { ioctl::check_extension(file.as_raw_fd(), model as i32) }
            .map_err(|errno| ioctl_error("VFIO_CHECK_EXTENSION", &path, errno))?;
        if has <= 0 {
            return Err(VfioError::NoIommuModel { path, wanted, hint });
        }

        let group = open_rw(&loc.group_node)?;
        let mut status = vfio_group_status {
            argsz: ioctl::argsz::<vfio_group_status>(),
            flags: 0,
        };
        // SAFETY: a group descriptor and a live status structure of the size it declares.
        unsafe { ioctl::group_get_status(group.as_raw_fd(), &mut status) }
            .map_err(|errno| ioctl_error("VFIO_GROUP_GET_STATUS", &loc.group_node, errno))?;
        if status.flags & VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable {
                addr: loc.addr.to_string(),
                group: loc.group,
                others: Vec::new(),
            });
        }
        let fd = file.as_raw_fd();
        // SAFETY: a group descriptor and a pointer to the container's descriptor number.
        unsafe { ioctl::group_set_container(group.as_raw_fd(), &fd) }
            .map_err(|errno| ioctl_error("VFIO_GROUP_SET_CONTAINER", &loc.group_node, errno))?;
        // SAFETY: a container descriptor with a group in it; a plain integer argument.
        unsafe { ioctl::set_iommu(file.as_raw_fd(), model as i32) }
            .map_err(|errno| ioctl_error("VFIO_SET_IOMMU", &path, errno))?;
        Ok(Container {
            file,
            group,
            mode: loc.mode,
        })
    }

    /// How the device reaches memory.
    pub fn mode(&self) -> IommuMode {
        self.mode
    }

    /// Opens the device `name` (its PCI address) of the group.
    pub fn device(&self, name: &str) -> Result<File, VfioError> {
        let cname = std::ffi::CString::new(name).map_err(|_| VfioError::BadAddress {
            text: name.to_owned(),
            why: "contains a NUL byte",
        })?;
        // SAFETY: a group descriptor in a container with an IOMMU set; a NUL-terminated name.
        let fd = unsafe { ioctl::group_get_device_fd(self.group.as_raw_fd(), cname.as_ptr()) }
            .map_err(|errno| VfioError::Ioctl {
                what: format!("VFIO_GROUP_GET_DEVICE_FD for {name}"),
                errno,
            })?;
        // SAFETY: the kernel returned a new descriptor, owned by nobody else.
        Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }

    /// Maps `len` bytes at host address `va` for the device at `iova`, readable and writable
    /// (type-1 only; the kernel pins the pages).
    pub fn map(&self, va: usize, iova: u64, len: usize) -> Result<(), VfioError> {
        let map = vfio_iommu_type1_dma_map {
            argsz: ioctl::argsz::<vfio_iommu_type1_dma_map>(),
            flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
            vaddr: va as u64,
            iova,
            size: len as u64,
        };
        // SAFETY: a type-1 container and a live map structure; the kernel checks the range
        // belongs to this process.
        unsafe { ioctl::iommu_map_dma(self.file.as_raw_fd(), &map) }
            .map(drop)
            .map_err(|errno| VfioError::Ioctl {
                what: format!("VFIO_IOMMU_MAP_DMA of {len} bytes at IOVA {iova:#x}"),
                errno,
            })
    }

    /// Takes the mapping at `iova` back.
    pub fn unmap(&self, iova: u64, len: usize) -> Result<(), VfioError> {
        let mut unmap = vfio_iommu_type1_dma_unmap {
            argsz: ioctl::argsz::<vfio_iommu_type1_dma_unmap>(),
            flags: 0,
            iova,
            size: len as u64,
            data: Default::default(),
        };
        // SAFETY: as for `map`.
        unsafe { ioctl::iommu_unmap_dma(self.file.as_raw_fd(), &mut unmap) }
            .map(drop)
            .map_err(|errno| VfioError::Ioctl {
                what: format!("VFIO_IOMMU_UNMAP_DMA of {len} bytes at IOVA {iova:#x}"),
                errno,
            })
    }
}

/// Opens a VFIO node for reading and writing; a permission error says what to do.
pub(crate) fn open_rw(path: &Path) -> Result<File, VfioError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => VfioError::Permission {
                path: path.to_owned(),
            },
            _ => VfioError::System {
                path: path.to_owned(),
                what: e.to_string(),
            },
        })
}

fn ioctl_error(request: &str, path: &Path, errno: Errno) -> VfioError {
    VfioError::Ioctl {
        what: format!("{request} on {}", path.display()),
        errno,
    }
}
