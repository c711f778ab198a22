//! What a test or a host looks at and pulls on besides the BAR: the device's counts, its
//! command record, and the out-of-band controls that play firmware and link (page requests,
//! port changes, health failures, fault injection).

use super::Device;
use crate::datapath::roce::RoceStats;
use crate::events::{self, Posted};
use crate::faults::FaultInjector;
use crate::inventory::Objects;
use crate::observe::{CommandObserver, UnimplementedCommands};
use crate::record::CommandRecord;
use crate::regs::HealthError;

impl Device {
    /// Queues and CQs listed as having work the device does on its own (RNR waits, queues in
    /// ERR, moderation timers): what a BAR write or [`Device::tick`] visits, however many
    /// objects exist. An object whose work ended leaves the list at the next visit.
    pub fn pending_work(&self) -> usize {
        self.core.model().pending.len()
    }

    /// Frames the SQs transmitted.
    pub fn tx_frames(&self) -> u64 {
        self.core.model().stats.tx_frames
    }

    /// Frames received and delivered to an RQ.
    pub fn rx_frames(&self) -> u64 {
        self.core.model().stats.rx_frames
    }

    /// WQEs the device executed from a BlueFlame copy instead of reading them from the ring.
    pub fn blueflame_wqes(&self) -> u64 {
        self.core.model().stats.blueflame_wqes
    }

    /// Frames received and dropped.
    pub fn rx_dropped(&self) -> u64 {
        self.core.model().stats.rx_dropped
    }

    /// Frames sent while the link was down, which the port discarded (they count among the
    /// sent frames too, as the SQ completed them).
    pub fn tx_discarded(&self) -> u64 {
        self.core.model().stats.tx_discarded
    }

    /// What the RoCE transport counted of the device as a whole: packets taken and sent,
    /// and those dropped before reaching a QP (bad ICRC, malformed, bad opcode, unknown QPN).
    pub fn roce_stats(&self) -> RoceStats {
        self.core.model().roce_stats
    }

    /// Send WQEs of RC QP `qpn` on RoCE that the device has read and not yet completed (0
    /// for any other QP): at most the send queue's size, whatever the guest's producer
    /// counter says.
    pub fn rc_in_flight(&self, qpn: u32) -> usize {
        crate::datapath::roce::req::in_flight(&self.core.model(), qpn)
    }

    /// Send doorbells (and BlueFlame copies) that named no QP or SQ of the UAR page they were
    /// written to, and were ignored.
    pub fn ignored_doorbells(&self) -> u64 {
        self.core.model().stats.doorbells_ignored
    }

    /// CQEs the device had to drop: CQ gone, in error (overflow) or unreachable.
    pub fn dropped_cqes(&self) -> u64 {
        self.core.model().stats.cqes_dropped
    }

    /// Firmware pages given by MANAGE_PAGES and not yet taken back.
    pub fn pages_held(&self) -> usize {
        self.core.model().pages.held()
    }

    /// Fault injection, changeable at run time.
    pub fn faults(&self) -> &FaultInjector {
        &self.core.faults
    }

    /// The commands executed so far, in order: all of them, or the most recent
    /// [`COMMAND_LOG`](crate::COMMAND_LOG) when there were more (see
    /// [`Device::commands_executed`]).
    pub fn commands(&self) -> Vec<CommandRecord> {
        self.core.model().records.to_vec()
    }

    /// How many commands were executed in all (the log keeps only the most recent).
    pub fn commands_executed(&self) -> u64 {
        self.core.model().records.total()
    }

    /// Raises a page-request event, as firmware does when it needs pages (`num_pages` > 0) or
    /// has pages to return (< 0). The demand also shows in QUERY_PAGES (regular). Without an
    /// EQ subscribed to page requests only the demand changes.
    pub fn request_pages(&self, num_pages: i32) {
        self.host_event(move |core| {
            events::page_request(&mut core.model(), &core.dma, num_pages);
        });
    }

    /// The link of `port` (1 for the model's only port) goes up or down: the port's state
    /// changes and a port-change event (sub-type active or down) is raised.
    pub fn raise_port_change(&self, port: u8, up: bool) {
        self.host_event(move |core| {
            let mut m = core.model();
            if port == 1 {
                m.port.link_up = up;
            }
            events::port_change(&mut m, &core.dma, port, up);
        });
    }

    /// Reports a fatal firmware error: the health buffer and the health_syndrome byte
    /// (0x1010) show `syndrome` with reset-required set (as [`HealthError::fatal`]), the
    /// health counter stops and no command completes any more. 0 heals.
    pub fn set_health_syndrome(&self, syndrome: u8) {
        let error = (syndrome != 0).then(|| HealthError::fatal(syndrome));
        self.core.regs().set_health(error);
    }

    /// Reports a firmware error with every field of the health buffer chosen; the health
    /// counter stops and no command completes any more, until [`Device::clear_health_error`]
    /// or a reset. Linux treats a syndrome with `reset_required` as fatal (and recovers by
    /// asking firmware to reset itself, which the model does), one without as a report.
    pub fn inject_health_error(&self, error: HealthError) {
        self.core.regs().set_health(Some(error));
    }

    /// The device is healthy again: the health buffer is clean and the counter runs on.
    pub fn clear_health_error(&self) {
        self.core.regs().set_health(None);
    }

    /// Firmware stops without a word: the health counter freezes with the health buffer
    /// clean, and no command completes any more (Linux's "reached miss count" path).
    pub fn stop_health_counter(&self) {
        self.core.regs().stop_heartbeat();
    }

    /// Firmware lets go of all the function's pages at once and says so with a page-request
    /// event carrying release_all (when the current capabilities have release_all_pages, as
    /// Linux sets them): the driver frees the pages without MANAGE_PAGES. Returns the number
    /// of pages released, or `None` (nothing changes) without the capability.
    /// `None` too while bus mastering is off (the event could not be written).
    pub fn release_all_pages(&self) -> Option<usize> {
        if !self.core.bus_master.enabled() {
            return None;
        }
        let mut m = self.core.model();
        if !m.gen().release_all_pages() {
            return None;
        }
        let n = m.pages.release_all();
        events::post_page_request(&mut m, &self.core.dma, 0, true);
        Some(n)
    }

    /// Sets (or with `None` removes) the function that sees every command the device
    /// serves, with its whole input and output ([`CommandTrace`](crate::CommandTrace)).
    pub fn set_command_observer(&self, observer: Option<CommandObserver>) {
        self.core.observer.set(observer);
    }

    /// The requests the model answered with "not implemented": unknown opcodes (BAD_OP),
    /// capability types and registers it does not have (BAD_PARAM), with their counts.
    pub fn unimplemented_commands(&self) -> UnimplementedCommands {
        self.core.model().unimplemented.report()
    }

    /// Waits until the firmware thread has served every doorbell and UAR write so far
    /// (immediate in inline mode).
    pub fn sync(&self) {
        if let Some(worker) = &self.worker {
            worker.sync();
        }
    }

    /// A completion arrived on CQ `cqn`: if the CQ is armed (by its UAR doorbell), a
    /// completion EQE goes to its EQ and the CQ disarms. Returns true when an EQE was written.
    /// False while bus mastering is off.
    pub fn raise_completion(&self, cqn: u32) -> bool {
        if !self.core.bus_master.enabled() {
            return false;
        }
        let mut m = self.core.model();
        events::completion(&mut m, &self.core.dma, cqn) == Posted::Written
    }

    /// An external pulse arrives at PPS pin `pin` (numbered from 0): if MTPPS made the pin an
    /// enabled input and MTPPSE turned its events on (repetitive, or once till armed and
    /// armed), a PPS event with the pin and the time now (internal timer ticks, or in
    /// real-time mode the UTC clock's seconds and nanoseconds) goes to the EQ subscribed to
    /// PPS events. Returns true when an EQE was written. False while bus mastering is off,
    /// for a pin the model lacks, and without the clock unit (a profile without pps).
    pub fn pps_pulse(&self, pin: u8) -> bool {
        if !self.core.bus_master.enabled() {
            return false;
        }
        let mut m = self.core.model();
        let mut side = crate::datapath::Side::new(&mut m, &self.core.dma);
        crate::datapath::pps::input_pulse(&mut side, pin) == Posted::Written
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
        self.core.model().interrupts.count(vector)
    }

    /// Device DMA accesses that hit unmapped memory: command entries, mailboxes or rings at
    /// IOVAs the driver never mapped or already freed.
    pub fn dma_faults(&self) -> u64 {
        self.core.model().dma_faults
    }

    /// The last 64-bit CQ doorbell written to UAR page `uar` (in threaded mode, once served:
    /// see [`Device::sync`]).
    pub fn last_cq_doorbell(&self, uar: u32) -> Option<u64> {
        self.core
            .model()
            .uar_state
            .get(uar)
            .and_then(|s| s.cq_doorbell)
    }

    /// The last send doorbell (or first word of a BlueFlame copy) written to UAR page `uar`.
    pub fn last_send_doorbell(&self, uar: u32) -> Option<u64> {
        self.core
            .model()
            .uar_state
            .get(uar)
            .and_then(|s| s.bf_doorbell)
    }

    /// How many objects of each kind the device holds.
    pub fn objects(&self) -> Objects {
        Objects::of(&self.core.model())
    }

    /// Bytes of [`STORAGE_BUDGET`](crate::STORAGE_BUDGET) the objects hold: their fixed sizes
    /// and what they keep of the driver's choosing (0 once every object is gone).
    pub fn storage_used(&self) -> u64 {
        self.core.model().storage.used()
    }

    /// The string SET_DRIVER_VERSION gave, up to its first NUL.
    pub fn driver_version(&self) -> Option<String> {
        let m = self.core.model();
        let raw = m.driver_version?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        Some(String::from_utf8_lossy(&raw[..end]).into_owned())
    }
}
