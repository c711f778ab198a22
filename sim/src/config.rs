//! How a [`Device`](crate::Device) is built: firmware timing, execution mode, capabilities,
//! page demands and initial faults.

use crate::caps::Caps;
use crate::dma::DmaBacking;
use std::time::Duration;

/// When the firmware finishes initializing, i.e. when the `initializing` bit of the
/// initialization segment (0x1fc bit 31) clears. Doorbells rung before that are ignored, as
/// firmware that is still booting accepts no commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwReady {
    /// Ready from the start.
    Immediately,
    /// The first `n` reads of 0x1fc report initializing; later ones do not.
    AfterPolls(u32),
    /// Ready once this much time has passed since the device was created.
    After(Duration),
    /// Never ready: the driver's bring-up timeout path.
    Never,
}

/// Where commands execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In the thread that writes the command doorbell, before `write32` returns: fully
    /// deterministic, and the entry is already complete when the driver first polls it.
    Inline,
    /// In one worker thread fed in doorbell order, as real firmware runs beside the driver:
    /// the driver must poll ownership (or wait for the command-completion event).
    Threaded,
}

/// Initial fault injection (the same settings [`FaultInjector`](crate::FaultInjector)
/// changes at run time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// `(opcode, status, syndrome)`: every execution of the opcode fails with that status and
    /// syndrome without running.
    pub fail_commands: Vec<(u16, u8, u32)>,
    /// Opcodes whose entries are never handed back (ownership stays with the device).
    pub never_complete: Vec<u16>,
    /// `(events, pages_each)`: after the next completed command, raise that many
    /// page-request events of `pages_each` pages each.
    pub page_request_storm: Option<(u32, i32)>,
}

/// Everything a [`Device`](crate::Device) is built from.
#[derive(Debug, Clone)]
pub struct Config {
    /// When the initializing bit clears.
    pub fw_ready: FwReady,
    /// Inline or threaded command execution.
    pub mode: Mode,
    /// The capability profile (maximum and current values).
    pub caps: Caps,
    /// Pages QUERY_PAGES asks for at boot (op_mod 1), before the capabilities are set.
    pub boot_pages: u32,
    /// Pages QUERY_PAGES asks for at init (op_mod 2), before INIT_HCA.
    pub init_pages: u32,
    /// Pages QUERY_PAGES asks for in regular operation (op_mod 3).
    pub regular_pages: u32,
    /// Faults active from the start.
    pub faults: Faults,
    /// Where DMA memory comes from: allocated by the model for a driver in this process (the
    /// default), or mapped by a host from outside (a vfio-user server and its guest's RAM).
    pub dma: DmaBacking,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fw_ready: FwReady::Immediately,
            mode: Mode::Inline,
            caps: Caps::connectx5(),
            boot_pages: 16,
            init_pages: 32,
            regular_pages: 64,
            faults: Faults::default(),
            dma: DmaBacking::default(),
        }
    }
}
