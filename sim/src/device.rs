//! The device as the driver's backend sees it: BAR 0 register reads and writes, the DMA space,
//! and the out-of-band controls a test uses to play the role of firmware and link (page
//! requests, port changes, health failures, fault injection).

use crate::bar::{self, uar, Target};
use crate::cmdq::{self, Served};
use crate::config::{Config, Mode};
use crate::dma::{DmaSpace, DEFAULT_DMA_LIMIT};
use crate::events::{self, Posted};
use crate::faults::FaultInjector;
use crate::inventory::Objects;
use crate::model::Model;
use crate::record::CommandRecord;
use crate::regs::{RegWrite, Regs};
use crate::worker::Worker;
use mlx5_prm::rt::Mmio32;
use std::sync::{Arc, Mutex, MutexGuard};

/// Everything the driver's thread and the firmware thread share.
pub(crate) struct Core {
    regs: Mutex<Regs>,
    model: Mutex<Model>,
    dma: Arc<DmaSpace>,
    faults: FaultInjector,
}

/// Locks a mutex, recovering it if a panic poisoned it: the model's state is consistent
/// between commands, and a device must keep answering.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Core {
    fn regs(&self) -> MutexGuard<'_, Regs> {
        lock(&self.regs)
    }

    fn model(&self) -> MutexGuard<'_, Model> {
        lock(&self.model)
    }

    /// Serves the command queue entries whose bits are set in `vector`, lowest first. Nothing
    /// is served while firmware is initializing or has reported a health syndrome.
    pub(crate) fn ring(&self, vector: u32) {
        for slot in (0..32).filter(|slot| vector >> slot & 1 == 1) {
            let geometry = {
                let mut regs = self.regs();
                if regs.initializing() || !regs.healthy() {
                    return;
                }
                regs.cmdq()
            };
            if slot >= geometry.entries {
                continue;
            }
            let entry = geometry
                .base
                .wrapping_add(u64::from(slot) * geometry.stride);
            let mut m = self.model();
            match cmdq::serve(&mut m, &self.dma, &self.faults, entry) {
                Served::Done(_) | Served::Rejected(_) => {
                    events::command_completion(&mut m, &self.dma, 1 << slot);
                    if let Some((count, pages)) = self.faults.take_storm() {
                        for _ in 0..count {
                            events::page_request(&mut m, &self.dma, pages);
                        }
                    }
                }
                Served::Unreachable | Served::NotOwned | Served::Hung => {}
            }
        }
    }

    /// A 32-bit write into UAR page `index`: an EQ doorbell, or one half of a 64-bit
    /// doorbell written as two dwords (high first), as 32-bit hosts do.
    fn uar_write32(&self, index: u32, offset: usize, value: u32) {
        let mut m = self.model();
        if !m.uars.contains(index) {
            return;
        }
        match offset {
            uar::EQ_ARM => events::eq_doorbell(&mut m, index, value, true),
            uar::EQ_UPDATE => events::eq_doorbell(&mut m, index, value, false),
            o if is_doorbell64(o & !7) => {
                let state = m.uar_state.entry(index).or_default();
                if o % 8 == 0 {
                    state.pending_high = Some(value);
                } else if let Some(high) = state.pending_high.take() {
                    let full = (u64::from(high) << 32) | u64::from(value);
                    doorbell64(&mut m, index, o - 4, full);
                }
            }
            _ => {}
        }
    }

    /// A 64-bit write into UAR page `index`.
    fn uar_write64(&self, index: u32, offset: usize, value: u64) {
        if is_doorbell64(offset) {
            let mut m = self.model();
            if m.uars.contains(index) {
                doorbell64(&mut m, index, offset, value);
            }
        } else {
            self.uar_write32(index, offset, (value >> 32) as u32);
            self.uar_write32(index, offset + 4, value as u32);
        }
    }
}

/// True for the UAR offsets of 64-bit doorbells: the CQ arm doorbell and the BlueFlame
/// registers.
fn is_doorbell64(offset: usize) -> bool {
    offset == uar::CQ_DOORBELL || offset >= uar::BF_START
}

/// A complete 64-bit doorbell: recorded per UAR page; the CQ doorbell (low dword = cqn) also
/// arms the CQ if it rings through this page.
fn doorbell64(m: &mut Model, index: u32, offset: usize, value: u64) {
    let state = m.uar_state.entry(index).or_default();
    if offset == uar::CQ_DOORBELL {
        state.cq_doorbell = Some(value);
        let cqn = (value & 0xff_ffff) as u32;
        if let Ok(cq) = m.cqs.get_mut(cqn) {
            if cq.uar == index {
                cq.armed = true;
            }
        }
    } else {
        state.bf_doorbell = Some(value);
    }
}

/// A software ConnectX adapter: BAR 0, DMA memory and the firmware behind them.
///
/// Built by [`Device::new`] as an `Arc`, shared by the driver's backend (and, in threaded
/// mode, the firmware thread's core). Dropping the last `Arc` stops the firmware thread.
pub struct Device {
    core: Arc<Core>,
    config: Config,
    worker: Option<Worker>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("mode", &self.config.mode)
            .field("dma", &self.core.dma)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Length of BAR 0: the initialization segment at 0, then UAR page n at n * 4096 for the
    /// indices ALLOC_UAR hands out (from 8, clear of the 0x400c-byte segment).
    pub const BAR_SIZE: usize = bar::BAR_SIZE;

    /// A device in its reset state.
    pub fn new(config: Config) -> Arc<Device> {
        let timer_khz = config.caps.general_cur.device_frequency_khz().max(1);
        let core = Arc::new(Core {
            regs: Mutex::new(Regs::new(config.fw_ready, timer_khz)),
            model: Mutex::new(Model::new(&config)),
            dma: Arc::new(DmaSpace::new(DEFAULT_DMA_LIMIT)),
            faults: FaultInjector::new(&config.faults),
        });
        let worker = (config.mode == Mode::Threaded).then(|| Worker::spawn(core.clone()));
        Arc::new(Device {
            core,
            config,
            worker,
        })
    }

    /// The configuration the device was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Reads the BAR 0 register at `offset` (the host-order value of the big-endian register).
    /// An unaligned or out-of-range offset reads all ones, like a failed PCIe read; UAR pages
    /// and unused space read 0.
    pub fn read32(&self, offset: usize) -> u32 {
        match bar::decode(offset, 4) {
            None => u32::MAX,
            Some(Target::InitSeg(off)) => self.core.regs().read(off),
            Some(_) => 0,
        }
    }

    /// Writes the BAR 0 register at `offset`: the command queue address (0x10, 0x14), the
    /// command doorbell (0x18), or a doorbell of a UAR page (EQ at +0x40 arm and +0x48 update,
    /// `eqn << 24 | consumer index`). Writes to read-only, unused or out-of-range offsets are
    /// dropped.
    pub fn write32(&self, offset: usize, value: u32) {
        match bar::decode(offset, 4) {
            Some(Target::InitSeg(off)) => {
                let action = self.core.regs().write(off, value);
                if let RegWrite::Doorbell(vector) = action {
                    match &self.worker {
                        Some(worker) => worker.doorbell(vector),
                        None => self.core.ring(vector),
                    }
                }
            }
            Some(Target::Uar { index, offset }) => self.core.uar_write32(index, offset, value),
            Some(Target::Hole) | None => {}
        }
    }

    /// A 64-bit BAR 0 write: the CQ arm doorbell at UAR + 0x20 (high dword sn/cmd/ci, low
    /// dword cqn) and send doorbells at UAR + 0x800 and up are recorded per UAR page (the CQ
    /// doorbell also arms the CQ); elsewhere it acts as two 32-bit writes, high dword first.
    pub fn write64(&self, offset: usize, value: u64) {
        match bar::decode(offset, 8) {
            Some(Target::Uar { index, offset }) => self.core.uar_write64(index, offset, value),
            Some(Target::InitSeg(off)) => {
                self.write32(off, (value >> 32) as u32);
                self.write32(off + 4, value as u32);
            }
            Some(Target::Hole) | None => {}
        }
    }

    /// The memory the driver allocates for the device.
    pub fn dma(&self) -> &Arc<DmaSpace> {
        &self.core.dma
    }

    /// Firmware pages given by MANAGE_PAGES and not yet taken back.
    pub fn pages_held(&self) -> usize {
        self.core.model().pages.held()
    }

    /// Fault injection, changeable at run time.
    pub fn faults(&self) -> &FaultInjector {
        &self.core.faults
    }

    /// Every command executed so far, in order.
    pub fn commands(&self) -> Vec<CommandRecord> {
        self.core.model().records.clone()
    }

    /// Raises a page-request event, as firmware does when it needs pages (`num_pages` > 0) or
    /// has pages to return (< 0). The demand also shows in QUERY_PAGES (regular). Without an
    /// EQ subscribed to page requests only the demand changes.
    pub fn request_pages(&self, num_pages: i32) {
        let mut m = self.core.model();
        events::page_request(&mut m, &self.core.dma, num_pages);
    }

    /// The link of `port` (1 for the model's only port) goes up or down: the port's state
    /// changes and a port-change event (sub-type active or down) is raised.
    pub fn raise_port_change(&self, port: u8, up: bool) {
        let mut m = self.core.model();
        if port == 1 {
            m.port.link_up = up;
        }
        events::port_change(&mut m, &self.core.dma, port, up);
    }

    /// Reports a firmware error: the health buffer and the health_syndrome byte (0x1010) show
    /// `syndrome`, the health counter stops and no command completes any more. 0 heals.
    pub fn set_health_syndrome(&self, syndrome: u8) {
        self.core.regs().set_health_syndrome(syndrome);
    }

    /// Waits until the firmware thread has served every doorbell rung so far (immediate in
    /// inline mode).
    pub fn sync(&self) {
        if let Some(worker) = &self.worker {
            worker.sync();
        }
    }

    /// A completion arrived on CQ `cqn`: if the CQ is armed (by its UAR doorbell), a
    /// completion EQE goes to its EQ and the CQ disarms. Returns true when an EQE was written.
    pub fn raise_completion(&self, cqn: u32) -> bool {
        let mut m = self.core.model();
        events::completion(&mut m, &self.core.dma, cqn) == Posted::Written
    }

    /// EQEs EQ `eqn` dropped because its ring was full, or `None` if there is no such EQ.
    pub fn eq_overruns(&self, eqn: u8) -> Option<u64> {
        self.core
            .model()
            .eqs
            .get(eqn.into())
            .ok()
            .map(|eq| eq.overruns)
    }

    /// Interrupts raised on MSI-X vector `vector` (an armed EQ that received an EQE).
    pub fn interrupts(&self, vector: u16) -> u64 {
        self.core
            .model()
            .interrupts
            .get(&vector)
            .copied()
            .unwrap_or(0)
    }

    /// Device DMA accesses that hit unmapped memory: command entries, mailboxes or rings at
    /// IOVAs the driver never mapped or already freed.
    pub fn dma_faults(&self) -> u64 {
        self.core.model().dma_faults
    }

    /// The last 64-bit CQ doorbell written to UAR page `uar`.
    pub fn last_cq_doorbell(&self, uar: u32) -> Option<u64> {
        self.core
            .model()
            .uar_state
            .get(&uar)
            .and_then(|s| s.cq_doorbell)
    }

    /// The last send (BlueFlame) doorbell written to UAR page `uar`.
    pub fn last_send_doorbell(&self, uar: u32) -> Option<u64> {
        self.core
            .model()
            .uar_state
            .get(&uar)
            .and_then(|s| s.bf_doorbell)
    }

    /// How many objects of each kind the device holds.
    pub fn objects(&self) -> Objects {
        Objects::of(&self.core.model())
    }

    /// The string SET_DRIVER_VERSION gave, up to its first NUL.
    pub fn driver_version(&self) -> Option<String> {
        let m = self.core.model();
        let raw = m.driver_version?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        Some(String::from_utf8_lossy(&raw[..end]).into_owned())
    }
}

/// BAR 0 as a register block, so generated register views (`InitialSeg`, `UarPage`) work
/// over the model through `MmioBytes`.
impl Mmio32 for Device {
    fn read32(&self, offset: usize) -> u32 {
        Device::read32(self, offset)
    }

    fn write32(&self, offset: usize, value: u32) {
        Device::write32(self, offset, value)
    }
}
