//! Bringing an HCA up and down, in the order the PRM's start-up section, the Linux driver and
//! rdma-core's VFIO provider use, and the [`Hca`] handle that owns everything brought up.
//!
//! Up: wait for firmware → check the command interface → set the command queue address →
//! ENABLE_HCA → QUERY_ISSI / SET_ISSI → boot pages → QUERY_HCA_CAP (maximum and current) and
//! SET_HCA_CAP → init pages → INIT_HCA → regular pages → SET_DRIVER_VERSION → ALLOC_UAR → an
//! EQ for asynchronous events, armed → ALLOC_PD, ALLOC_TRANSPORT_DOMAIN,
//! QUERY_SPECIAL_CONTEXTS (the reserved lkey).
//!
//! Down, in reverse: DEALLOC_TRANSPORT_DOMAIN, DEALLOC_PD, DESTROY_EQ, DEALLOC_UAR,
//! TEARDOWN_HCA, reclaim every firmware page, DISABLE_HCA. A failed bring-up undoes what it
//! did the same way, so no firmware page is left behind where the device still answers.
//! Memory is freed only where the device confirmed it is done with it: pages it did not
//! return, an EQ it did not destroy, and the command queue unless DISABLE_HCA succeeded, go
//! to the backend's quarantine ([`crate::backend::DmaAlloc::quarantined`]). After a health
//! syndrome no command is sent (none would complete) and everything is quarantined.
//!
//! The [`Hca`] runs commands through `&self`: the command queue, pages, EQ and logs are behind
//! one lock, so `Hca<B>` is `Sync` when `B` is, and every resource borrows the HCA it came
//! from. The data path never takes that lock.

mod claim;
mod config;
mod down;
mod events;
mod query;
mod registers;
mod up;

pub(crate) use claim::Claim;
pub use config::{DeviceInfo, HcaConfig, DEFAULT_MAX_FIRMWARE_PAGES};
pub use query::Query;

use crate::backend::{Backend, DmaAlloc, Mmio, Quarantine, Regs};
use crate::cmd::{CmdQueue, EventSink, Executed, Stash};
use crate::eq::{Event, EventQueue};
use crate::error::{Error, Result};
use crate::pages::Pages;
use crate::recent::Recent;
use mlx5_prm::cmd::*;
use mlx5_prm::rt::{Command, MmioBytes};
use mlx5_prm::*;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Most page requests one [`Hca::poll_events`] serves.
pub const MAX_PAGE_REQUESTS: usize = 64;

/// Bytes of a UAR page in BAR0 (4 KiB, at the page's index).
const UAR_PAGE: usize = 4096;

/// An HCA brought up: owns the backend, the command queue, the firmware pages and every object
/// created during bring-up, and releases them on drop (or [`Hca::teardown`]). Resources made
/// from it borrow it, so it outlives them all.
pub struct Hca<B: Backend> {
    be: B,
    info: DeviceInfo,
    ctl: Mutex<Control>,
    /// What only one resource may hold at a time (the NIC receive root table).
    exclusive: claim::Exclusive,
    /// The variant byte (bits 7:0) of the next memory key: it changes with every key made,
    /// so that a key kept after its region went (by a peer holding an rkey, say) does not
    /// match a later region given the same mkey index.
    key_variant: std::sync::atomic::AtomicU8,
}

/// What commands need, behind the HCA's lock.
struct Control {
    cmdq: Option<CmdQueue>,
    pages: Pages,
    eq: Option<EventQueue>,
    /// What is up, for teardown in reverse.
    done: Done,
    events: Recent<Event>,
    /// Events read while waiting for command completions, not handled yet.
    pending: Stash,
}

/// Which steps completed.
#[derive(Debug, Default, Clone, Copy)]
struct Done {
    enabled: bool,
    initialized: bool,
    uar: bool,
    pd: bool,
    td: bool,
}

/// The initialization segment, to read.
fn seg<M: Mmio>(m: &M) -> InitialSeg<MmioBytes<Regs<'_, M>>> {
    // SAFETY: callers only read it.
    InitialSeg::new_unchecked(MmioBytes::new(unsafe { Regs::new(m) }, InitialSeg::SIZE))
}

/// Waits for the initializing bit to clear.
fn wait_ready<B: Backend>(be: &B, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        if !seg(be.mmio()).initializing() {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(Error::FirmwareNotReady {
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(Duration::from_micros(100).min(timeout));
    }
}

/// The error for a command asked for once the command interface is closed (after
/// teardown began): it was never sent.
fn closed(command: &'static str, opcode: u16) -> Error {
    Error::NotSent {
        command,
        opcode,
        why: "the command interface is closed",
    }
}

impl Control {
    fn cmdq(&mut self, name: &'static str, opcode: u16) -> Result<&mut CmdQueue> {
        self.cmdq.as_mut().ok_or_else(|| closed(name, opcode))
    }

    /// Runs `C` (completion by event once the EQ exists).
    ///
    /// # Safety
    ///
    /// As for [`CmdQueue::exec`].
    unsafe fn run<C: Command, B: Backend>(
        &mut self,
        be: &B,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>) -> Result<()>,
    ) -> Result<Vec<u8>> {
        let Control {
            cmdq, eq, pending, ..
        } = self;
        let cmdq = cmdq.as_mut().ok_or_else(|| closed(C::NAME, C::OPCODE))?;
        let sink = eq.as_mut().map(|eq| EventSink { eq, stash: pending });
        // SAFETY: the caller's promise; the queue is the one `bring_up` made for `be`.
        unsafe { cmdq.run_with::<C, B, _>(be, sink, op_mod, extra_in, extra_out, fill) }
    }

    /// Runs `C` and wraps its output in the typed view.
    ///
    /// # Safety
    ///
    /// As for [`CmdQueue::exec`].
    unsafe fn typed<C: Command, B: Backend>(
        &mut self,
        be: &B,
        op_mod: C::OpMod,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>) -> Result<()>,
    ) -> Result<C::Output<Vec<u8>>> {
        // SAFETY: the caller's promise.
        let out = unsafe { self.run::<C, B>(be, op_mod, 0, 0, fill) }?;
        Ok(C::output(out)?)
    }

    fn satisfy<B: Backend>(&mut self, be: &B, stage: QueryPagesOpMod) -> Result<i32> {
        let Control { cmdq, pages, .. } = self;
        let cmdq = cmdq
            .as_mut()
            .ok_or_else(|| closed(QueryPages::NAME, QueryPages::OPCODE))?;
        pages.satisfy(be, cmdq, stage)
    }

    fn apply_pages<B: Backend>(&mut self, be: &B, n: i32) -> Result<()> {
        let Control {
            cmdq,
            eq,
            pending,
            pages,
            ..
        } = self;
        let cmdq = cmdq
            .as_mut()
            .ok_or_else(|| closed(ManagePages::NAME, ManagePages::OPCODE))?;
        let sink = eq.as_mut().map(|eq| EventSink { eq, stash: pending });
        pages.apply(be, cmdq, sink, n)
    }
}

impl<B: Backend> Hca<B> {
    /// The variant byte for a new memory key: each key made gets the next one (wrapping), as
    /// Linux's mlx5 does, so a stale key is refused by the device rather than reaching the
    /// region that took its index.
    pub(crate) fn next_key_variant(&self) -> u8 {
        self.key_variant
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Brings the device up. On failure everything done so far is undone (every firmware page
    /// taken back where the device still answers) before the error is returned.
    pub fn bring_up(be: B, config: &HcaConfig) -> Result<Hca<B>> {
        wait_ready(&be, config.fw_ready_timeout)?;
        let s = seg(be.mmio());
        let fw_version = (s.fw_rev_major(), s.fw_rev_minor(), s.fw_rev_subminor());
        // SAFETY: the HCA owns `be` from here on and drives the device through this queue
        // alone; the queue, the EQ and the pages it serves are used with `be` only.
        let cmdq = unsafe { CmdQueue::new(&be, config.cmd_timeout, config.log_capacity) }?;
        let mut hca = Hca {
            be,
            info: DeviceInfo {
                fw_version,
                issi: 0,
                caps: Vec::new(),
                max_caps: Vec::new(),
                uar: 0,
                eqn: 0,
                pd: 0,
                transport_domain: 0,
                resd_lkey: 0,
            },
            ctl: Mutex::new(Control {
                cmdq: Some(cmdq),
                pages: Pages::new(config.max_firmware_pages),
                eq: None,
                done: Done::default(),
                events: Recent::new(config.log_capacity),
                pending: Stash::default(),
            }),
            exclusive: claim::Exclusive::default(),
            key_variant: std::sync::atomic::AtomicU8::new(0),
        };
        match hca.up(config) {
            Ok(()) => Ok(hca),
            Err(e) => {
                if let Err(e2) = hca.down() {
                    log::warn!("undoing a failed bring-up also failed: {e2}");
                }
                Err(e)
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Control> {
        // Control is consistent between commands; a panic elsewhere leaves nothing half-done
        // that the next command would trip on.
        self.ctl.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs command `C` with no trailing data and returns its typed output (over the output
    /// bytes). Once the async EQ exists, completion comes by event (other events are kept for
    /// [`Hca::poll_events`]). Queries need no `unsafe`: [`Hca::query`].
    ///
    /// # Safety
    ///
    /// The command, as `fill` leaves its input (opcode included), must keep the promises of
    /// [`CmdQueue::exec`]: every host address it gives the device is memory the caller keeps
    /// allocated and out of other use until the device is done with it (or quarantines); it
    /// destroys, changes or takes back nothing the HCA or one of its resources tracks (the
    /// EQ, firmware pages, UAR, PD, transport domain; the objects of CQs, QPs, regions,
    /// queues and counters); and it leaves the function enabled and initialised.
    pub unsafe fn run<C: Command>(
        &self,
        op_mod: C::OpMod,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Result<C::Output<Vec<u8>>> {
        // SAFETY: the caller's promise.
        unsafe {
            self.lock().typed::<C, B>(&self.be, op_mod, |i| {
                fill(i);
                Ok(())
            })
        }
    }

    /// Runs command `C` with `extra_in` bytes of trailing input (page lists) and `extra_out`
    /// bytes of trailing output; `fill` may fail (a setter's error), and then nothing is sent.
    ///
    /// # Safety
    ///
    /// As for [`Hca::run`].
    pub unsafe fn run_extra<C: Command>(
        &self,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>) -> Result<()>,
    ) -> Result<C::Output<Vec<u8>>> {
        // SAFETY: the caller's promise.
        let out = unsafe {
            self.lock()
                .run::<C, B>(&self.be, op_mod, extra_in, extra_out, fill)
        }?;
        Ok(C::output(out)?)
    }

    /// True when commands complete by event (the async EQ exists).
    pub fn event_mode(&self) -> bool {
        self.lock().eq.is_some()
    }

    /// Tears the device down. Returns what the backend holds in quarantine (memory the device
    /// may still write: never freed while the backend lives), or [`Error::Teardown`] with the
    /// first failure. (Dropping the handle does the same, logging failures instead.)
    pub fn teardown(mut self) -> Result<Quarantine> {
        self.down()?;
        Ok(self.be.dma().quarantined())
    }

    /// What bring-up learned.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.be
    }

    /// Claims the NIC receive root flow table (for a set of Ethernet queues), or says who
    /// holds it.
    pub(crate) fn claim_rx_root(&self) -> Result<Claim<'_>> {
        self.exclusive.rx_root()
    }

    /// The last [`HcaConfig::log_capacity`] commands executed, oldest first, with their
    /// durations (see [`Hca::commands_run`] for the count of all).
    pub fn history(&self) -> Vec<Executed> {
        self.lock()
            .cmdq
            .as_ref()
            .map_or_else(Vec::new, |c| c.history().iter().cloned().collect())
    }

    /// Commands executed since bring-up started.
    pub fn commands_run(&self) -> u64 {
        self.lock().cmdq.as_ref().map_or(0, |c| c.history().total())
    }

    /// The last [`HcaConfig::log_capacity`] events [`Hca::poll_events`] returned, oldest
    /// first, and how many it returned in all.
    pub fn recent_events(&self) -> (Vec<Event>, u64) {
        let ctl = self.lock();
        (ctl.events.iter().copied().collect(), ctl.events.total())
    }

    /// Firmware pages the device holds.
    pub fn pages_held(&self) -> usize {
        self.lock().pages.held()
    }

    /// DMA memory the backend holds in quarantine: buffers the device may still write (a
    /// command or destroy that never completed or failed), never reused or freed while the
    /// backend lives.
    pub fn quarantined(&self) -> Quarantine {
        self.be.dma().quarantined()
    }

    /// The health syndrome the device reports (0 when healthy).
    pub fn health_syndrome(&self) -> u8 {
        seg(self.be.mmio()).health_syndrome_raw()
    }

    /// The device's health: an error when firmware reports a health syndrome.
    pub fn check_health(&self) -> Result<()> {
        match self.health_syndrome() {
            0 => Ok(()),
            syndrome => Err(Error::Health { syndrome }),
        }
    }
}

impl<B: Backend> Drop for Hca<B> {
    fn drop(&mut self) {
        if let Err(e) = self.down() {
            log::warn!("tearing the HCA down on drop: {e}");
        }
    }
}
