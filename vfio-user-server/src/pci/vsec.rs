//! The vendor-specific capability's gateway, as mlx5_core's PF probe finds it (`pci_vsc.c`):
//! a semaphore taken by writing the value just read from a counter, and a space selector whose
//! status field says whether the selected address space is reachable. This model exposes no
//! address space through the gateway (every space reads back as unsupported), so the crash
//! dump and software-reset paths that need one are declined the way the kernel expects of a
//! function without them.

/// Gateway register offsets inside the capability.
pub const CTRL: usize = 0x04;
/// Free-running counter: each read returns a new value.
pub const COUNTER: usize = 0x08;
/// Semaphore: 0 when free; holds the owner's counter value.
pub const SEMAPHORE: usize = 0x0c;
/// Address (bits 29:0) and busy flag (bit 31).
pub const ADDR: usize = 0x10;
/// Data.
pub const DATA: usize = 0x14;

/// The gateway's state.
#[derive(Debug, Default, Clone)]
pub struct Gateway {
    counter: u32,
    semaphore: u32,
    ctrl: u32,
    addr: u32,
    data: u32,
}

impl Gateway {
    /// Reads the register at `reg` (dword offset in the capability).
    pub fn read(&mut self, reg: usize) -> u32 {
        match reg {
            // Space (15:0) as written; status (31:29) 0: the space is not supported.
            CTRL => self.ctrl & 0xffff,
            COUNTER => {
                self.counter = self.counter.wrapping_add(1).max(1);
                self.counter
            }
            SEMAPHORE => self.semaphore,
            // Never busy: nothing is ever started.
            ADDR => self.addr & 0x3fff_ffff,
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
            ADDR => self.addr = v,
            DATA => self.data = v,
            _ => {}
        }
    }
}
