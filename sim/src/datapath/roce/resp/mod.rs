//! The responder of an RC QP on RoCE: a request packet is checked against the expected PSN
//! (ahead: one sequence-error NAK, then silence until the missing packet comes; behind: a
//! duplicate, acknowledged again, a read served again, an atomic answered from its saved
//! result), against the opcode sequence of the message in progress, and against the QP's
//! access rights and the memory key; then executed: sends gathered into the next receive
//! WQE, writes into the key's memory, reads answered with response packets split at the path
//! MTU, atomics applied. ACKs go out when the request asks for one (coalescing the rest).

mod reads;

use super::wire::{self, aeth, op, Aeth, Bth, Ext, Kind, Packet, Path, Pos};
use super::{path, psn_add, psn_diff, transmit};
use crate::datapath::rq::{self, Target};
use crate::datapath::{cq, mem, rc, Side};
use crate::exec::counters::{rc_event, RcCounts};
use mlx5_prm::{CqeOpcode, CqeSyndrome, QpServiceType, QpState};
use reads::{atomic, duplicate, read};
use std::collections::VecDeque;

/// Reads and atomics remembered for duplicates (at least the QP's `log_rra_max` allows).
const HISTORY: usize = 16;

/// A read request served, kept to serve its duplicates.
#[derive(Debug, Clone, Copy)]
struct ReadDone {
    first_psn: u32,
    npkts: u32,
    va: u64,
    rkey: u32,
    len: u32,
}

/// A read whose responses did not all fit in the port's queue: the rest go out as frames
/// leave ([`resume`]).
#[derive(Debug, Clone, Copy)]
struct Serving {
    rd: ReadDone,
    /// The next response packet (from the read's first).
    next: u32,
}

/// The message in progress.
#[derive(Debug, Default, Clone)]
enum InMsg {
    #[default]
    None,
    /// A send: the bytes placed so far, each packet's written into the receive WQE's
    /// buffers as it comes (a copy of the message held until its end let a peer make the
    /// model hold gigabytes).
    Send(u64),
    /// A write: where the next byte goes and how many are left.
    Write {
        va: u64,
        rkey: u32,
        left: u64,
        /// The message's length (RETH), for the immediate's CQE.
        total: u32,
    },
}

/// The responder state of one QP.
#[derive(Debug, Clone)]
pub(crate) struct Responder {
    epsn: u32,
    msn: u32,
    msg: InMsg,
    /// A sequence-error NAK went out for `epsn`: stay silent until it arrives.
    nak_sent: bool,
    reads: VecDeque<ReadDone>,
    atomics: VecDeque<(u32, u64)>,
    /// A read still being answered: requests wait behind it (responses go out in order).
    serving: Option<Serving>,
}

/// The responder QP's fields, read once per packet.
struct Qpv {
    qpn: u32,
    dqpn: u32,
    mtu: u32,
    path: Option<Path>,
    who: mem::Accessor,
    rre: bool,
    rwe: bool,
    rae: bool,
    min_rnr_nak: u8,
    /// The QP's largest message (2^log_msg_max, within the device's log_max_msg).
    max_msg: u64,
}

fn qpv(side: &Side<'_>, qpn: u32) -> Option<Qpv> {
    let qp = side.m.qps.get(qpn).ok()?;
    Some(Qpv {
        qpn,
        dqpn: qp.ctx.remote_qpn(),
        mtu: super::req::mtu_bytes(qp.ctx.mtu_raw()),
        path: path::of(side.m, qpn, qp),
        who: mem::Accessor {
            pd: qp.pd,
            rlky: qp.ctx.rlky(),
        },
        rre: qp.ctx.rre(),
        rwe: qp.ctx.rwe(),
        rae: qp.ctx.rae(),
        min_rnr_nak: qp.ctx.min_rnr_nak(),
        max_msg: crate::datapath::rc::max_msg(side.m, &qp.ctx),
    })
}

/// What became of a request.
enum Verdict {
    /// Accepted: `epsn` moves on by this many PSNs.
    Done(u32),
    /// No receive WQE: RNR NAK, the PSN stays expected.
    Rnr,
    /// Refused with this NAK syndrome; the QP moves to ERR.
    Nak(u8),
    /// Dropped without a word (a malformed packet the ICRC could not catch).
    Drop,
}

/// A request packet for the QP its BTH names.
pub(crate) fn request(side: &mut Side<'_>, pkt: &Packet<'_>) {
    let qpn = pkt.bth.dqpn;
    let ready = side.m.qps.get(qpn).is_ok_and(|q| {
        q.ctx.st() == Ok(QpServiceType::Rc)
            && matches!(q.ctx.state(), Ok(QpState::Rtr | QpState::Rts))
    });
    if !ready {
        side.m.roce_stats.unknown_qpn += 1;
        return;
    }
    let Some(v) = qpv(side, qpn) else {
        return;
    };
    let Some(mut r) = take(side, qpn) else {
        return;
    };
    if reads::pump(side, &v, &mut r) {
        // Still answering a read, with the port's queue full: the request is dropped, as
        // by a responder out of resources; the requester sends it again.
        side.m.roce_stats.responder_busy += 1;
        put(side, qpn, r);
        return;
    }
    let d = psn_diff(pkt.bth.psn, r.epsn);
    if d > 0 {
        rc_event(side.m, qpn, |c: &mut RcCounts| &mut c.out_of_sequence);
        if !r.nak_sent {
            r.nak_sent = true;
            let psn = r.epsn;
            answer(side, &v, &r, aeth::NAK_PSN_SEQUENCE, psn);
        }
        put(side, qpn, r);
        return;
    }
    if d < 0 {
        rc_event(side.m, qpn, |c: &mut RcCounts| &mut c.duplicate_request);
        duplicate(side, &v, &mut r, pkt);
        put(side, qpn, r);
        return;
    }
    r.nak_sent = false;
    let verdict = if sequence_ok(&r.msg, pkt) {
        execute(side, &v, &mut r, pkt)
    } else {
        Verdict::Nak(aeth::NAK_INVALID_REQUEST)
    };
    match verdict {
        Verdict::Done(n) => {
            r.epsn = psn_add(r.epsn, n);
            let acks = matches!(pkt.shape.kind, Kind::Send | Kind::Write);
            if acks && pkt.bth.ack_req {
                answer(side, &v, &r, aeth::ACK, pkt.bth.psn);
            }
            put(side, qpn, r);
        }
        Verdict::Rnr => {
            answer(
                side,
                &v,
                &r,
                aeth::RNR_NAK | (v.min_rnr_nak & 0x1f),
                pkt.bth.psn,
            );
            // The requester waits and resends from this PSN: what it sent behind it is
            // dropped without a sequence NAK of its own.
            r.nak_sent = true;
            put(side, qpn, r);
        }
        Verdict::Nak(syn) => {
            answer(side, &v, &r, syn, pkt.bth.psn);
            r.msg = InMsg::None;
            put(side, qpn, r);
            let counter: fn(&mut RcCounts) -> &mut u32 = if syn == aeth::NAK_REMOTE_ACCESS {
                |c: &mut RcCounts| &mut c.resp_remote_access_errors
            } else {
                |c: &mut RcCounts| &mut c.resp_remote_invalid_request
            };
            rc_event(side.m, qpn, counter);
            let syndrome = match syn {
                aeth::NAK_REMOTE_ACCESS => CqeSyndrome::RemoteAccessErr,
                aeth::NAK_REMOTE_OPERATIONAL => CqeSyndrome::RemoteOpErr,
                _ => CqeSyndrome::RemoteInvalReqErr,
            };
            if v.dqpn == qpn {
                // A QP connected to itself: its NAK would find it already in ERR, so the
                // requester half hears it now, before the move flushes its other WQEs.
                super::req::fail_head(side, qpn, syndrome);
            }
            rc::set_err(side, qpn, true);
            rc::responder_event(side, qpn, syndrome);
        }
        Verdict::Drop => put(side, qpn, r),
    }
}

fn take(side: &mut Side<'_>, qpn: u32) -> Option<Responder> {
    let qp = side.m.qps.get_mut(qpn).ok()?;
    let epsn = qp.ctx.next_rcv_psn();
    let conn = qp.roce.get_or_insert_with(Default::default);
    Some(conn.resp.take().unwrap_or(Responder {
        epsn,
        msn: 0,
        msg: InMsg::None,
        nak_sent: false,
        reads: VecDeque::new(),
        atomics: VecDeque::new(),
        serving: None,
    }))
}

fn put(side: &mut Side<'_>, qpn: u32, r: Responder) {
    if let Ok(qp) = side.m.qps.get_mut(qpn) {
        qp.ctx.set_next_rcv_psn(r.epsn);
        qp.roce.get_or_insert_with(Default::default).resp = Some(r);
    }
}

/// True when `pkt` may follow the message in progress: the middle or end of the same kind
/// of message, or, between messages, the start of a new one.
fn sequence_ok(msg: &InMsg, pkt: &Packet<'_>) -> bool {
    let s = pkt.shape;
    let continues = matches!(s.pos, Pos::Middle | Pos::Last);
    match msg {
        InMsg::None => !continues,
        InMsg::Send(_) => continues && s.kind == Kind::Send,
        InMsg::Write { .. } => continues && s.kind == Kind::Write,
    }
}

fn execute(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, pkt: &Packet<'_>) -> Verdict {
    let s = pkt.shape;
    let mtu = v.mtu as usize;
    // Every packet but a message's last carries exactly one MTU; the last at most one.
    let full = matches!(s.pos, Pos::First | Pos::Middle);
    if s.payload && (pkt.payload.len() > mtu || (full && pkt.payload.len() != mtu)) {
        return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
    }
    match s.kind {
        Kind::Send => send(side, v, r, pkt),
        Kind::Write => write(side, v, r, pkt),
        Kind::Read => read(side, v, r, pkt),
        Kind::Atomic => atomic(side, v, r, pkt),
        _ => Verdict::Drop,
    }
}

fn send(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, pkt: &Packet<'_>) -> Verdict {
    let t = Target::Qp(v.qpn);
    if !rq::exists(side.m, t) {
        return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
    }
    let Some(posted) = rq::peek(side.m, side.dma, t) else {
        return Verdict::Rnr;
    };
    let got = match std::mem::take(&mut r.msg) {
        InMsg::Send(got) => got,
        _ => 0,
    };
    let capacity: u64 = posted.sges.iter().map(|s| u64::from(s.len)).sum();
    let n = pkt.payload.len() as u64;
    if got + n > capacity || got + n > v.max_msg {
        rq::fail(side, t, posted.index, CqeSyndrome::LocalLengthErr);
        return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
    }
    if let Err(local) = rq::place(side, v.who, &posted.sges, got, pkt.payload) {
        rq::fail(side, t, posted.index, local);
        return Verdict::Nak(aeth::NAK_REMOTE_OPERATIONAL);
    }
    let got = got + n;
    if !pkt.shape.ends_message() {
        r.msg = InMsg::Send(got);
        return Verdict::Done(1);
    }
    let opcode = match pkt.bth.opcode {
        op::SEND_LAST_IMM | op::SEND_ONLY_IMM => CqeOpcode::RespSendImm,
        op::SEND_LAST_INV | op::SEND_ONLY_INV => CqeOpcode::RespSendInv,
        _ => CqeOpcode::RespSend,
    };
    let imm = (pkt.shape.imm || pkt.shape.ieth).then_some(pkt.imm);
    receive_done(side, v, posted.index, opcode, got as u32, imm, pkt.bth.se);
    r.msn = psn_add(r.msn, 1);
    Verdict::Done(1)
}

/// Sends what is left of a read QP `qpn` was answering when the port's queue filled up;
/// true while some is still left (the QP stays among those with work pending).
pub(crate) fn resume(side: &mut Side<'_>, qpn: u32) -> bool {
    let ready = side.m.qps.get(qpn).is_ok_and(|q| {
        matches!(q.ctx.state(), Ok(QpState::Rtr | QpState::Rts))
            && q.roce
                .as_ref()
                .and_then(|c| c.resp.as_ref())
                .is_some_and(|r| r.serving.is_some())
    });
    if !ready {
        return false;
    }
    let (Some(v), Some(mut r)) = (qpv(side, qpn), take(side, qpn)) else {
        return false;
    };
    let busy = reads::pump(side, &v, &mut r);
    put(side, qpn, r);
    busy
}

/// Consumes the receive WQE at `index` with a successful CQE.
fn receive_done(
    side: &mut Side<'_>,
    v: &Qpv,
    index: u16,
    opcode: CqeOpcode,
    byte_cnt: u32,
    imm: Option<u32>,
    se: bool,
) {
    let t = Target::Qp(v.qpn);
    rq::consume(side.m, t);
    let Some((cqn, stamp)) = rq::completes_to(side.m, t) else {
        return;
    };
    let mut c = cq::cqe(opcode, v.qpn, index);
    c.set_byte_cnt(byte_cnt);
    c.set_rqpn(v.dqpn & 0xff_ffff);
    c.set_se(se);
    if let Some(imm) = imm {
        c.set_immediate(imm);
    }
    cq::post(side, cqn, stamp, *c.storage());
}

fn write(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, pkt: &Packet<'_>) -> Verdict {
    let s = pkt.shape;
    let (va, rkey, left, total) = match (s.pos, &r.msg) {
        (Pos::First | Pos::Only, _) => {
            if !v.rwe {
                return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
            }
            let reth = pkt.reth;
            let whole = u64::from(reth.len);
            if whole > v.max_msg {
                return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
            }
            if mem::check(
                side.m,
                reth.rkey,
                v.who,
                reth.va,
                whole,
                mem::Access::RemoteWrite,
            )
            .is_err()
            {
                return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
            }
            rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.rx_write_requests);
            (reth.va, reth.rkey, whole, reth.len)
        }
        (
            _,
            InMsg::Write {
                va,
                rkey,
                left,
                total,
            },
        ) => (*va, *rkey, *left, *total),
        _ => return Verdict::Nak(aeth::NAK_INVALID_REQUEST),
    };
    let n = pkt.payload.len() as u64;
    if n > left || (s.ends_message() && n != left) {
        return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
    }
    let Ok(e) = mem::resolve(side.m, rkey, v.who, va, n, mem::Access::RemoteWrite) else {
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    };
    if !mem::write(side.dma, &e, pkt.payload) {
        side.m.dma_faults += 1;
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    }
    if !s.ends_message() {
        r.msg = InMsg::Write {
            va: va.wrapping_add(n),
            rkey,
            left: left - n,
            total,
        };
        return Verdict::Done(1);
    }
    r.msg = InMsg::None;
    if s.imm {
        let t = Target::Qp(v.qpn);
        if !rq::exists(side.m, t) {
            return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
        }
        let Some(posted) = rq::peek(side.m, side.dma, t) else {
            return Verdict::Rnr;
        };
        receive_done(
            side,
            v,
            posted.index,
            CqeOpcode::RespWrImm,
            total,
            Some(pkt.imm),
            pkt.bth.se,
        );
    }
    r.msn = psn_add(r.msn, 1);
    Verdict::Done(1)
}

fn bth(v: &Qpv, opcode: u8, psn: u32) -> Bth {
    Bth {
        opcode,
        se: false,
        mig: false,
        pad: 0,
        pkey: wire::DEFAULT_PKEY,
        dqpn: v.dqpn,
        ack_req: false,
        psn,
    }
}

/// An ACK or NAK with `syndrome` for `psn`.
fn answer(side: &mut Side<'_>, v: &Qpv, r: &Responder, syndrome: u8, psn: u32) {
    let Some(p) = v.path else {
        return;
    };
    let ext = Ext::new().aeth(Aeth {
        syndrome,
        msn: r.msn,
    });
    transmit(side, &p, &bth(v, op::ACKNOWLEDGE, psn), ext.as_slice(), &[]);
}
