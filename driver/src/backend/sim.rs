//! The device model as a backend: BAR accesses go to the model's registers, DMA memory comes
//! from the model's IO address space, and barriers are the language's release and acquire
//! fences (the model runs in this process; see [`ModelBarriers`]).

use super::{Backend, DmaAlloc, DmaBuf, Events, Mmio, ModelBarriers};
use crate::error::{Error, Result};
use mlx5_sim::{Config, Device, Mode};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A backend over an [`mlx5_sim::Device`].
pub struct SimBackend {
    dev: Arc<Device>,
    threaded: bool,
}

impl SimBackend {
    /// Creates a model with `config`; returns the backend and a handle to the model (for
    /// inspection and fault injection).
    pub fn new(config: Config) -> (SimBackend, Arc<Device>) {
        let threaded = matches!(config.mode, Mode::Threaded);
        let dev = Device::new(config);
        (
            SimBackend {
                dev: dev.clone(),
                threaded,
            },
            dev,
        )
    }

    /// A backend over an existing model.
    pub fn over(dev: Arc<Device>, threaded: bool) -> SimBackend {
        SimBackend { dev, threaded }
    }

    /// The model.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }
}

impl Mmio for SimBackend {
    fn len(&self) -> usize {
        Device::BAR_SIZE
    }
    fn read32(&self, offset: usize) -> u32 {
        self.dev.read32(offset)
    }
    fn write32(&self, offset: usize, value: u32) {
        self.dev.write32(offset, value)
    }
    fn write64(&self, offset: usize, value: u64) {
        self.dev.write64(offset, value)
    }
    fn copy_wc(&self, offset: usize, data: &[u64]) {
        self.dev.write_block(offset, data)
    }
}

impl DmaAlloc for SimBackend {
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf> {
        let r = self.dev.dma().alloc(len, align).map_err(|e| Error::Dma {
            len,
            reason: format!("{e:?}"),
        })?;
        let va = NonNull::new(r.va).ok_or_else(|| Error::Dma {
            len,
            reason: "null address".into(),
        })?;
        // SAFETY: the model keeps the region mapped at `iova` until `free`.
        Ok(unsafe { DmaBuf::new(va, r.iova, r.len) })
    }

    fn free(&self, buf: DmaBuf) {
        if let Err(e) = self.dev.dma().free(buf.iova()) {
            log::warn!("freeing DMA buffer 0x{:x}: {e:?}", buf.iova());
        }
    }
}

impl Events for SimBackend {
    fn wait(&self, deadline: Instant) {
        // Inline: the model has done the work a doorbell asked for before the write returned;
        // what it does by itself (RNR retries, moderation timers) runs on `tick`.
        // Threaded: give the model's thread a moment.
        self.dev.tick();
        if self.threaded {
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep((deadline - now).min(Duration::from_micros(20)));
            }
        }
    }
}

impl Backend for SimBackend {
    type Mmio = Self;
    type Dma = Self;
    type Events = Self;
    type Barriers = ModelBarriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &Self {
        self
    }
    fn events(&self) -> &Self {
        self
    }
}
