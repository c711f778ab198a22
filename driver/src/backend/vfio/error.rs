//! What can stop the driver from reaching a function through VFIO, each with what to do
//! about it.

use std::path::PathBuf;

/// Why a function cannot be opened through VFIO.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// The text is not a PCI address.
    #[error("'{text}' is not a PCI address: {why}")]
    BadAddress {
        /// What was given.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No such function.
    #[error("no PCI function {addr} ({path} does not exist); `lspci -D -d 15b3:` lists the ConnectX functions")]
    NoSuchDevice {
        /// The address asked for.
        addr: String,
        /// Where sysfs would show it.
        path: PathBuf,
    },
    /// The function is not a Mellanox/NVIDIA one.
    #[error("{addr} is not a ConnectX function (vendor {vendor:#06x}, device {device:#06x}; ConnectX is vendor 0x15b3)")]
    NotConnectX {
        /// The address.
        addr: String,
        /// PCI vendor id.
        vendor: u16,
        /// PCI device id.
        device: u16,
    },
    /// The function is bound to another driver, or to none.
    #[error(
        "{addr} is {}, not to vfio-pci; to hand it to vfio-pci (as root):\n  \
         modprobe vfio-pci\n  \
         echo vfio-pci > /sys/bus/pci/devices/{addr}/driver_override\n  \
         {}echo {addr} > /sys/bus/pci/drivers_probe",
        match driver { Some(d) => format!("bound to {d}"), None => "bound to no driver".to_owned() },
        if driver.is_some() { format!("echo {addr} > /sys/bus/pci/devices/{addr}/driver/unbind\n  ") } else { String::new() }
    )]
    NotBoundToVfio {
        /// The address.
        addr: String,
        /// The driver it is bound to, if any.
        driver: Option<String>,
    },
    /// The function has no IOMMU group: no IOMMU, and no-IOMMU mode is off.
    #[error(
        "{addr} has no IOMMU group: turn the IOMMU on (kernel command line intel_iommu=on or \
         amd_iommu=on, and the firmware's VT-d/AMD-Vi setting), or, on a kernel built with \
         CONFIG_VFIO_NOIOMMU and at your own risk, `modprobe vfio enable_unsafe_noiommu_mode=1` \
         before binding it to vfio-pci"
    )]
    NoIommuGroup {
        /// The address.
        addr: String,
    },
    /// Another function of the same IOMMU group is bound to a host driver: VFIO refuses the
    /// group until every member is bound to vfio-pci (or to nothing).
    #[error(
        "IOMMU group {group} of {addr} is not viable: {} bound to host drivers; bind each to \
         vfio-pci too, or unbind it",
        others.iter().map(|(a, d)| format!("{a} ({d})")).collect::<Vec<_>>().join(", ")
    )]
    GroupNotViable {
        /// The address.
        addr: String,
        /// The group.
        group: u32,
        /// The other members bound to a driver other than vfio-pci: (address, driver).
        others: Vec<(String, String)>,
    },
    /// The group's character device is missing: vfio-pci is not loaded, or /dev not
    /// populated.
    #[error("no VFIO device node for IOMMU group {group} ({path} missing); is vfio-pci loaded (`modprobe vfio-pci`)?")]
    NoGroupNode {
        /// The group.
        group: u32,
        /// The node looked for.
        path: PathBuf,
    },
    /// A file the driver needs could not be opened for want of permission.
    #[error("no permission to open {path}: run as root, or give your user the group's device node (`chown $USER {path}`) and an unlimited memlock limit (`ulimit -l unlimited`)")]
    Permission {
        /// The file.
        path: PathBuf,
    },
    /// A system file could not be read or was not as expected.
    #[error("{path}: {what}")]
    System {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        what: String,
    },
    /// `/proc/self/pagemap` shows no frame numbers: reading them needs CAP_SYS_ADMIN.
    #[error("/proc/self/pagemap hides physical frame numbers (it needs CAP_SYS_ADMIN): no-IOMMU mode must run as root")]
    PagemapHidden,
    /// A pagemap entry whose frame number lies past the 64-bit physical address space.
    #[error("the pagemap entry of {va:#x} ({entry:#018x}) names a frame past the physical address space")]
    BadPagemapEntry {
        /// The virtual address.
        va: usize,
        /// The entry.
        entry: u64,
    },
    /// The page holding an address is not in memory (it was never touched, or is swapped out).
    #[error("the page at {va:#x} is not in memory (not touched yet, or swapped out); DMA memory must be touched and locked first")]
    PageNotPresent {
        /// The virtual address.
        va: usize,
    },
    /// The kernel's VFIO speaks another API version than the one this driver knows.
    #[error("{path} speaks VFIO API version {found}, not {expected}")]
    ApiVersion {
        /// The container node.
        path: PathBuf,
        /// What the kernel answered.
        found: i32,
        /// What the driver speaks.
        expected: i32,
    },
    /// The container offers no IOMMU model the driver can use for this group.
    #[error("VFIO at {path} offers no {wanted} IOMMU model; {hint}")]
    NoIommuModel {
        /// The container node.
        path: PathBuf,
        /// The model asked for.
        wanted: &'static str,
        /// What to do.
        hint: &'static str,
    },
    /// A VFIO request failed.
    #[error("{what} failed: {errno}{}", hint_for(*errno))]
    Ioctl {
        /// What was asked (names the request and its object).
        what: String,
        /// The kernel's answer.
        errno: nix::errno::Errno,
    },
    /// The function has no region or interrupt the driver needs.
    #[error("{addr}: {what}")]
    Unsupported {
        /// The address.
        addr: String,
        /// What is missing.
        what: String,
    },
    /// DMA memory could not be had.
    #[error("DMA memory of {len} bytes: {why}")]
    Memory {
        /// Bytes asked for.
        len: usize,
        /// Why not, and what to do.
        why: String,
    },
}

/// What to try for the errors VFIO requests commonly end in.
fn hint_for(errno: nix::errno::Errno) -> &'static str {
    use nix::errno::Errno;
    match errno {
        Errno::EPERM | Errno::EACCES => " (run as root, or own the group's device node)",
        Errno::ENOMEM => {
            " (pinning DMA memory counts against the memlock limit: `ulimit -l unlimited`)"
        }
        Errno::EBUSY => " (another process, or a VM, has the group or the device open)",
        _ => "",
    }
}
