//! The function's PCI configuration space: identity of a ConnectX-5 PF, one 64-bit BAR, and
//! the capability list a stock kernel expects of it (power management, PCI Express endpoint
//! with function-level reset, MSI-X, and the vendor-specific gateway `mlx5_core` looks for).
//!
//! The space is a 4 KiB image plus, per byte, which bits the host may write; everything else
//! is read-only. Writes with side effects (BAR sizing, FLR, MSI-X control) are reported to the
//! caller as [`ConfigEffect`]s.

mod layout;
mod vsec;

pub use layout::*;
use vsec::Gateway;

/// Bytes of configuration space (PCI Express: 4 KiB, extended space empty).
pub const CONFIG_SIZE: usize = 4096;

/// What a configuration write asks the device to do besides storing bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigEffect {
    /// Nothing else.
    None,
    /// Initiate Function Level Reset was written (PCIe device control bit 15).
    FunctionReset,
    /// The MSI-X enable or function-mask bit changed.
    MsixControl {
        /// MSI-X enable.
        enabled: bool,
        /// Function mask: every vector masked.
        masked: bool,
    },
}

/// The configuration space of the function.
pub struct ConfigSpace {
    bytes: [u8; CONFIG_SIZE],
    writable: [u8; CONFIG_SIZE],
    /// BAR 0 size (a power of two), for the all-ones sizing protocol.
    bar0_size: u64,
    vsec: Gateway,
}

impl std::fmt::Debug for ConfigSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigSpace")
            .field("bar0", &format_args!("{:#x}", self.bar0()))
            .field("bar0_size", &self.bar0_size)
            .finish_non_exhaustive()
    }
}

impl ConfigSpace {
    /// The space at power-on: BAR 0 of `bar0_size` bytes (rounded up to a power of two, at
    /// least 4 KiB), `vectors` MSI-X vectors.
    pub fn new(bar0_size: u64, vectors: u16) -> ConfigSpace {
        let bar0_size = bar0_size.max(4096).next_power_of_two();
        let mut c = ConfigSpace {
            bytes: [0; CONFIG_SIZE],
            writable: [0; CONFIG_SIZE],
            bar0_size,
            vsec: Gateway::default(),
        };
        c.build(vectors);
        c
    }

    fn put16(&mut self, off: usize, v: u16) {
        self.bytes[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn put32(&mut self, off: usize, v: u32) {
        self.bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn mask16(&mut self, off: usize, m: u16) {
        self.writable[off..off + 2].copy_from_slice(&m.to_le_bytes());
    }

    fn mask32(&mut self, off: usize, m: u32) {
        self.writable[off..off + 4].copy_from_slice(&m.to_le_bytes());
    }

    fn get16(&self, off: usize) -> u16 {
        u16::from_le_bytes([self.bytes[off], self.bytes[off + 1]])
    }

    fn get32(&self, off: usize) -> u32 {
        u32::from_le_bytes(self.bytes[off..off + 4].try_into().unwrap_or([0; 4]))
    }

    fn build(&mut self, vectors: u16) {
        let vectors = vectors.clamp(1, 2048);
        self.put16(VENDOR_ID, MELLANOX_VENDOR_ID);
        self.put16(DEVICE_ID, CONNECTX5_PF_DEVICE_ID);
        // Memory space, bus master, parity and SERR responses, INTx disable.
        self.mask16(COMMAND, 0x0546);
        self.put16(STATUS, STATUS_CAP_LIST);
        self.put32(REVISION_CLASS, CLASS_ETHERNET << 8);
        self.writable[CACHE_LINE_SIZE] = 0xff;
        self.writable[LATENCY_TIMER] = 0xff;
        // BAR 0: 64-bit prefetchable memory; BAR 1 is its upper half.
        self.put32(BAR0, BAR_MEM64 | BAR_PREFETCH);
        self.mask32(BAR0, !(self.bar0_size as u32).wrapping_sub(1) & !0xf);
        self.mask32(BAR1, !((self.bar0_size >> 32) as u32).wrapping_sub(1));
        if self.bar0_size >> 32 == 0 {
            self.mask32(BAR1, u32::MAX);
        }
        self.put16(SUBSYSTEM_VENDOR_ID, MELLANOX_VENDOR_ID);
        self.put16(SUBSYSTEM_ID, SUBSYSTEM_ID_VALUE);
        self.bytes[CAP_PTR] = CAP_PM as u8;
        self.writable[INTERRUPT_LINE] = 0xff;
        // No INTx: the pin stays 0; MSI-X is the function's only interrupt.

        // Power management, version 3, D0 only; the power state bits are writable.
        self.bytes[CAP_PM] = CAP_ID_PM;
        self.bytes[CAP_PM + 1] = CAP_PCIE as u8;
        self.put16(CAP_PM + 2, 0x0003);
        self.put16(CAP_PM + 4, PM_NO_SOFT_RESET);
        self.mask16(CAP_PM + 4, 0x0003);

        // PCI Express v2 endpoint: 256-byte payloads, FLR capable, a x16 8 GT/s link.
        self.bytes[CAP_PCIE] = CAP_ID_PCIE;
        self.bytes[CAP_PCIE + 1] = CAP_MSIX as u8;
        self.put16(CAP_PCIE + 2, 0x0002); // version 2, device/port type 0: endpoint
        self.put32(CAP_PCIE + PCIE_DEVCAP, DEVCAP_MPS_256 | DEVCAP_FLR);
        self.put16(CAP_PCIE + PCIE_DEVCTL, 0x2810); // MRRS 512, relaxed ordering, MPS 128
        self.mask16(CAP_PCIE + PCIE_DEVCTL, 0xffff); // bit 15 (FLR) reads 0, see write()
        self.put32(CAP_PCIE + PCIE_LNKCAP, LINK_SPEED_8GT | (16 << 4));
        self.mask16(CAP_PCIE + PCIE_LNKCTL, 0x0fff);
        self.put16(CAP_PCIE + PCIE_LNKSTA, LINK_SPEED_8GT as u16 | (16 << 4));
        self.mask16(CAP_PCIE + PCIE_DEVCTL2, 0xffff);
        self.put32(CAP_PCIE + PCIE_LNKCAP2, 0x0e); // 2.5, 5 and 8 GT/s
        self.put16(CAP_PCIE + PCIE_LNKCTL2, LINK_SPEED_8GT as u16);
        self.mask16(CAP_PCIE + PCIE_LNKCTL2, 0xffff);

        // MSI-X: table and PBA in BAR 0, in the hole between the initialization segment and
        // the first UAR page (see layout.rs).
        self.bytes[CAP_MSIX] = CAP_ID_MSIX;
        self.bytes[CAP_MSIX + 1] = CAP_VSEC as u8;
        self.put16(CAP_MSIX + 2, vectors - 1);
        self.mask16(CAP_MSIX + 2, MSIX_ENABLE | MSIX_FUNCTION_MASK);
        self.put32(CAP_MSIX + 4, MSIX_TABLE_OFFSET as u32); // BIR 0
        self.put32(CAP_MSIX + 8, MSIX_PBA_OFFSET as u32); // BIR 0

        // Vendor-specific capability: the gateway mlx5_core's PF probe looks for.
        self.bytes[CAP_VSEC] = CAP_ID_VNDR;
        self.bytes[CAP_VSEC + 1] = 0;
        self.bytes[CAP_VSEC + 2] = VSEC_LEN as u8;
    }

    /// BAR 0's programmed base address (64 bits, flag bits cleared).
    pub fn bar0(&self) -> u64 {
        (u64::from(self.get32(BAR1)) << 32) | u64::from(self.get32(BAR0) & !0xf)
    }

    /// BAR 0 size in bytes.
    pub fn bar0_size(&self) -> u64 {
        self.bar0_size
    }

    /// The MSI-X control word's enable and function-mask bits.
    pub fn msix_control(&self) -> (bool, bool) {
        let ctl = self.get16(CAP_MSIX + 2);
        (ctl & MSIX_ENABLE != 0, ctl & MSIX_FUNCTION_MASK != 0)
    }

    /// Whether bus mastering is on (command register bit 2).
    pub fn bus_master(&self) -> bool {
        self.get16(COMMAND) & 0x4 != 0
    }

    /// Reads `out.len()` bytes at `offset`; `None` when the range leaves the space.
    pub fn read(&mut self, offset: u64, out: &mut [u8]) -> Option<()> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(out.len())?;
        if end > CONFIG_SIZE {
            return None;
        }
        out.copy_from_slice(&self.bytes[start..end]);
        // The gateway's registers are live (counter, semaphore): each dword the read
        // touches is read once, its side effects with it.
        let first = CAP_VSEC + vsec::CTRL;
        let last = CAP_VSEC + VSEC_LEN;
        let mut reg = (start.max(first)) & !3;
        while reg < end.min(last) {
            let v = self.vsec.read(reg - CAP_VSEC).to_le_bytes();
            for (k, &b) in v.iter().enumerate() {
                if (start..end).contains(&(reg + k)) {
                    out[reg + k - start] = b;
                }
            }
            reg += 4;
        }
        Some(())
    }

    /// Writes `data` at `offset`, only the writable bits; `None` when the range leaves the
    /// space. Returns what else the write asks for.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Option<ConfigEffect> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(data.len())?;
        if end > CONFIG_SIZE {
            return None;
        }
        let msix_before = self.msix_control();
        let mut effect = ConfigEffect::None;
        for (i, &v) in data.iter().enumerate() {
            let at = start + i;
            if (CAP_VSEC + vsec::CTRL..CAP_VSEC + VSEC_LEN).contains(&at) {
                continue;
            }
            let m = self.writable[at];
            self.bytes[at] = (self.bytes[at] & !m) | (v & m);
        }
        // Gateway registers are written as whole dwords.
        if start >= CAP_VSEC + vsec::CTRL
            && end <= CAP_VSEC + VSEC_LEN
            && data.len() == 4
            && start % 4 == 0
        {
            let v = u32::from_le_bytes(data.try_into().unwrap_or([0; 4]));
            self.vsec.write(start - CAP_VSEC, v);
        }
        // Initiate FLR is write-only: act on it, store 0.
        let flr = CAP_PCIE + PCIE_DEVCTL + 1;
        if (start..end).contains(&flr) && self.bytes[flr] & 0x80 != 0 {
            self.bytes[flr] &= 0x7f;
            effect = ConfigEffect::FunctionReset;
        }
        let msix_after = self.msix_control();
        if msix_after != msix_before && effect == ConfigEffect::None {
            effect = ConfigEffect::MsixControl {
                enabled: msix_after.0,
                masked: msix_after.1,
            };
        }
        Some(effect)
    }

    /// Back to power-on values (a reset of the function keeps nothing the host programmed).
    pub fn reset(&mut self) {
        let vectors = (self.get16(CAP_MSIX + 2) & 0x7ff) + 1;
        let size = self.bar0_size;
        *self = ConfigSpace::new(size, vectors);
    }
}

#[cfg(test)]
mod tests;
