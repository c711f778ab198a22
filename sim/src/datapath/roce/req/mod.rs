//! The requester of an RC QP on RoCE: send WQEs become request packets (split at the path
//! MTU, PSNs in order), stay in flight until an ACK, a read response or an atomic
//! acknowledgement covers them, and complete in order. A sequence-error NAK or the local ACK
//! timeout resends from the first unacknowledged PSN (go-back-N, counted against
//! `retry_count`); an RNR NAK waits the timer it carries and resends (against `rnr_retry`, 7
//! for ever); the other NAKs fail the WQE they name. When retries run out the WQE completes
//! in error and the QP moves to ERR, flushing the rest.

mod ack;
mod emit;
mod recover;

pub(crate) use ack::response;
use ack::{arm, arm_at, retry};
use emit::{emit, pump, Emitted};
use recover::fail;
pub(crate) use recover::{fail_head, flush, tick};

use super::wire::{self, aeth, op, AtomicEth, Bth, Ext, Kind, Packet, Path, Pos, Reth};
use super::{path, psn_add, psn_diff, transmit, PSN_MASK};
use crate::datapath::rc::source::Source;
use crate::datapath::rc::{self, Fault};
use crate::datapath::{cq, mem, rq, sendq, Side};
use crate::exec::counters::{rc_event, RcCounts};
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{CqeOpcode, CqeSyndrome, QpState, SendOpcode};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Packets sent and not yet acknowledged above which no new message starts.
const WINDOW: u32 = 1024;
/// Request an ACK at least every this many packets of a long message, so the window moves
/// before its end.
const ACK_REQ_EVERY: u32 = 64;
/// `rnr_retry` that retries for ever.
const RNR_INFINITE: u8 = 7;
/// The InfiniBand RNR NAK timer codes, in microseconds (code 0 is the longest).
const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// The operation of a WQE in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Nop,
    Send,
    Write,
    Read,
    Atomic { compare_swap: bool },
}

/// A WQE sent (or failed before it could be) and not yet completed.
#[derive(Debug, Clone)]
struct Inflight {
    index: u16,
    opcode: u8,
    signaled: bool,
    se: bool,
    imm: u32,
    op: Op,
    first_psn: u32,
    /// PSNs the message takes (0 for a NOP or a WQE that failed before sending).
    npkts: u32,
    /// The next of its packets to put on the port (`npkts` once all went; a resend moves
    /// it back). A read's one request packet asks for every response from there on.
    next: u32,
    /// Send and write: where the message's bytes are (read again for each packet).
    src: Source,
    /// The message's length.
    len: u64,
    /// Remote address and key (write, read, atomic).
    raddr: u64,
    rkey: u32,
    /// Atomic operands.
    swap_add: u64,
    compare: u64,
    /// Read and atomic: where the response goes.
    dest: Vec<rq::Sge>,
    /// Read: the next response PSN expected.
    next_resp: u32,
    /// An error found before anything was sent: reported when the WQE reaches the head.
    failed: Option<CqeSyndrome>,
}

impl Inflight {
    fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts.max(1) - 1)
    }
    fn waits_for_response(&self) -> bool {
        matches!(self.op, Op::Read | Op::Atomic { .. })
    }
}

/// The requester state of one QP.
#[derive(Debug, Clone)]
pub(crate) struct Requester {
    next_psn: u32,
    /// The oldest PSN not yet acknowledged.
    una: u32,
    inflight: VecDeque<Inflight>,
    retries_left: u8,
    rnr_left: u8,
    /// When the oldest packet in flight times out.
    deadline: Option<Instant>,
    /// An RNR NAK said to wait until then before resending.
    rnr_until: Option<Instant>,
    /// Reads and atomics in flight.
    rd_atomic: u32,
    /// The PSN a missing read response was asked for again from, until progress: the
    /// responses still on their way behind the gap are then dropped, not each taken for a
    /// gap of its own (which would resend the read once per response and spend every retry
    /// on one loss).
    read_gap: Option<u32>,
    /// Some WQE in flight has packets not yet on the port (a run stopped for room, or a
    /// resend moved it back): [`pump`] has work. False in the usual case, so a run does not
    /// walk the WQEs in flight to find nothing.
    unsent: bool,
    /// The bytes of the packet being built (kept: one allocation per QP, not per packet).
    buf: Vec<u8>,
}

impl Requester {
    fn packets_unacked(&self) -> u32 {
        psn_diff(self.next_psn, self.una).max(0) as u32
    }
}

/// The QP fields a requester pass needs, read once.
#[derive(Debug, Clone, Copy)]
struct Qpv {
    qpn: u32,
    dqpn: u32,
    mtu: u32,
    path: Option<Path>,
    timeout: Option<Duration>,
    max_rd_atomic: u32,
    retry_count: u8,
    rnr_retry: u8,
    requester: rc::Requester,
}

/// Why the head WQE fails.
#[derive(Debug, Clone, Copy)]
struct Failure {
    syndrome: CqeSyndrome,
}

fn qpv(side: &Side<'_>, qpn: u32) -> Option<Qpv> {
    let qp = side.m.qps.get(qpn).ok()?;
    let ads = qp.ctx.primary_address_path();
    let t = ads.ack_timeout();
    Some(Qpv {
        qpn,
        dqpn: qp.ctx.remote_qpn(),
        mtu: mtu_bytes(qp.ctx.mtu_raw()),
        path: path::of(side.m, qpn, qp),
        timeout: (t != 0).then(|| Duration::from_nanos(4096u64 << t.min(31))),
        max_rd_atomic: 1 << qp.ctx.log_sra_max().min(7),
        retry_count: qp.ctx.retry_count(),
        rnr_retry: qp.ctx.rnr_retry(),
        requester: rc::Requester {
            qpn,
            who: mem::Accessor {
                pd: qp.pd,
                rlky: qp.ctx.rlky(),
            },
            remote_qpn: qp.ctx.remote_qpn(),
            max_msg: rc::max_msg(side.m, &qp.ctx),
        },
    })
}

/// The path MTU in bytes of the QP context's encoding (1: 256 .. 5: 4096).
pub(crate) fn mtu_bytes(raw: u8) -> u32 {
    match raw {
        1..=5 => 128 << raw,
        _ => 1024,
    }
}

/// WQEs of `qpn` in flight (see [`Device::rc_in_flight`](crate::Device::rc_in_flight)).
pub(crate) fn in_flight(m: &crate::model::Model, qpn: u32) -> usize {
    m.qps
        .get(qpn)
        .ok()
        .and_then(|q| q.roce.as_ref())
        .and_then(|c| c.req.as_ref())
        .map_or(0, |r| r.inflight.len())
}

/// Takes the requester state of `qpn` out of the model (made from the context on first use);
/// [`put`] returns it.
fn take(side: &mut Side<'_>, qpn: u32) -> Option<Requester> {
    let qp = side.m.qps.get_mut(qpn).ok()?;
    let psn = qp.ctx.next_send_psn();
    let (retries, rnr) = (qp.ctx.retry_count(), qp.ctx.rnr_retry());
    let conn = qp.roce.get_or_insert_with(Default::default);
    Some(conn.req.take().unwrap_or(Requester {
        next_psn: psn,
        una: psn,
        inflight: VecDeque::new(),
        retries_left: retries,
        rnr_left: rnr,
        deadline: None,
        rnr_until: None,
        rd_atomic: 0,
        read_gap: None,
        unsent: false,
        buf: Vec::new(),
    }))
}

fn put(side: &mut Side<'_>, qpn: u32, r: Requester) {
    let busy = !r.inflight.is_empty() || r.rnr_until.is_some();
    if let Ok(qp) = side.m.qps.get_mut(qpn) {
        qp.ctx.set_next_send_psn(r.next_psn);
        qp.roce.get_or_insert_with(Default::default).req = Some(r);
        if busy {
            side.m.pending.roce.insert(qpn);
        }
    }
}

/// A send doorbell (or the window opening, or a timer) for an RC QP on RoCE: sends the
/// WQEs posted since, as far as the window allows. A QP in ERR flushes them instead.
pub(crate) fn run(side: &mut Side<'_>, qpn: u32, bf: Option<&[u8]>) {
    let state = match side.m.qps.get(qpn) {
        Ok(qp) => qp.ctx.state(),
        Err(_) => return,
    };
    match state {
        Ok(QpState::Rts) => {}
        Ok(QpState::Err) => return rc::run(side, None, qpn, bf),
        _ => return,
    }
    let Some(v) = qpv(side, qpn) else {
        return;
    };
    let Some(mut r) = take(side, qpn) else {
        return;
    };
    send_new(side, &v, &mut r, bf);
    let failure = complete_ready(side, &v, &mut r);
    arm(&v, &mut r);
    put(side, qpn, r);
    if let Some(f) = failure {
        fail(side, qpn, f);
    }
}

/// Reads and sends new WQEs.
fn send_new(side: &mut Side<'_>, v: &Qpv, r: &mut Requester, bf: Option<&[u8]>) {
    let mut bf = bf;
    let mut wqe = sendq::Wqe::new();
    let Ok(qp) = side.m.qps.get(v.qpn) else {
        return;
    };
    if qp.ctx.no_sq() {
        return;
    }
    let Some(ring) = qp.buf.clone() else {
        return;
    };
    let (log, sq_base, dbr) = (qp.ctx.log_sq_size(), qp.sq_base, qp.ctx.dbr_addr());
    let size = 1u32 << log.min(16);
    // What earlier runs left unsent goes first (packets leave in PSN order).
    if r.unsent && r.rnr_until.is_none() && !pump(side, v, r) {
        return;
    }
    let mut done = 0u32;
    while done < size {
        // A ring holds at most `size` WQEs: more in flight means the guest moved its counter
        // past WQEs not yet completed (they are gone from the ring), and the list would grow
        // with every doorbell.
        if r.inflight.back().is_some_and(|e| e.failed.is_some())
            || r.inflight.len() >= size as usize
            || r.packets_unacked() >= WINDOW
            || r.rnr_until.is_some()
            || !super::room(side.m)
        {
            return;
        }
        let Some(pc) = sendq::counter(side.dma, dbr) else {
            side.m.dma_faults += 1;
            return;
        };
        let Ok(ci) = side.m.qps.get(v.qpn).map(|q| q.sq_ci) else {
            return;
        };
        let pending = pc.wrapping_sub(ci);
        if pending == 0 || u32::from(pending) > size {
            return;
        }
        let copy = bf
            .take()
            .filter(|b| sendq::index_of(b) == Some(ci) && b.len() >= sendq::ds(b).max(1) * 16);
        let read = match copy {
            Some(b) => {
                side.m.stats.blueflame_wqes += 1;
                wqe.copy_from(b);
                true
            }
            None => sendq::read(side.dma, &ring, sq_base, log, ci, &mut wqe),
        };
        if !read {
            side.m.dma_faults += 1;
            return;
        }
        let mut e = prepare(side, v, r, &wqe, ci);
        if e.waits_for_response() && e.failed.is_none() {
            if r.rd_atomic >= v.max_rd_atomic {
                return;
            }
            r.rd_atomic += 1;
        }
        let mut emitted = Emitted::All;
        if e.failed.is_none() && e.op != Op::Nop {
            match v.path {
                Some(p) => {
                    e.first_psn = r.next_psn;
                    r.next_psn = psn_add(r.next_psn, e.npkts);
                    emitted = emit(side, v, &p, &mut e, &mut r.buf);
                }
                None => {
                    e.failed = Some(CqeSyndrome::LocalQpOpErr);
                    e.npkts = 0;
                }
            }
        }
        if e.failed.is_some() && e.waits_for_response() {
            r.rd_atomic = r.rd_atomic.saturating_sub(1);
        }
        let n = sendq::wqebbs(&wqe);
        if let Ok(qp) = side.m.qps.get_mut(v.qpn) {
            qp.sq_ci = ci.wrapping_add(n);
        }
        done += u32::from(n);
        r.inflight.push_back(e);
        if emitted != Emitted::All {
            r.unsent = true;
            return;
        }
    }
}

/// An in-flight record for the WQE at `index`: what it asks for, checked and gathered; a
/// WQE the requester refuses carries its error instead.
fn prepare(side: &mut Side<'_>, v: &Qpv, r: &Requester, wqe: &[u8], index: u16) -> Inflight {
    let ctrl = &wqe[..16];
    let opcode = ctrl[3];
    let end = sendq::ds(wqe) * 16;
    let mut e = Inflight {
        index,
        opcode,
        signaled: (ctrl[11] >> 2) & 0x3 >= 2,
        se: ctrl[11] & 0x2 != 0,
        imm: ctrl.read_be32(12),
        op: Op::Nop,
        first_psn: r.next_psn,
        npkts: 0,
        next: 0,
        src: Source::default(),
        len: 0,
        raddr: 0,
        rkey: 0,
        swap_add: 0,
        compare: 0,
        dest: Vec::new(),
        next_resp: 0,
        failed: None,
    };
    if let Err(f) = fill(side, v, wqe, end, &mut e) {
        e.failed = Some(match f {
            Fault::Local(s) | Fault::Remote { syndrome: s, .. } => s,
            Fault::Rnr => CqeSyndrome::RnrRetryExcErr,
        });
        e.npkts = 0;
    }
    e
}

fn fill(
    side: &mut Side<'_>,
    v: &Qpv,
    wqe: &[u8],
    end: usize,
    e: &mut Inflight,
) -> Result<(), Fault> {
    let bad = Fault::Local(CqeSyndrome::LocalQpOpErr);
    if end < 16 {
        return Err(bad);
    }
    let pkts = |len: u64| -> u32 { len.div_ceil(u64::from(v.mtu)).max(1) as u32 };
    match SendOpcode::from_raw(e.opcode.into()) {
        Some(SendOpcode::Nop) => {}
        Some(SendOpcode::Send | SendOpcode::SendImm | SendOpcode::SendInval) => {
            e.op = Op::Send;
            (e.src, e.len) = Source::plan(&v.requester, wqe, 16, end)?;
            e.npkts = pkts(e.len);
        }
        Some(SendOpcode::RdmaWrite | SendOpcode::RdmaWriteImm) => {
            e.op = Op::Write;
            (e.raddr, e.rkey) = remote(wqe, end)?;
            (e.src, e.len) = Source::plan(&v.requester, wqe, 32, end)?;
            e.npkts = pkts(e.len);
        }
        Some(SendOpcode::RdmaRead) => {
            e.op = Op::Read;
            (e.raddr, e.rkey) = remote(wqe, end)?;
            e.dest = rc::scatter_list(wqe, 32, end)?;
            e.len = e.dest.iter().map(|s| u64::from(s.len)).sum();
            if e.len > v.requester.max_msg {
                return Err(Fault::Local(CqeSyndrome::LocalLengthErr));
            }
            rq::extents(side.m, v.requester.who, &e.dest, e.len)
                .map_err(|_| Fault::Local(CqeSyndrome::LocalProtErr))?;
            e.npkts = pkts(e.len);
            e.next_resp = 0;
        }
        Some(op @ (SendOpcode::AtomicCs | SendOpcode::AtomicFa)) => {
            e.op = Op::Atomic {
                compare_swap: op == SendOpcode::AtomicCs,
            };
            (e.raddr, e.rkey) = remote(wqe, end)?;
            if end < 48 {
                return Err(bad);
            }
            e.swap_add = wqe.read_be64(32);
            e.compare = wqe.read_be64(40);
            e.dest = rc::scatter_list(wqe, 48, end)?;
            e.len = 8;
            rq::extents(side.m, v.requester.who, &e.dest, 8).map_err(|err| match err {
                rq::ScatterError::TooLong => Fault::Local(CqeSyndrome::LocalLengthErr),
                rq::ScatterError::Protection => Fault::Local(CqeSyndrome::LocalProtErr),
            })?;
            e.npkts = 1;
        }
        _ => return Err(bad),
    }
    Ok(())
}

/// The remote address segment after the control segment.
fn remote(wqe: &[u8], end: usize) -> Result<(u64, u32), Fault> {
    if end < 32 {
        return Err(Fault::Local(CqeSyndrome::LocalQpOpErr));
    }
    Ok((wqe.read_be64(16), wqe.read_be32(24)))
}

/// Resends everything in flight from PSN `from` on (go-back-N): each WQE from there goes
/// back to the packet at `from` (a read to the first response not yet received), and goes
/// out again as far as the port has room.
fn resend(side: &mut Side<'_>, v: &Qpv, r: &mut Requester, from: u32) {
    for e in r
        .inflight
        .iter_mut()
        .filter(|e| e.failed.is_none() && e.npkts > 0)
    {
        if psn_diff(e.last_psn(), from) < 0 {
            continue;
        }
        let mut start = psn_diff(from, e.first_psn).max(0) as u32;
        if e.op == Op::Read {
            start = start.max(e.next_resp);
        }
        e.next = e.next.min(start);
    }
    r.unsent = true;
    pump(side, v, r);
}

/// Completes the WQEs at the head that are done: NOPs, and (through `acked`) those an ACK
/// covers. Returns the failure to report when the head is a WQE that failed before sending.
fn complete_ready(side: &mut Side<'_>, v: &Qpv, r: &mut Requester) -> Option<Failure> {
    while let Some(e) = r.inflight.front() {
        if let Some(s) = e.failed {
            return Some(Failure { syndrome: s });
        }
        if e.op != Op::Nop {
            return None;
        }
        let e = r.inflight.pop_front()?;
        complete(side, v.qpn, &e, 0);
    }
    None
}

/// A successful completion of `e`.
fn complete(side: &mut Side<'_>, qpn: u32, e: &Inflight, byte_cnt: u32) {
    if !e.signaled {
        return;
    }
    let Some((cqn, stamp)) = side
        .m
        .qps
        .get(qpn)
        .ok()
        .and_then(|q| Some((q.cqn_snd?, q.stamp)))
    else {
        return;
    };
    let mut c = cq::cqe(CqeOpcode::Req, qpn, e.index);
    c.set_s_wqe_opcode(e.opcode);
    c.set_byte_cnt(byte_cnt);
    cq::post(side, cqn, stamp, *c.storage());
}
