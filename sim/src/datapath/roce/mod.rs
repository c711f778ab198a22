//! The RoCEv2 transport of RC QPs ([`RcTransport::Roce`](crate::RcTransport::Roce)): each QP
//! is a requester ([`req`]: WQEs become request packets, ACKs and responses complete them,
//! timeouts and NAKs resend them) and a responder ([`resp`]: requests are checked for PSN,
//! opcode sequence and access, executed, and answered). Packets are frames on the port
//! ([`wire`]), addressed from the QP's address path and the port's RoCE address table
//! ([`path`]); a packet to one of the device's own addresses loops back inside the device.
//!
//! Frames arriving at the port come here first ([`receive`]) when they are UDP to port 4791
//! for one of the table's addresses; any other frame goes on to Ethernet steering.

pub(crate) mod icrc;
pub(crate) mod path;
pub(crate) mod req;
pub(crate) mod resp;
pub(crate) mod wire;

use super::eth::PORT_QUEUE_BUDGET;
use super::Side;
use crate::model::Model;
use std::collections::VecDeque;
use wire::Refused;

/// PSNs are 24 bits.
pub(crate) const PSN_MASK: u32 = 0xff_ffff;

/// `a + n` in PSN space.
pub(crate) fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - b` in PSN space, as a signed distance (the half of the space ahead of `b` is
/// positive).
pub(crate) fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    if d & 0x80_0000 != 0 {
        d as i32 - 0x100_0000
    } else {
        d as i32
    }
}

/// The RoCE state of one RC QP, made when it first sends or receives (after its PSNs are
/// set) and dropped when it returns to RST.
#[derive(Debug, Default, Clone)]
pub(crate) struct Conn {
    pub req: Option<req::Requester>,
    pub resp: Option<resp::Responder>,
}

/// What the RoCE path counts of the device as a whole ([`Device::roce_stats`]); per-QP events
/// go to the QP's queue counter set (QUERY_Q_COUNTER).
///
/// [`Device::roce_stats`]: crate::Device::roce_stats
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoceStats {
    /// Packets received for one of the device's addresses and taken by the transport.
    pub rx_packets: u64,
    /// Packets sent (to the port or looped back).
    pub tx_packets: u64,
    /// Dropped: the ICRC did not match.
    pub icrc_errors: u64,
    /// Dropped: headers cut short or lengths that do not add up.
    pub malformed: u64,
    /// Dropped: not an RC opcode, or a transport version other than 0.
    pub bad_opcode: u64,
    /// Dropped: no RC QP with the packet's destination QP number is ready to take it.
    pub unknown_qpn: u64,
    /// Packets looped back inside the device.
    pub looped: u64,
    /// Dropped: a request that came while its QP was still answering a read with the port's
    /// queue full (the requester sends it again).
    pub responder_busy: u64,
    /// The most bytes of frames the port's queue and the loopback queue held together, as
    /// seen when a RoCE packet was queued: what the transport's pacing keeps in bounds.
    pub peak_queued: u64,
}

/// Packets sent to one of the device's own addresses, delivered before the lock is let go.
#[derive(Debug, Default)]
pub(crate) struct Loopback {
    frames: VecDeque<Vec<u8>>,
    /// The bytes of `frames`.
    bytes: usize,
}

/// True while the queues a RoCE packet goes into have room for more: the port's (bounded as
/// the Ethernet path bounds it) and the device's own loopback queue (bounded alike). The
/// requester and the responder stop building packets short of it and go on once frames have
/// left, so what a guest posts never makes the model hold more than about this much.
pub(crate) fn room(m: &Model) -> bool {
    m.outbox.bytes() < PORT_QUEUE_BUDGET && m.roce_loop.bytes < PORT_QUEUE_BUDGET
}

/// Most looped-back packets delivered per drain: the rest wait for the next one (a QP
/// talking to itself could otherwise go on for ever within one doorbell).
const LOOP_BUDGET: usize = 1 << 14;

/// A frame arriving at the port: true when the RoCE transport took it (delivered or
/// dropped and counted), false when it is not RoCEv2 for this device and goes on to the
/// Ethernet path.
pub(crate) fn receive(side: &mut Side<'_>, frame: &[u8]) -> bool {
    if !ours(side.m, frame) {
        return false;
    }
    side.m.port.counters.received(frame);
    side.m.vport_counters.rdma_received(frame);
    deliver(side, frame);
    drain(side);
    true
}

/// True for UDP to port 4791, to one of the RoCE address table's addresses and MACs.
fn ours(m: &Model, frame: &[u8]) -> bool {
    let Some((l3, v4)) = wire::locate(frame) else {
        return false;
    };
    let dst = if v4 {
        match frame.get(l3 + 16..l3 + 20) {
            Some(a) => wire::mapped([a[0], a[1], a[2], a[3]]),
            None => return false,
        }
    } else {
        match frame.get(l3 + 24..l3 + 40) {
            Some(a) => {
                let mut d = [0u8; 16];
                d.copy_from_slice(a);
                d
            }
            None => return false,
        }
    };
    m.roce_addrs
        .find_v2(&dst)
        .and_then(|i| m.roce_addrs.get(i))
        .is_some_and(|e| frame[..6] == e.mac)
}

/// One frame known to be addressed to this device.
fn deliver(side: &mut Side<'_>, frame: &[u8]) {
    let pkt = match wire::parse(frame) {
        Ok(p) => p,
        Err(e) => {
            let s = &mut side.m.roce_stats;
            match e {
                Refused::NotRoce | Refused::Malformed => s.malformed += 1,
                Refused::Icrc => {
                    s.icrc_errors += 1;
                    side.m.port.counters.icrc_error();
                }
                Refused::Opcode => s.bad_opcode += 1,
            }
            return;
        }
    };
    side.m.roce_stats.rx_packets += 1;
    if pkt.shape.is_request() {
        resp::request(side, &pkt);
    } else {
        req::response(side, &pkt);
    }
}

/// Delivers looped-back packets, up to [`LOOP_BUDGET`] of them.
pub(crate) fn drain(side: &mut Side<'_>) {
    for _ in 0..LOOP_BUDGET {
        let Some(frame) = side.m.roce_loop.frames.pop_front() else {
            return;
        };
        side.m.roce_loop.bytes -= frame.len();
        deliver(side, &frame);
    }
}

/// Puts one packet on its way: into the device again when its destination is one of the
/// device's own addresses, else onto the port (counted as the Ethernet path counts frames).
pub(crate) fn transmit(
    side: &mut Side<'_>,
    path: &wire::Path,
    bth: &wire::Bth,
    ext: &[u8],
    payload: &[u8],
) {
    let m = &mut *side.m;
    m.roce_stats.tx_packets += 1;
    if m.roce_addrs.find_v2(&path.dip).is_some() {
        let mut f = Vec::with_capacity(96 + payload.len());
        wire::build(&mut f, path, bth, ext, payload);
        m.roce_stats.looped += 1;
        m.roce_loop.bytes += f.len();
        m.roce_loop.frames.push_back(f);
    } else {
        let _ = m.outbox.push_with(|f| {
            wire::build(f, path, bth, ext, payload);
            Ok::<(), ()>(())
        });
        super::eth::count_sent_roce(m);
    }
    let queued = (m.outbox.bytes() + m.roce_loop.bytes) as u64;
    m.roce_stats.peak_queued = m.roce_stats.peak_queued.max(queued);
}
