//! The vendor-specific capability's gateway, as mlx5_core's PF probe and health recovery use
//! it (`lib/pci_vsc.c`, `health.c`): a semaphore taken by writing the value just read from a
//! counter, a space selector whose status field says whether the selected address space is
//! reachable, and an address/data pair that moves one dword through the selected space (a
//! write is started with the flag bit set and done when the device clears it; a read is
//! started with it clear and done when the device sets it).
//!
//! One space is reachable: the semaphore domain (0xa), a page of hardware semaphores the
//! recovery path takes before it resets the firmware (its software-reset semaphore is at
//! 0x20). Every other space, the crash-dump scan space among them, reads back as unsupported,
//! which the kernel takes as "no crash dump" without a message.

/// Gateway register offsets inside the capability.
pub const CTRL: usize = 0x04;
/// Free-running counter: each read returns a new value.
pub const COUNTER: usize = 0x08;
/// Semaphore: 0 when free; holds the owner's counter value.
pub const SEMAPHORE: usize = 0x0c;
/// Address (bits 29:0), syndrome (bit 30) and flag (bit 31).
pub const ADDR: usize = 0x10;
/// Data.
pub const DATA: usize = 0x14;

/// The semaphore domain's space id.
pub const SPACE_SEMAPHORES: u32 = 0xa;
/// Semaphores in that space, one dword each from address 0.
const SEMAPHORES: usize = 64;
/// Status (bits 31:29) of a supported space.
const SPACE_SUPPORTED: u32 = 1 << 29;
const FLAG: u32 = 1 << 31;
const SYNDROME: u32 = 1 << 30;
const ADDRESS: u32 = 0x3fff_ffff;

/// The gateway's state.
#[derive(Debug, Clone)]
pub struct Gateway {
    counter: u32,
    semaphore: u32,
    ctrl: u32,
    addr: u32,
    data: u32,
    /// The semaphore domain; like the rest of config space, power-on is all free.
    semaphores: [u32; SEMAPHORES],
}

impl Default for Gateway {
    fn default() -> Self {
        Gateway {
            counter: 0,
            semaphore: 0,
            ctrl: 0,
            addr: 0,
            data: 0,
            semaphores: [0; SEMAPHORES],
        }
    }
}

impl Gateway {
    /// Reads the register at `reg` (dword offset in the capability).
    pub fn read(&mut self, reg: usize) -> u32 {
        match reg {
            // Space (15:0) as written; status (31:29) non-zero only for a reachable space.
            CTRL => {
                let status = if self.space() == SPACE_SEMAPHORES {
                    SPACE_SUPPORTED
                } else {
                    0
                };
                (self.ctrl & 0xffff) | status
            }
            COUNTER => {
                self.counter = self.counter.wrapping_add(1).max(1);
                self.counter
            }
            SEMAPHORE => self.semaphore,
            ADDR => self.addr,
            DATA => self.data,
            _ => 0,
        }
    }

    /// Writes the register at `reg`.
    pub fn write(&mut self, reg: usize, v: u32) {
        match reg {
            CTRL => self.ctrl = v,
            // Taken only while free, and only by the value the counter last gave; 0 frees it.
            SEMAPHORE => {
                if v == 0 {
                    self.semaphore = 0;
                } else if self.semaphore == 0 && v == self.counter {
                    self.semaphore = v;
                }
            }
            ADDR => self.access(v),
            DATA => self.data = v,
            _ => {}
        }
    }

    fn space(&self) -> u32 {
        self.ctrl & 0xffff
    }

    /// Starts (and, the model being instant, finishes) one access through the selected
    /// space. In an unreachable space nothing happens and the flag never turns, as a
    /// gateway with no such space would leave it: the kernel gives up after its retries.
    fn access(&mut self, v: u32) {
        let write = v & FLAG != 0;
        let address = v & ADDRESS;
        self.addr = v & !SYNDROME;
        if self.space() != SPACE_SEMAPHORES {
            return;
        }
        let slot = usize::try_from(address / 4)
            .ok()
            .filter(|&i| address % 4 == 0 && i < SEMAPHORES);
        match (slot, write) {
            (Some(i), true) => {
                // A hardware semaphore: free (0) takes any value, 0 releases, a held one
                // keeps its owner; the writer reads it back to learn whether it won.
                let cur = &mut self.semaphores[i];
                if self.data == 0 || *cur == 0 {
                    *cur = self.data;
                }
                self.addr = address;
            }
            (Some(i), false) => {
                self.data = self.semaphores[i];
                self.addr = address | FLAG;
            }
            // Outside the domain: done, with the syndrome bit saying the address is bad.
            (None, true) => self.addr = address | SYNDROME,
            (None, false) => {
                self.data = 0;
                self.addr = address | FLAG | SYNDROME;
            }
        }
    }
}
