//! Finding a function's VFIO group from sysfs before opening anything, so that each way a
//! system is not ready (no such function, another driver bound, no IOMMU group, a group
//! shared with a host driver, vfio-pci not loaded) is a [`VfioError`] that says what to do,
//! not an `ENOENT` or `EINVAL` from an ioctl.
//!
//! Every path is taken under a root directory (`/` on a real system) so that the checks run
//! in tests against a tree built in a temporary directory.

use super::address::PciAddress;
use super::error::VfioError;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// PCI vendor id of Mellanox / NVIDIA networking.
pub const MELLANOX_VENDOR: u16 = 0x15b3;

/// How the device reaches host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IommuMode {
    /// Through an IOMMU: the driver chooses IO virtual addresses and maps them.
    Iommu,
    /// No IOMMU (`enable_unsafe_noiommu_mode`): the device uses physical addresses, so DMA
    /// memory comes from locked 2 MiB huge pages, their addresses from `/proc/self/pagemap`.
    NoIommu,
}

/// A function found ready for VFIO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Its address.
    pub addr: PciAddress,
    /// Its sysfs directory.
    pub sysfs: PathBuf,
    /// PCI device id (the vendor is [`MELLANOX_VENDOR`]).
    pub device_id: u16,
    /// Its IOMMU group.
    pub group: u32,
    /// The group's character device (`/dev/vfio/N` or `/dev/vfio/noiommu-N`).
    pub group_node: PathBuf,
    /// Which of the two.
    pub mode: IommuMode,
}

/// Checks, under `root`, that function `addr` exists, is a ConnectX function bound to
/// vfio-pci, and has a viable IOMMU group with its device node.
pub fn locate(root: &Path, addr: PciAddress) -> Result<Location, VfioError> {
    let name = addr.to_string();
    let sysfs = root.join("sys/bus/pci/devices").join(&name);
    if !sysfs.exists() {
        return Err(VfioError::NoSuchDevice {
            addr: name,
            path: sysfs,
        });
    }
    let vendor = read_id(&sysfs.join("vendor"))?;
    let device_id = read_id(&sysfs.join("device"))?;
    if vendor != MELLANOX_VENDOR {
        return Err(VfioError::NotConnectX {
            addr: name,
            vendor,
            device: device_id,
        });
    }
    match driver_of(&sysfs)? {
        Some(d) if d == "vfio-pci" => {}
        driver => {
            return Err(VfioError::NotBoundToVfio { addr: name, driver });
        }
    }
    let group = match link_name(&sysfs.join("iommu_group"))? {
        Some(g) => g.parse::<u32>().map_err(|_| VfioError::System {
            path: sysfs.join("iommu_group"),
            what: format!("names group '{g}', not a number"),
        })?,
        None => return Err(VfioError::NoIommuGroup { addr: name }),
    };
    let others = bound_elsewhere(root, group, &name)?;
    if !others.is_empty() {
        return Err(VfioError::GroupNotViable {
            addr: name,
            group,
            others,
        });
    }
    let vfio = root.join("dev/vfio");
    let (group_node, mode) = {
        let plain = vfio.join(group.to_string());
        let noiommu = vfio.join(format!("noiommu-{group}"));
        if plain.exists() {
            (plain, IommuMode::Iommu)
        } else if noiommu.exists() {
            (noiommu, IommuMode::NoIommu)
        } else {
            return Err(VfioError::NoGroupNode { group, path: plain });
        }
    };
    Ok(Location {
        addr,
        sysfs,
        device_id,
        group,
        group_node,
        mode,
    })
}

/// The other members of IOMMU group `group` bound to a driver other than vfio-pci, as
/// (address, driver). Bridges bound to `pcieport` count too: VFIO refuses those groups.
fn bound_elsewhere(
    root: &Path,
    group: u32,
    this: &str,
) -> Result<Vec<(String, String)>, VfioError> {
    let dir = root.join(format!("sys/kernel/iommu_groups/{group}/devices"));
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        // A tree without the group directory: nothing known against it.
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(system(&dir, e)),
    };
    let mut others = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| system(&dir, e))?;
        let member = entry.file_name().to_string_lossy().into_owned();
        if member == this {
            continue;
        }
        let sysfs = root.join("sys/bus/pci/devices").join(&member);
        if let Some(d) = driver_of(&sysfs)? {
            if d != "vfio-pci" {
                others.push((member, d));
            }
        }
    }
    others.sort();
    Ok(others)
}

/// The driver a function is bound to: the name its `driver` link points at.
fn driver_of(sysfs: &Path) -> Result<Option<String>, VfioError> {
    link_name(&sysfs.join("driver"))
}

/// The last component of the symbolic link `path` points at; `None` when there is no link.
fn link_name(path: &Path) -> Result<Option<String>, VfioError> {
    match std::fs::read_link(path) {
        Ok(target) => Ok(target.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(system(path, e)),
    }
}

/// A 16-bit id as sysfs writes it: `0x15b3\n`.
fn read_id(path: &Path) -> Result<u16, VfioError> {
    let text = std::fs::read_to_string(path).map_err(|e| system(path, e))?;
    let t = text.trim();
    t.strip_prefix("0x")
        .and_then(|h| u16::from_str_radix(h, 16).ok())
        .ok_or_else(|| VfioError::System {
            path: path.to_owned(),
            what: format!("'{t}' is not a 16-bit hex id"),
        })
}

fn system(path: &Path, e: std::io::Error) -> VfioError {
    if e.kind() == ErrorKind::PermissionDenied {
        return VfioError::Permission {
            path: path.to_owned(),
        };
    }
    VfioError::System {
        path: path.to_owned(),
        what: e.to_string(),
    }
}

#[cfg(test)]
mod tests;
