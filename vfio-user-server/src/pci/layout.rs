//! Where things are in the configuration space and in BAR 0: register offsets of the PCI and
//! PCI Express specifications, and the capability positions this function uses (as on a real
//! ConnectX PF: power management at 0x40, PCI Express at 0x60, MSI-X at 0x9c, the vendor
//! capability at 0xc0).

/// Vendor ID register.
pub const VENDOR_ID: usize = 0x00;
/// Device ID register.
pub const DEVICE_ID: usize = 0x02;
/// Command register.
pub const COMMAND: usize = 0x04;
/// Status register.
pub const STATUS: usize = 0x06;
/// Revision ID (byte 0) and class code (bytes 1-3).
pub const REVISION_CLASS: usize = 0x08;
/// Cache line size.
pub const CACHE_LINE_SIZE: usize = 0x0c;
/// Latency timer.
pub const LATENCY_TIMER: usize = 0x0d;
/// BAR 0 (low half of the 64-bit BAR).
pub const BAR0: usize = 0x10;
/// BAR 1 (high half of BAR 0).
pub const BAR1: usize = 0x14;
/// Subsystem vendor ID.
pub const SUBSYSTEM_VENDOR_ID: usize = 0x2c;
/// Subsystem ID.
pub const SUBSYSTEM_ID: usize = 0x2e;
/// Capabilities pointer.
pub const CAP_PTR: usize = 0x34;
/// Interrupt line.
pub const INTERRUPT_LINE: usize = 0x3c;

/// Mellanox Technologies.
pub const MELLANOX_VENDOR_ID: u16 = 0x15b3;
/// ConnectX-5 physical function (the kernel's mlx5_core ID table lists it; 0x1018 is its VF).
pub const CONNECTX5_PF_DEVICE_ID: u16 = 0x1017;
/// Subsystem ID reported (any value; boards differ).
pub const SUBSYSTEM_ID_VALUE: u16 = 0x0007;
/// Class code: network controller (0x02), Ethernet (0x00), programming interface 0.
pub const CLASS_ETHERNET: u32 = 0x02_00_00;
/// Status bit 4: the capability list is present.
pub const STATUS_CAP_LIST: u16 = 1 << 4;
/// BAR type bits: 64-bit memory.
pub const BAR_MEM64: u32 = 0b10 << 1;
/// BAR bit 3: prefetchable.
pub const BAR_PREFETCH: u32 = 1 << 3;

/// Power management capability.
pub const CAP_PM: usize = 0x40;
/// PCI Express capability.
pub const CAP_PCIE: usize = 0x60;
/// MSI-X capability.
pub const CAP_MSIX: usize = 0x9c;
/// Vendor-specific capability (the mlx5 gateway).
pub const CAP_VSEC: usize = 0xc0;
/// Bytes of the vendor-specific capability: header and five gateway registers.
pub const VSEC_LEN: usize = 0x18;

/// Capability ID: power management.
pub const CAP_ID_PM: u8 = 0x01;
/// Capability ID: vendor specific.
pub const CAP_ID_VNDR: u8 = 0x09;
/// Capability ID: PCI Express.
pub const CAP_ID_PCIE: u8 = 0x10;
/// Capability ID: MSI-X.
pub const CAP_ID_MSIX: u8 = 0x11;

/// PMCSR bit 3: no soft reset on D3hot to D0.
pub const PM_NO_SOFT_RESET: u16 = 1 << 3;

/// Offsets inside the PCI Express capability.
pub const PCIE_DEVCAP: usize = 0x04;
/// Device control.
pub const PCIE_DEVCTL: usize = 0x08;
/// Link capabilities.
pub const PCIE_LNKCAP: usize = 0x0c;
/// Link control.
pub const PCIE_LNKCTL: usize = 0x10;
/// Link status.
pub const PCIE_LNKSTA: usize = 0x12;
/// Device control 2.
pub const PCIE_DEVCTL2: usize = 0x28;
/// Link capabilities 2.
pub const PCIE_LNKCAP2: usize = 0x2c;
/// Link control 2.
pub const PCIE_LNKCTL2: usize = 0x30;
/// Device capabilities: max payload 256 bytes.
pub const DEVCAP_MPS_256: u32 = 1;
/// Device capabilities bit 28: function level reset.
pub const DEVCAP_FLR: u32 = 1 << 28;
/// Link speed code 3: 8 GT/s.
pub const LINK_SPEED_8GT: u32 = 3;

/// MSI-X message control bit 15: enable.
pub const MSIX_ENABLE: u16 = 1 << 15;
/// MSI-X message control bit 14: function mask.
pub const MSIX_FUNCTION_MASK: u16 = 1 << 14;
/// BAR 0 offset of the MSI-X table: in the hole between the end of the initialization
/// segment (0x400c) and the first UAR page the model hands out (index 8, 0x8000).
pub const MSIX_TABLE_OFFSET: u64 = 0x5000;
/// BAR 0 offset of the MSI-X pending bit array.
pub const MSIX_PBA_OFFSET: u64 = 0x6000;
/// Bytes of one MSI-X table entry.
pub const MSIX_ENTRY_SIZE: u64 = 16;
