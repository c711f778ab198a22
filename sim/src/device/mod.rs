//! The device as the driver's backend sees it: BAR 0 register reads and writes, the DMA space,
//! and what the driver's thread and the firmware thread share (`Core`). The port's side (links,
//! frames arriving, the capture) is in `port`; how frames move between the port and the locked
//! models (one device, or two on a wire) in `traffic`; the counts and out-of-band controls a
//! test uses to play firmware and link (page requests, port changes, health failures, faults)
//! in `inspect`.

mod inspect;
mod port;
mod traffic;

use crate::bar::{self, Target};
use crate::busmaster::BusMaster;
use crate::cmdq::{self, Served};
use crate::config::{Config, Mode};
use crate::datapath;
use crate::dma::DmaSpace;
use crate::events;
use crate::faults::FaultInjector;
use crate::model::Model;
use crate::observe::{CommandTrace, Observer};
use crate::pcap::Capture;
use crate::regs::{RegWrite, Regs};
use crate::session::{lock, Session, SinkSlot};
use crate::wire::Link;
use crate::worker::{Job, Worker};
use mlx5_prm::rt::Mmio32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Numbers devices, to lock two of them in a fixed order.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Everything the driver's thread and the firmware thread share.
pub(crate) struct Core {
    id: u64,
    /// What the device was built from (and what `reset` restores).
    pub(crate) config: Config,
    regs: Mutex<Regs>,
    model: Mutex<Model>,
    pub(crate) dma: Arc<DmaSpace>,
    faults: FaultInjector,
    /// Where raised interrupts go.
    pub(crate) sink: SinkSlot,
    /// BAR accesses the device could not decode (see `Device::bad_bar_accesses`).
    pub(crate) bad_bar: AtomicU64,
    /// The device at the other end of the wire: where remote QPNs resolve.
    peer: Mutex<Option<Weak<Core>>>,
    /// Whether `peer` is set, so that a device without one (the common case, and every
    /// doorbell's first question) needs no lock to know.
    has_peer: AtomicBool,
    /// Where transmitted frames go.
    link: Mutex<Option<Arc<dyn Link>>>,
    /// Transmitted frames come back into this device instead of going to the link.
    loopback: AtomicBool,
    /// The pcap capture of the port's frames, if one runs; `capturing` spares the data path
    /// the lock when none does.
    capture: Mutex<Option<Capture>>,
    capturing: AtomicBool,
    /// The host's command observer, if any.
    observer: Observer,
    /// Bus Master Enable, and the writes waiting for it (see the `busmaster` module).
    pub(crate) bus_master: BusMaster,
}

/// What a UAR write was, for the work that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UarWrite {
    /// A send doorbell (or BlueFlame copy): its queue has run.
    Send,
    /// Anything else.
    Other,
}

impl Core {
    pub(crate) fn regs(&self) -> MutexGuard<'_, Regs> {
        lock(&self.regs)
    }

    /// A session of the model (see [`Session`]).
    pub(crate) fn model(&self) -> Session<'_> {
        Session::new(&self.model, &self.sink)
    }

    /// Back to power-on: the initialization segment and the model as the configuration
    /// builds them. What the host attached stays: DMA space and its mappings, link, wire,
    /// loopback, capture, fault injection, interrupt sink.
    pub(crate) fn reset(&self) {
        self.bus_master.forget();
        let mut m = self.model();
        let regs = regs_of(&self.config);
        // The non-volatile configuration survives, what was written to it now in force.
        let nv = m.registers.nv.after_reset();
        let module = m.port.module.take();
        *m = Model::new(&self.config, regs.clock());
        m.registers.nv = nv;
        // The module is hardware in the cage: a reset does not plug or unplug it.
        m.port.link_up = module.is_some();
        m.port.module = module;
        *self.regs() = regs;
    }

    /// Sets (or clears) the device whose QPs remote QPNs name.
    pub(crate) fn set_peer(&self, peer: Option<Weak<Core>>) {
        let mut p = lock(&self.peer);
        self.has_peer.store(peer.is_some(), Ordering::Release);
        *p = peer;
    }

    /// Sets (or clears) the link transmitted frames go to.
    pub(crate) fn set_link(&self, link: Option<Arc<dyn Link>>) {
        *lock(&self.link) = link;
    }

    /// The peer device, if a wire connects one (other than this device itself).
    fn peer(&self) -> Option<Arc<Core>> {
        if !self.has_peer.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.peer)
            .as_ref()
            .and_then(Weak::upgrade)
            .filter(|p| p.id != self.id)
    }

    /// The device's own work (see [`datapath::kick`]), on this device and its peer.
    pub(crate) fn kick(&self) {
        if !self.bus_master.enabled() {
            return;
        }
        self.sides(|a, b| match b {
            Some(b) => {
                datapath::kick(a, Some(&mut *b));
                datapath::kick(b, Some(a));
            }
            None => datapath::kick(a, None),
        });
    }

    /// True while the device (or its peer) has work of its own pending.
    pub(crate) fn busy(&self) -> bool {
        datapath::busy(&self.model()) || self.peer().is_some_and(|p| datapath::busy(&p.model()))
    }

    /// Serves the command queue entries whose bits are set in `vector`, lowest first. Nothing
    /// is served while firmware is initializing or has reported a health syndrome. A served
    /// entry is announced on the command EQ that existed when it was handed over, and shown
    /// to the host's observer once the model is unlocked.
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
            let cmd_eq = events::command_eq(&m);
            let served = cmdq::serve(&mut m, &self.dma, &self.faults, entry);
            if let Served::Done(_) | Served::Rejected(..) = served {
                if let Some(eqn) = cmd_eq {
                    events::command_completion(&mut m, &self.dma, eqn, 1 << slot);
                }
                if let Some((count, pages)) = self.faults.take_storm() {
                    for _ in 0..count {
                        events::page_request(&mut m, &self.dma, pages);
                    }
                }
            }
            drop(m);
            if let Some(observer) = self.observer.get() {
                if let Some(trace) = trace(slot, served) {
                    observer(&trace);
                }
            }
        }
    }

    /// Firmware resets itself (the driver asked through the NIC interface bits): every
    /// command-made object, page and capability setting is forgotten, the health buffer is
    /// clean and the counter restarts, and the NIC interface reads disabled until the driver
    /// programs the command queue again. Host memory, the link and the observer stay.
    fn software_reset(&self, config: &Config) {
        self.bus_master.forget();
        let mut m = self.model();
        let mut regs = self.regs();
        *regs = Regs::after_software_reset(
            config.fw_ready,
            timer_khz(config),
            config.timeouts.as_ref(),
        )
        .with_timer_start(config.timer_start);
        let nv = m.registers.nv.after_reset();
        let module = m.port.module.take();
        *m = Model::new(config, regs.clock());
        m.registers.nv = nv;
        m.port.link_up = module.is_some();
        m.port.module = module;
    }
}

/// The initialization segment of a device built from `config`, at power-on.
fn regs_of(config: &Config) -> Regs {
    Regs::new(config.fw_ready, timer_khz(config), config.timeouts.as_ref())
        .with_timer_start(config.timer_start)
}

/// The internal timer's rate: the profile's device frequency.
fn timer_khz(config: &Config) -> u32 {
    config.caps.general_cur.device_frequency_khz().max(1)
}

/// What the host's observer sees of a served entry.
fn trace(slot: u32, served: Served) -> Option<CommandTrace> {
    match served {
        Served::Done(e) => Some(CommandTrace {
            slot,
            opcode: e.opcode,
            op_mod: e.op_mod,
            delivery: 0,
            status: e.status,
            syndrome: e.syndrome,
            input: e.input,
            output: e.output,
        }),
        Served::Rejected(status, inline) => Some(CommandTrace {
            slot,
            opcode: u16::from_be_bytes([inline[0], inline[1]]),
            op_mod: u16::from_be_bytes([inline[6], inline[7]]),
            delivery: status.raw(),
            status: 0,
            syndrome: 0,
            input: inline.to_vec(),
            output: Vec::new(),
        }),
        Served::Unreachable | Served::NotOwned | Served::Hung => None,
    }
}

/// A software ConnectX adapter: BAR 0, DMA memory and the firmware behind them.
///
/// Built by [`Device::new`] as an `Arc`, shared by the driver's backend (and, in threaded
/// mode, the firmware thread's core). Dropping the last `Arc` stops the firmware thread.
pub struct Device {
    pub(crate) core: Arc<Core>,
    pub(crate) worker: Option<Worker>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("mode", &self.core.config.mode)
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
        let regs = regs_of(&config);
        let model = Model::new(&config, regs.clock());
        let core = Arc::new(Core {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            regs: Mutex::new(regs),
            model: Mutex::new(model),
            dma: Arc::new(DmaSpace::of(config.dma)),
            faults: FaultInjector::new(&config.faults),
            sink: SinkSlot::default(),
            bad_bar: AtomicU64::new(0),
            peer: Mutex::new(None),
            has_peer: AtomicBool::new(false),
            link: Mutex::new(None),
            loopback: AtomicBool::new(false),
            capture: Mutex::new(None),
            capturing: AtomicBool::new(false),
            observer: Observer::default(),
            bus_master: BusMaster::new(),
            config,
        });
        // Memory leaves the DMA space only while no session of this model is in progress
        // (see the `dma` module doc). The space holds the core weakly: no cycle.
        let weak = Arc::downgrade(&core);
        core.dma
            .set_quiescer(Box::new(move |f| match weak.upgrade() {
                Some(core) => {
                    let _quiet = lock(&core.model);
                    f();
                }
                // The core is gone: no session can run any more.
                None => f(),
            }));
        let worker = (core.config.mode == Mode::Threaded).then(|| Worker::spawn(core.clone()));
        Arc::new(Device { core, worker })
    }

    /// The configuration the device was built with.
    pub fn config(&self) -> &Config {
        &self.core.config
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
    ///
    /// In threaded mode UAR writes are queued to the firmware thread, in order with command
    /// doorbells. Every write also lets the device do its own pending work (RNR retries,
    /// flushes, moderation timers), see [`Device::tick`].
    pub fn write32(&self, offset: usize, value: u32) {
        match bar::decode(offset, 4) {
            Some(Target::InitSeg(off)) => {
                let action = self.core.regs().write(off, value);
                match action {
                    RegWrite::Doorbell(vector) => self.dispatch(Job::Doorbell(vector)),
                    RegWrite::SoftwareReset => {
                        // Doorbells queued before the reset are served first, against the old
                        // state, as firmware finishes what it took before it resets.
                        self.sync();
                        self.core.software_reset(&self.core.config);
                    }
                    RegWrite::NicInterfaceDisabled => {
                        self.sync();
                        crate::exec::hca::nic_interface_disabled(&mut self.core.model());
                    }
                    RegWrite::None => {}
                }
                self.after_write(UarWrite::Other);
            }
            Some(Target::Uar { index, offset }) => self.dispatch(Job::Uar32(index, offset, value)),
            Some(Target::Hole) | None => {}
        }
    }

    /// A 64-bit BAR 0 write. In a UAR page: the CQ arm doorbell at +0x20 (high dword
    /// `sn << 28 | cmd << 24 | ci`, low dword cqn) arms the CQ; a write at the start of a
    /// BlueFlame register half (+0x800 + k × 0x100) is a send doorbell whose value is the
    /// first 8 bytes of the last WQE's control segment (`opmod_idx_opcode << 32 | qpn_ds`):
    /// the QP or SQ it names runs up to the send counter of its doorbell record. Elsewhere it
    /// acts as two 32-bit writes, high dword first.
    pub fn write64(&self, offset: usize, value: u64) {
        match bar::decode(offset, 8) {
            Some(Target::Uar { index, offset }) => self.dispatch(Job::Uar64(index, offset, value)),
            Some(Target::InitSeg(off)) => {
                self.write32(off, (value >> 32) as u32);
                self.write32(off + 4, value as u32);
            }
            Some(Target::Hole) | None => {}
        }
    }

    /// A BlueFlame copy: `data` (a whole WQE, each `u64` the big-endian value of 8 bytes,
    /// as [`Device::write64`] takes them) written at the start of a BlueFlame register half
    /// (`offset` = UAR page + 0x800 + k × 0x100). It rings the send doorbell like its first
    /// word alone would; when the WQE is the next one due, the device executes it from the
    /// copy (as if read from the ring). Words past the register half are ignored; anywhere
    /// else the write is dropped.
    pub fn write_block(&self, offset: usize, data: &[u64]) {
        if let Some(Target::Uar { index, offset }) = bar::decode(offset, 8) {
            if self.worker.is_none() && self.core.bus_master.enabled() {
                let w = self.core.uar_block(index, offset, data);
                self.after_write(w);
            } else {
                // No more than a BlueFlame register half is ever used: queue no more.
                let data = &data[..data.len().min(crate::uar::BF_HALF_MAX / 8)];
                self.dispatch(Job::Block(index, offset, data.to_vec()));
            }
        }
    }

    /// After an inline write: the device's own pending work, unless the write was a send
    /// doorbell (which already ran its queue).
    pub(crate) fn after_write(&self, w: UarWrite) {
        if w == UarWrite::Other {
            self.core.kick();
        }
    }

    /// Lets the device do the work it does on its own, as time passes on real hardware:
    /// retry sends waiting on receiver-not-ready (one retry each, against qpc.rnr_retry),
    /// complete receives posted to queues in ERR with flush errors, and fire completion
    /// events whose moderation period (cq_period) has passed. Covers the wired peer too.
    /// Any BAR write does the same; in threaded mode the firmware thread also does it every
    /// millisecond while such work is pending.
    pub fn tick(&self) {
        self.core.kick();
    }

    /// The core, for the wire.
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The memory the driver allocates for the device.
    pub fn dma(&self) -> &Arc<DmaSpace> {
        &self.core.dma
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
