//! The device model behind the function: one `mlx5_sim::Device` in threaded mode (commands and
//! doorbells run on the model's firmware thread, so the socket thread never waits on device
//! work) with an external DMA space (the guest's RAM, mapped by the server), and what the
//! server asks of it through the model's host API: BAR accesses by size, DMA maps, the
//! interrupt sink, reset, and the counts the control channel reports.

use mlx5_sim::{Config, Device, DmaBacking, DmaError, Mode};
use std::sync::Arc;

/// MSI-X vectors of the function (a ConnectX-5 PF offers more; mlx5_core asks for one per CPU
/// plus one). The model is told, so that CREATE_EQ refuses a vector the table lacks.
pub const MSIX_VECTORS: u16 = 64;

/// Which of the model's Linux profiles the function runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// `Config::linux_probe_only`: an InfiniBand-mode port, so `mlx5_core` probes and
    /// unloads without starting its Ethernet driver (what the guest milestones check).
    #[default]
    ProbeOnly,
    /// `Config::linux_ethernet`: an Ethernet port, so `mlx5e` starts.
    Ethernet,
}

impl Profile {
    fn config(self) -> Config {
        match self {
            Profile::ProbeOnly => Config::linux_probe_only(),
            Profile::Ethernet => Config::linux_ethernet(),
        }
    }
}

/// One device model.
#[derive(Debug, Clone)]
pub struct Model {
    dev: Arc<Device>,
}

impl Model {
    /// A device at power-on: the model's profile for a Linux guest's probe
    /// (`Config::linux_probe_only`), threaded, its DMA space the guest's memory.
    pub fn new() -> Model {
        Model::with_profile(Profile::ProbeOnly)
    }

    /// A device at power-on running `profile`, threaded, its DMA space the guest's memory.
    pub fn with_profile(profile: Profile) -> Model {
        let config = Config {
            mode: Mode::Threaded,
            dma: DmaBacking::External,
            msix_vectors: MSIX_VECTORS,
            ..profile.config()
        };
        Model {
            dev: Device::new(config),
        }
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Bytes of BAR 0 the model decodes.
    pub fn bar_size(&self) -> u64 {
        Device::BAR_SIZE as u64
    }

    /// Reads `out.len()` bytes of BAR 0 at `offset`, in BAR order (big-endian registers).
    pub fn bar_read(&self, offset: u64, out: &mut [u8]) {
        match usize::try_from(offset) {
            Ok(off) => self.dev.bar_read_bytes(off, out),
            Err(_) => out.fill(0xff),
        }
    }

    /// Writes `data` (BAR order) to BAR 0 at `offset`.
    pub fn bar_write(&self, offset: u64, data: &[u8]) {
        if let Ok(off) = usize::try_from(offset) {
            self.dev.bar_write_bytes(off, data);
        }
    }

    /// Maps guest memory at `iova`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay mapped until [`Model::unmap_dma`] (or
    /// [`Model::unmap_all_dma`]) for it has returned.
    pub unsafe fn map_dma(&self, iova: u64, ptr: *mut u8, len: usize) -> Result<(), DmaError> {
        // SAFETY: forwarded contract.
        unsafe { self.dev.map_dma(iova, ptr, len) }
    }

    /// Maps guest memory at `iova` for the device to read only (a `DMA_TO_DEVICE` mapping
    /// behind the guest's IOMMU): a write the model would make there is a DMA fault.
    ///
    /// # Safety
    /// As for [`Model::map_dma`]; the memory need only be readable.
    pub unsafe fn map_dma_read_only(
        &self,
        iova: u64,
        ptr: *mut u8,
        len: usize,
    ) -> Result<(), DmaError> {
        // SAFETY: forwarded contract.
        unsafe { self.dev.map_dma_read_only(iova, ptr, len) }
    }

    /// Unmaps guest memory at `iova`; returns once no model thread can touch it.
    pub fn unmap_dma(&self, iova: u64, len: u64) -> Result<usize, DmaError> {
        self.dev.unmap_dma(iova, len)
    }

    /// Unmaps every region; returns once no model thread can touch any of them.
    pub fn unmap_all_dma(&self) {
        let _ = self.dev.unmap_all_dma();
    }

    /// Routes the model's interrupts to `sink`.
    pub fn set_interrupt_sink(&self, sink: Arc<dyn Fn(u16) + Send + Sync>) {
        self.dev.set_interrupt_sink(sink);
    }

    /// Follows the command register's Bus Master Enable bit: while it is clear the model
    /// does no DMA and raises no interrupt, holding the work BAR writes ask for.
    pub fn set_bus_master(&self, on: bool) {
        self.dev.set_bus_master(on);
    }

    /// Back to power-on state (the DMA maps stay).
    pub fn reset(&mut self) {
        self.dev.reset();
    }

    /// BAR accesses the model could not decode.
    pub fn bad_bar_accesses(&self) -> u64 {
        self.dev.bad_bar_accesses()
    }
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}
