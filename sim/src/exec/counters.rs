//! Counters a driver reads with commands: queue counter sets (ALLOC_Q_COUNTER,
//! DEALLOC_Q_COUNTER, QUERY_Q_COUNTER), the vport's traffic counters (QUERY_VPORT_COUNTER)
//! and the vNIC's diagnostic counters (QUERY_VNIC_ENV).
//!
//! A received frame that no RQ takes is counted in exactly one place, the one Linux shows
//! for the reason (`datapath/eth/rx.rs`): out_of_buffer of the RQ's counter set when the RQ
//! had no WQE, nic_receive_steering_discard of the vNIC when steering found no TIR. The
//! port's PPCNT discards (if_in_discards, ethtool's `rx_discards_phy`) count frames the port
//! itself drops for want of buffer space, which the model's port never does.
//!
//! A queue counter set counts events of the receive queues that name it in counter_set_id;
//! the model counts the one event its data path has, a frame dropped because the RQ had no
//! posted WQE (out_of_buffer, Linux's `rx_out_of_buffer`). The other counts of the set stay
//! zero because the events they count (RDMA transport errors) are not modelled on RQs.
//! Counter set 0 is never allocated and means "no set": Linux leaves it in an RQ when its
//! allocation failed, so RQs may name it and nothing is counted.

use super::{out, Ctx, Req};
use crate::budget::Charged;
use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{
    AllocQCounterOut, DeallocQCounterIn, QueryQCounterIn, QueryQCounterOut, QueryVnicEnvIn,
    QueryVnicEnvOut, QueryVportCounterIn, QueryVportCounterOut, TrafficCounter,
};
use std::time::{Duration, Instant};

/// One queue counter set. Counts saturate at their 32-bit maximum, as the PRM's do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QCounter {
    pub out_of_buffer: u32,
    /// The RC transport's events (RoCE), each named as its QUERY_Q_COUNTER field.
    pub rc: RcCounts,
}

/// What the RoCE transport counts per queue counter set: the responder's sequence
/// anomalies, the requester's NAKs, timeouts and the errors retries ran out on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RcCounts {
    pub out_of_sequence: u32,
    pub duplicate_request: u32,
    pub rnr_nak_retry_err: u32,
    pub packet_seq_err: u32,
    pub implied_nak_seq_err: u32,
    pub local_ack_timeout_err: u32,
    pub req_rnr_retries_exceeded: u32,
    pub req_transport_retries_exceeded: u32,
    pub req_remote_invalid_request: u32,
    pub resp_remote_invalid_request: u32,
    pub req_remote_access_errors: u32,
    pub resp_remote_access_errors: u32,
    pub rx_write_requests: u32,
    pub rx_read_requests: u32,
    pub rx_atomic_requests: u32,
}

/// Packets and bytes of one kind of traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Frames.
    pub packets: u64,
    /// Bytes of those frames, without FCS.
    pub octets: u64,
}

impl Traffic {
    fn add(&mut self, bytes: usize) {
        self.packets = self.packets.wrapping_add(1);
        self.octets = self.octets.wrapping_add(bytes as u64);
    }
}

/// The vport's traffic counters by direction and destination-address kind: what
/// QUERY_VPORT_COUNTER reports. A received frame counts when the port passes it to the vport,
/// before NIC receive steering, so frames later dropped (no steering match, no receive WQE)
/// count too (Linux says as much of the vport multicast counter, `mlx5e_get_stats`); a sent
/// frame once its WQE completed without error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VportCounters {
    /// Received unicast, multicast and broadcast frames.
    pub rx: [Traffic; 3],
    /// Sent unicast, multicast and broadcast frames.
    pub tx: [Traffic; 3],
    /// RoCE packets received and sent: the RDMA traffic QUERY_VPORT_COUNTER reports apart
    /// from the Ethernet kinds (received_ib_unicast and transmitted_ib_unicast, Linux's
    /// rx/tx_vport_rdma_unicast).
    pub rdma_rx: Traffic,
    pub rdma_tx: Traffic,
}

/// Index into [`VportCounters`]' arrays for a frame: by its destination MAC address.
fn kind(frame: &[u8]) -> usize {
    match frame.get(..6) {
        Some([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) => 2,
        Some([first, ..]) if first & 1 == 1 => 1,
        _ => 0,
    }
}

impl VportCounters {
    /// Counts a frame the port received.
    pub(crate) fn received(&mut self, frame: &[u8]) {
        self.rx[kind(frame)].add(frame.len());
    }

    /// Counts a frame sent.
    pub(crate) fn sent(&mut self, frame: &[u8]) {
        self.tx[kind(frame)].add(frame.len());
    }

    /// Counts a RoCE packet the port received for this function.
    pub(crate) fn rdma_received(&mut self, frame: &[u8]) {
        self.rdma_rx.add(frame.len());
    }

    /// Counts a RoCE packet sent.
    pub(crate) fn rdma_sent(&mut self, frame: &[u8]) {
        self.rdma_tx.add(frame.len());
    }
}

/// Shortest frame on the wire without its FCS: shorter ones are padded.
const MIN_WIRE_FRAME: usize = 60;
/// The frame check sequence every frame on the wire ends with.
const FCS: usize = 4;

/// Wire bytes of a frame: padded to the minimum, with its FCS.
fn wire_len(frame: &[u8]) -> usize {
    frame.len().max(MIN_WIRE_FRAME) + FCS
}

/// Upper bounds (wire bytes, FCS included) of the RFC 2819 length buckets: 64, 65..=127, …,
/// 8192..=10239 (ethtool's rx_64_bytes_phy … rx_8192_to_10239_bytes_phy). Longer frames
/// count in no bucket.
const LENGTH_BUCKETS: [usize; 10] = [64, 127, 255, 511, 1023, 1518, 2047, 4095, 8191, 10239];

/// What the port carried: frames by direction and kind, in wire bytes; received frames by
/// length; RoCE packets it dropped for their ICRC (PPCNT's extended Ethernet group,
/// rx_icrc_encapsulated); and how often the link went down.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub traffic: VportCounters,
    pub icrc_errors: u64,
    /// Frames the port discarded on their way out because the link was down (RFC 2863
    /// if_out_discards).
    pub tx_discards: u64,
    /// Received frames per [`LENGTH_BUCKETS`] bucket (RFC 2819).
    pub rx_lengths: [u64; 10],
    /// Times the operational state went from up to down (physical layer group).
    pub link_down_events: u64,
}

/// The PPCNT groups, each cleared on its own (the index of a group's counts at its last
/// clear): IEEE 802.3, RFC 2863, extended Ethernet, RFC 2819, RFC 3635, per priority,
/// physical layer, physical layer statistical.
pub(crate) const GROUPS: usize = 8;

/// The port's counters for PPCNT: the running counts, the time the link has been up, and for
/// each group the counts, the time and the up time at its last clear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortCounters {
    now: Counts,
    cleared: [Counts; GROUPS],
    /// When each group was last cleared (or the port created).
    cleared_at: [Instant; GROUPS],
    /// Time the link was up before it last came up, and since when it is up now.
    up_before: Duration,
    up_since: Option<Instant>,
    /// [`Self::up_time`] at each group's last clear.
    up_at_clear: [Duration; GROUPS],
}

impl Default for PortCounters {
    /// Counters of a port whose link is up from now.
    fn default() -> Self {
        let now = Instant::now();
        PortCounters {
            now: Counts::default(),
            cleared: [Counts::default(); GROUPS],
            cleared_at: [now; GROUPS],
            up_before: Duration::ZERO,
            up_since: Some(now),
            up_at_clear: [Duration::ZERO; GROUPS],
        }
    }
}

fn minus(a: Traffic, b: Traffic) -> Traffic {
    Traffic {
        packets: a.packets.wrapping_sub(b.packets),
        octets: a.octets.wrapping_sub(b.octets),
    }
}

/// What one group reads: the counts since its clear, the time since then and the time the
/// link was up in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Since {
    pub counts: Counts,
    pub elapsed: Duration,
    pub up: Duration,
}

impl PortCounters {
    /// A frame that arrived on the port while it was up.
    pub(crate) fn received(&mut self, frame: &[u8]) {
        let len = wire_len(frame);
        self.now.traffic.rx[kind(frame)].add(len);
        if let Some(b) = LENGTH_BUCKETS.iter().position(|&max| len <= max) {
            self.now.rx_lengths[b] = self.now.rx_lengths[b].wrapping_add(1);
        }
    }

    /// A frame that left through the port.
    pub(crate) fn sent(&mut self, frame: &[u8]) {
        self.now.traffic.tx[kind(frame)].add(wire_len(frame));
    }

    /// A frame discarded on its way out: the link was down.
    pub(crate) fn discarded(&mut self) {
        self.now.tx_discards = self.now.tx_discards.wrapping_add(1);
    }

    /// A RoCE packet dropped because its ICRC did not match.
    pub(crate) fn icrc_error(&mut self) {
        self.now.icrc_errors = self.now.icrc_errors.wrapping_add(1);
    }

    /// The operational state changed to `up` (a down counts as a link down event).
    pub(crate) fn link_changed(&mut self, up: bool) {
        let now = Instant::now();
        match (self.up_since, up) {
            (Some(since), false) => {
                self.up_before += now.saturating_duration_since(since);
                self.up_since = None;
                self.now.link_down_events = self.now.link_down_events.wrapping_add(1);
            }
            (None, true) => self.up_since = Some(now),
            _ => {}
        }
    }

    /// Total time the link has been up.
    fn up_time(&self, now: Instant) -> Duration {
        self.up_before
            + self
                .up_since
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }

    /// What group `slot` reads now.
    pub(crate) fn since(&self, slot: usize) -> Since {
        let slot = slot.min(GROUPS - 1);
        let base = self.cleared[slot];
        let mut c = self.now;
        for k in 0..3 {
            c.traffic.rx[k] = minus(c.traffic.rx[k], base.traffic.rx[k]);
            c.traffic.tx[k] = minus(c.traffic.tx[k], base.traffic.tx[k]);
        }
        c.icrc_errors = c.icrc_errors.wrapping_sub(base.icrc_errors);
        c.tx_discards = c.tx_discards.wrapping_sub(base.tx_discards);
        for (n, b) in c.rx_lengths.iter_mut().zip(base.rx_lengths) {
            *n = n.wrapping_sub(b);
        }
        c.link_down_events = c.link_down_events.wrapping_sub(base.link_down_events);
        let now = Instant::now();
        Since {
            counts: c,
            elapsed: now.saturating_duration_since(self.cleared_at[slot]),
            up: self.up_time(now).saturating_sub(self.up_at_clear[slot]),
        }
    }

    /// Clears group `slot`.
    pub(crate) fn clear(&mut self, slot: usize) {
        let slot = slot.min(GROUPS - 1);
        let now = Instant::now();
        self.cleared[slot] = self.now;
        self.cleared_at[slot] = now;
        self.up_at_clear[slot] = self.up_time(now);
    }
}

/// A counter set is of fixed size.
impl Charged for QCounter {}

/// The most queue counter sets (counter_set_id is 8 bits; 0 means none): the general
/// capability max_qp_cnt.
pub(crate) const MAX_Q_COUNTERS: u16 = 255;

/// ALLOC_Q_COUNTER: a set with all counts zero.
pub(super) fn alloc_q(cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let id = cx.m.qcounters.insert_charged(
        QCounter::default(),
        MAX_Q_COUNTERS.into(),
        &mut cx.m.storage,
    )?;
    let mut o = out::<cmd::AllocQCounter>(0);
    AllocQCounterOut::new_unchecked(&mut o[..]).set_counter_set_id(id as u8);
    Ok(o)
}

/// DEALLOC_Q_COUNTER. RQs that still name the set stop counting into it.
pub(super) fn dealloc_q(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let id = DeallocQCounterIn::new_unchecked(req.input).counter_set_id();
    cx.m.qcounters
        .remove_charged(id.into(), &mut cx.m.storage)?;
    Ok(out::<cmd::DeallocQCounter>(0))
}

/// QUERY_Q_COUNTER of the function's own set, optionally clearing it.
pub(super) fn query_q(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryQCounterIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let set = cx.m.qcounters.get_mut(input.counter_set_id().into())?;
    let counts = *set;
    if input.clear() {
        *set = QCounter::default();
    }
    let mut o = out::<cmd::QueryQCounter>(0);
    let mut v = QueryQCounterOut::new_unchecked(&mut o[..]);
    v.set_out_of_buffer(counts.out_of_buffer);
    let rc = counts.rc;
    v.set_out_of_sequence(rc.out_of_sequence);
    v.set_duplicate_request(rc.duplicate_request);
    v.set_rnr_nak_retry_err(rc.rnr_nak_retry_err);
    v.set_packet_seq_err(rc.packet_seq_err);
    v.set_implied_nak_seq_err(rc.implied_nak_seq_err);
    v.set_local_ack_timeout_err(rc.local_ack_timeout_err);
    v.set_req_rnr_retries_exceeded(rc.req_rnr_retries_exceeded);
    v.set_req_transport_retries_exceeded(rc.req_transport_retries_exceeded);
    v.set_req_remote_invalid_request(rc.req_remote_invalid_request);
    v.set_resp_remote_invalid_request(rc.resp_remote_invalid_request);
    v.set_req_remote_access_errors(rc.req_remote_access_errors);
    v.set_resp_remote_access_errors(rc.resp_remote_access_errors);
    v.set_rx_write_requests(rc.rx_write_requests);
    v.set_rx_read_requests(rc.rx_read_requests);
    v.set_rx_atomic_requests(rc.rx_atomic_requests);
    Ok(o)
}

/// Counts an RC transport event of QP `qpn` in the QP's counter set (if it names one).
pub(crate) fn rc_event(
    m: &mut crate::model::Model,
    qpn: u32,
    count: fn(&mut RcCounts) -> &mut u32,
) {
    let Ok(qp) = m.qps.get(qpn) else {
        return;
    };
    let id = qp.ctx.counter_set_id();
    if id == 0 {
        return;
    }
    if let Ok(set) = m.qcounters.get_mut(id.into()) {
        let c = count(&mut set.rc);
        *c = c.saturating_add(1);
    }
}

/// Counts a frame RQ counter set `id` dropped for want of a receive WQE.
pub(crate) fn out_of_buffer(m: &mut crate::model::Model, id: u8) {
    if let Ok(set) = m.qcounters.get_mut(id.into()) {
        set.out_of_buffer = set.out_of_buffer.saturating_add(1);
    }
}

/// The vNIC's diagnostic counters (QUERY_VNIC_ENV): the one event the model has, received
/// frames steering discarded (the general capability nic_receive_steering_discard). The
/// other counts stay zero: their events (queues in error counted per set, EQ overruns,
/// frames for a vport that is down) are not counted by the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct VnicCounters {
    steering_discards: u64,
}

impl VnicCounters {
    /// Counts `n` received frames that steering found no TIR for.
    pub(crate) fn steering_discard(&mut self, n: u64) {
        self.steering_discards = self.steering_discards.wrapping_add(n);
    }
}

/// QUERY_VNIC_ENV of the function's own vNIC (op_mod 0; the counts are never cleared).
pub(super) fn query_vnic_env(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryVnicEnvIn::new_unchecked(req.input);
    ensure(
        !input.other_vport() && input.vport_number() == 0,
        Fail::bad_param(s::OTHER_FUNCTION),
    )?;
    let mut o = out::<cmd::QueryVnicEnv>(0);
    QueryVnicEnvOut::new_unchecked(&mut o[..])
        .vport_env_mut()
        .set_nic_receive_steering_discard(cx.m.vnic.steering_discards);
    Ok(o)
}

/// QUERY_VPORT_COUNTER of the function's own vport, optionally clearing it.
pub(super) fn query_vport(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryVportCounterIn::new_unchecked(req.input);
    ensure(
        !input.other_vport() && input.vport_number() == 0,
        Fail::bad_param(s::OTHER_FUNCTION),
    )?;
    let c = cx.m.vport_counters;
    if input.clear() {
        cx.m.vport_counters = VportCounters::default();
    }
    let mut o = out::<cmd::QueryVportCounter>(0);
    let mut v = QueryVportCounterOut::new_unchecked(&mut o[..]);
    let set = |mut t: TrafficCounter<&mut [u8]>, x: Traffic| {
        t.set_packets(x.packets);
        t.set_octets(x.octets);
    };
    set(v.received_eth_unicast_mut(), c.rx[0]);
    set(v.received_eth_multicast_mut(), c.rx[1]);
    set(v.received_eth_broadcast_mut(), c.rx[2]);
    set(v.transmitted_eth_unicast_mut(), c.tx[0]);
    set(v.transmitted_eth_multicast_mut(), c.tx[1]);
    set(v.transmitted_eth_broadcast_mut(), c.tx[2]);
    set(v.received_ib_unicast_mut(), c.rdma_rx);
    set(v.transmitted_ib_unicast_mut(), c.rdma_tx);
    Ok(o)
}
