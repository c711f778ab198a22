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
//! did the same way, so no firmware page is left behind.

use crate::backend::{Backend, Mmio, Regs};
use crate::cmd::{CmdQueue, EventSink, Executed};
use crate::eq::{Event, EventQueue};
use crate::error::{Error, Result};
use crate::pages::Pages;
use mlx5_prm::cmd::*;
use mlx5_prm::rt::{Command, MmioBytes};
use mlx5_prm::*;
use std::time::{Duration, Instant};

/// Bring-up settings.
#[derive(Debug, Clone)]
pub struct HcaConfig {
    /// How long to wait for the initializing bit to clear.
    pub fw_ready_timeout: Duration,
    /// Deadline of each command.
    pub cmd_timeout: Duration,
    /// log2 of the async EQ's entries.
    pub eq_log_size: u8,
    /// The driver version string given to firmware.
    pub driver_version: String,
}

impl Default for HcaConfig {
    fn default() -> Self {
        HcaConfig {
            fw_ready_timeout: Duration::from_secs(10),
            cmd_timeout: Duration::from_secs(60),
            eq_log_size: 7,
            driver_version: format!("mlx5-prm,{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// What bring-up learned about the device.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Firmware version (major, minor, subminor).
    pub fw_version: (u16, u16, u16),
    /// The ISSI in use.
    pub issi: u16,
    /// The current general capabilities page (`cmd_hca_cap`), as bytes.
    pub caps: Vec<u8>,
    /// The maximum general capabilities page.
    pub max_caps: Vec<u8>,
    /// The UAR page index.
    pub uar: u32,
    /// The async EQ number.
    pub eqn: u8,
    /// The protection domain.
    pub pd: u32,
    /// The transport domain.
    pub transport_domain: u32,
    /// The reserved lkey (memory accessed by physical address).
    pub resd_lkey: u32,
}

impl DeviceInfo {
    /// The current general capabilities as their generated view.
    pub fn caps(&self) -> CmdHcaCap<&[u8]> {
        CmdHcaCap::new_unchecked(&self.caps[..])
    }
}

/// An HCA brought up: owns the backend, the command queue, the firmware pages and every object
/// created during bring-up, and releases them all on drop.
pub struct Hca<B: Backend> {
    be: B,
    cmdq: Option<CmdQueue>,
    pages: Pages,
    info: DeviceInfo,
    eq: Option<EventQueue>,
    /// What is up, for teardown in reverse.
    done: Done,
    events: Vec<Event>,
    /// Events read while waiting for command completions, not handled yet.
    pending: Vec<Event>,
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

fn seg<M: Mmio>(m: &M) -> InitialSeg<MmioBytes<Regs<'_, M>>> {
    InitialSeg::new_unchecked(MmioBytes::new(Regs(m), InitialSeg::SIZE))
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

impl<B: Backend> Hca<B> {
    /// Brings the device up. On failure everything done so far is undone (every firmware page
    /// taken back where the device still answers) before the error is returned.
    pub fn bring_up(be: B, config: &HcaConfig) -> Result<Hca<B>> {
        wait_ready(&be, config.fw_ready_timeout)?;
        let s = seg(be.mmio());
        let fw_version = (s.fw_rev_major(), s.fw_rev_minor(), s.fw_rev_subminor());
        let cmdq = CmdQueue::new(&be, config.cmd_timeout)?;
        let mut hca = Hca {
            be,
            cmdq: Some(cmdq),
            pages: Pages::default(),
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
            eq: None,
            done: Done::default(),
            events: Vec::new(),
            pending: Vec::new(),
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

    /// Runs command `C` with no trailing data; returns its output bytes. Once the async EQ
    /// exists, completion comes by event (other events are kept for [`Hca::poll_events`]).
    pub fn run<C: Command>(
        &mut self,
        op_mod: C::OpMod,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Result<Vec<u8>> {
        let be = &self.be;
        let cmdq = self
            .cmdq
            .as_mut()
            .expect("command queue exists until teardown");
        let sink = self.eq.as_mut().map(|eq| EventSink {
            eq,
            stash: &mut self.pending,
        });
        cmdq.run_with::<C, B, _>(be, sink, op_mod, 0, 0, fill)
    }

    /// Runs command `C` with `extra_in` bytes of trailing input (page lists) and `extra_out`
    /// bytes of trailing output.
    pub fn run_extra<C: Command>(
        &mut self,
        op_mod: C::OpMod,
        extra_in: usize,
        extra_out: usize,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Result<Vec<u8>> {
        let be = &self.be;
        let cmdq = self
            .cmdq
            .as_mut()
            .expect("command queue exists until teardown");
        let sink = self.eq.as_mut().map(|eq| EventSink {
            eq,
            stash: &mut self.pending,
        });
        cmdq.run_with::<C, B, _>(be, sink, op_mod, extra_in, extra_out, fill)
    }

    /// True when commands complete by event (the async EQ exists).
    pub fn event_mode(&self) -> bool {
        self.eq.is_some()
    }

    fn up(&mut self, config: &HcaConfig) -> Result<()> {
        self.run::<EnableHca>(0, |_| {})?;
        self.done.enabled = true;

        let out = self.run::<QueryIssi>(0, |_| {})?;
        let issi_out = QueryIssiOut::new_checked(&out[..])?;
        // ISSI 1 (the current interface) when offered; bit 1 of the supported mask.
        let issi = if issi_out.supported_issi_dw0() & 0x2 != 0 {
            1
        } else {
            0
        };
        if issi != 0 {
            self.run::<SetIssi>(0, |i| i.set_current_issi(issi))?;
        }
        self.info.issi = issi;

        let (be, cmdq) = (&self.be, self.cmdq.as_mut().expect("command queue"));
        self.pages.satisfy(be, cmdq, QueryPagesOpMod::Boot)?;

        let max = self.query_caps(QueryHcaCapOpMod::GeneralMax)?;
        let cur = self.query_caps(QueryHcaCapOpMod::GeneralCur)?;
        // Adopt the maximum where the driver needs it: the largest CQE compression and
        // command-interface checksum are left as they are; the driver turns checksums off
        // (it does not compute mailbox signatures).
        let mut set = cur.clone();
        {
            let mut caps = CmdHcaCap::new_unchecked(&mut set[..]);
            caps.set_cmdif_checksum_raw(0);
            let max = CmdHcaCap::new_unchecked(&max[..]);
            caps.set_log_max_qp(max.log_max_qp());
        }
        self.run::<SetHcaCap>(SetHcaCapOpMod::General, |i| {
            let mut u = i.capability_mut();
            u.cmd_hca_cap_mut().storage_mut().copy_from_slice(&set);
        })?;
        self.info.max_caps = max;
        self.info.caps = self.query_caps(QueryHcaCapOpMod::GeneralCur)?;

        let (be, cmdq) = (&self.be, self.cmdq.as_mut().expect("command queue"));
        self.pages.satisfy(be, cmdq, QueryPagesOpMod::Init)?;
        self.run::<InitHca>(0, |_| {})?;
        self.done.initialized = true;
        let (be, cmdq) = (&self.be, self.cmdq.as_mut().expect("command queue"));
        self.pages.satisfy(be, cmdq, QueryPagesOpMod::Regular)?;

        let version = config.driver_version.clone();
        self.run::<SetDriverVersion>(0, |i| {
            let mut bytes = [0u8; 64];
            let v = version.as_bytes();
            bytes[..v.len().min(63)].copy_from_slice(&v[..v.len().min(63)]);
            i.set_driver_version(&bytes);
        })?;

        let out = self.run::<AllocUar>(0, |_| {})?;
        self.info.uar = AllocUarOut::new_checked(&out[..])?.uar();
        self.done.uar = true;

        let (be, cmdq) = (&self.be, self.cmdq.as_mut().expect("command queue"));
        let eq = EventQueue::create(
            be,
            cmdq,
            self.info.uar,
            config.eq_log_size,
            &[
                EventType::PageRequest,
                EventType::PortChange,
                EventType::Cmd,
            ],
        )?;
        self.info.eqn = eq.eqn();
        self.eq = Some(eq);

        let out = self.run::<AllocPd>(0, |_| {})?;
        self.info.pd = AllocPdOut::new_checked(&out[..])?.pd();
        self.done.pd = true;
        let out = self.run::<AllocTransportDomain>(0, |_| {})?;
        self.info.transport_domain =
            AllocTransportDomainOut::new_checked(&out[..])?.transport_domain();
        self.done.td = true;
        let out = self.run::<QuerySpecialContexts>(0, |_| {})?;
        self.info.resd_lkey = QuerySpecialContextsOut::new_checked(&out[..])?.resd_lkey();
        Ok(())
    }

    fn query_caps(&mut self, op_mod: QueryHcaCapOpMod) -> Result<Vec<u8>> {
        let out = self.run::<QueryHcaCap>(op_mod, |_| {})?;
        let view = QueryHcaCapOut::new_checked(&out[..])?;
        let union = view.capability();
        let caps = union.cmd_hca_cap();
        Ok(caps.storage().to_vec())
    }

    /// Undoes every completed step, in reverse. Keeps going past failures (reporting the
    /// first), so that as much as possible is released.
    fn down(&mut self) -> Result<()> {
        let mut first: Option<Error> = None;
        let mut note = |r: Result<Vec<u8>>| {
            if let Err(e) = r {
                log::warn!("teardown: {e}");
                first.get_or_insert(e);
            }
        };
        if std::mem::take(&mut self.done.td) {
            let td = self.info.transport_domain;
            note(self.run::<DeallocTransportDomain>(0, |i| i.set_transport_domain(td)));
        }
        if std::mem::take(&mut self.done.pd) {
            let pd = self.info.pd;
            note(self.run::<DeallocPd>(0, |i| i.set_pd(pd)));
        }
        let mut stuck_eq = None;
        if let Some(eq) = self.eq.take() {
            let (be, cmdq) = (&self.be, self.cmdq.as_mut().expect("command queue"));
            if let Err((e, eq)) = eq.destroy(be, cmdq) {
                note(Err(e));
                stuck_eq = Some(eq);
            }
        }
        if std::mem::take(&mut self.done.uar) {
            let uar = self.info.uar;
            note(self.run::<DeallocUar>(0, |i| i.set_uar(uar)));
        }
        if std::mem::take(&mut self.done.initialized) {
            note(self.run::<TeardownHca>(0, |i| i.set_profile(TeardownHcaProfile::GracefulClose)));
        }
        if self.pages.held() > 0 {
            let (be, cmdq) = (&self.be, self.cmdq.as_mut().expect("command queue"));
            if let Err(e) = self.pages.reclaim_all(be, cmdq) {
                note(Err(e));
            }
        }
        if std::mem::take(&mut self.done.enabled) {
            note(self.run::<DisableHca>(0, |_| {}));
        }
        // After DISABLE_HCA (or if it never got enabled) the device no longer touches host
        // memory: what it still held is freed on the host side only.
        let leftover = self.pages.forget_all(&self.be);
        if leftover > 0 {
            log::warn!("teardown: the device kept {leftover} firmware pages");
        }
        if let Some(eq) = stuck_eq {
            eq.forget(&self.be);
        }
        if let Some(cmdq) = self.cmdq.take() {
            cmdq.release(&self.be);
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Tears the device down, reporting the first failure. (Dropping the handle does the
    /// same, logging failures instead.)
    pub fn teardown(mut self) -> Result<()> {
        self.down()
    }

    /// What bring-up learned.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.be
    }

    /// Every command executed, in order, with its duration.
    pub fn history(&self) -> &[Executed] {
        self.cmdq.as_ref().map_or(&[], |c| c.history())
    }

    /// Firmware pages the device holds.
    pub fn pages_held(&self) -> usize {
        self.pages.held()
    }

    /// Reads new events and serves page requests. Returns the events seen (all of them,
    /// including the page requests already served, and events met while waiting for command
    /// completions).
    pub fn poll_events(&mut self) -> Result<Vec<Event>> {
        let mut events = std::mem::take(&mut self.pending);
        match self.eq.as_mut() {
            Some(eq) => events.extend(eq.poll(&self.be)),
            None => return Ok(events),
        }
        let mut served = 0;
        while served < events.len() {
            if let Event::PageRequest { num_pages, .. } = events[served] {
                self.apply_pages(num_pages)?;
                // Commands sent meanwhile may have met more events.
                events.append(&mut self.pending);
            }
            served += 1;
        }
        events.retain(|e| !matches!(e, Event::CommandCompletion { .. }));
        self.events.extend(events.iter().copied());
        Ok(events)
    }

    fn apply_pages(&mut self, n: i32) -> Result<()> {
        let be = &self.be;
        let cmdq = self.cmdq.as_mut().expect("command queue");
        let sink = self.eq.as_mut().map(|eq| EventSink {
            eq,
            stash: &mut self.pending,
        });
        self.pages.apply_with(be, cmdq, sink, n)
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
