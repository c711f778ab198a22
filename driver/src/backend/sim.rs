//! The device model as a backend: BAR accesses go to the model's registers, DMA memory comes
//! from the model's IO address space, and barriers are the language's release and acquire
//! fences (the model runs in this process; see [`ModelBarriers`]).

use super::{Backend, DmaAlloc, DmaBuf, DmaOwner, Events, Mmio, ModelBarriers, Quarantine};
use crate::error::{Error, Result};
use mlx5_sim::{Config, Device, Mode};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A backend over an [`mlx5_sim::Device`].
pub struct SimBackend {
    dev: Arc<Device>,
    dma: SimDma,
    threaded: bool,
}

/// The model's DMA space as an allocator. Each buffer keeps it (and so the model's memory)
/// alive; quarantined buffers stay mapped in the model until the last handle to the allocator
/// goes (the backend and every buffer it made) or [`DmaAlloc::release_quarantine`].
///
/// Clones share one allocator: a test may keep one to look at the quarantine after the HCA
/// and its backend are gone.
#[derive(Clone)]
pub struct SimDma(Arc<SimDmaOwner>);

struct SimDmaOwner {
    dev: Arc<Device>,
    /// `(iova, len)` of quarantined buffers.
    quarantine: Mutex<Vec<(u64, usize)>>,
}

impl SimDmaOwner {
    fn quarantine(&self) -> std::sync::MutexGuard<'_, Vec<(u64, usize)>> {
        self.quarantine.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn free(&self, iova: u64) {
        if let Err(e) = self.dev.dma().free(iova) {
            log::warn!("freeing DMA buffer 0x{iova:x}: {e}");
        }
    }
}

impl DmaOwner for SimDmaOwner {
    unsafe fn give_back(&self, _va: NonNull<u8>, iova: u64, _len: usize) {
        self.free(iova);
    }

    unsafe fn quarantine(&self, _va: NonNull<u8>, iova: u64, len: usize) {
        log::warn!(
            "DMA buffer 0x{iova:x} ({len} bytes) quarantined: the device may still write it"
        );
        self.quarantine().push((iova, len));
    }
}

impl Drop for SimDmaOwner {
    fn drop(&mut self) {
        // Nothing can reach the buffers any more: the backend and every buffer are gone.
        let held = std::mem::take(&mut *self.quarantine());
        for (iova, _) in held {
            self.free(iova);
        }
    }
}

impl SimDma {
    /// The model it allocates from.
    pub fn device(&self) -> &Arc<Device> {
        &self.0.dev
    }
}

impl DmaAlloc for SimDma {
    fn alloc(&self, len: usize, align: usize) -> Result<DmaBuf> {
        let r = self.0.dev.dma().alloc(len, align).map_err(|e| Error::Dma {
            len,
            reason: e.to_string(),
        })?;
        let Some(va) = NonNull::new(r.va) else {
            self.0.free(r.iova);
            return Err(Error::Dma {
                len,
                reason: "null address".into(),
            });
        };
        let owner: Arc<dyn DmaOwner> = self.0.clone();
        // SAFETY: the model keeps the region's memory until its DmaSpace goes, which the
        // owner (holding the device) outlives, and mapped at `iova` until the owner frees it.
        Ok(unsafe { DmaBuf::new(va, r.iova, r.len, owner) })
    }

    fn quarantined(&self) -> Quarantine {
        let q = self.0.quarantine();
        Quarantine {
            buffers: q.len(),
            bytes: q.iter().map(|&(_, len)| len).sum(),
        }
    }

    unsafe fn release_quarantine(&self) {
        let held = std::mem::take(&mut *self.0.quarantine());
        for (iova, _) in held {
            self.0.free(iova);
        }
    }
}

impl SimBackend {
    /// Creates a model with `config`; returns the backend and a handle to the model (for
    /// inspection and fault injection).
    pub fn new(config: Config) -> (SimBackend, Arc<Device>) {
        let threaded = matches!(config.mode, Mode::Threaded);
        let dev = Device::new(config);
        (SimBackend::over(dev.clone(), threaded), dev)
    }

    /// A backend over an existing model.
    pub fn over(dev: Arc<Device>, threaded: bool) -> SimBackend {
        let dma = SimDma(Arc::new(SimDmaOwner {
            dev: dev.clone(),
            quarantine: Mutex::new(Vec::new()),
        }));
        SimBackend { dev, dma, threaded }
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
    unsafe fn write32(&self, offset: usize, value: u32) {
        self.dev.write32(offset, value)
    }
    unsafe fn write64(&self, offset: usize, value: u64) {
        self.dev.write64(offset, value)
    }
    unsafe fn copy_wc(&self, offset: usize, data: &[u64]) {
        self.dev.write_block(offset, data)
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
    type Dma = SimDma;
    type Events = Self;
    type Barriers = ModelBarriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &SimDma {
        &self.dma
    }
    fn events(&self) -> &Self {
        self
    }
}
