//! Send queues of RC QPs: executing WQEs against the peer QP (on this device, or on the device
//! at the other end of the [`Wire`](crate::Wire)), requester and responder CQEs, the errors of
//! the PRM with their effect on both QPs, receiver-not-ready retries, and flushing in ERR.
//!
//! A WQE runs only while its QP is in RTS; in ERR every WQE completes with a flush error CQE
//! (whatever its completion mode: errors are always reported); in the other states the
//! doorbell is ignored and the WQEs wait for a later doorbell.

mod ops;
pub(crate) mod source;

use super::mem::Accessor;
use super::rq::{self, Target};
use super::sendq::{self, Piece, DS};
use super::{cq, peer, Side};
use crate::clock::Stamp;
use crate::events;
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{CqeOpcode, CqeSyndrome, EventType, QpEvents, QpServiceType, QpState, SendOpcode};
use ops::{atomic, read, send, write, Message};

/// The control segment's completion mode that asks for a CQE on success (2) and the one that
/// also asks for an event (3).
const CE_ALWAYS: u8 = 2;
/// Bytes an in-memory message moves per step: the model holds one step of a message, not
/// the message (up to `log_max_msg`, 1 GiB).
const STEP: u64 = 64 << 10;
/// rnr_retry value that retries forever.
const RNR_INFINITE: u8 = 7;

/// What became of one WQE.
enum Step {
    /// Completed (successfully or not): the consumer moves past it.
    Next,
    /// Stalled on receiver-not-ready: it stays at the head of the queue.
    Stall,
}

/// Why a WQE failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The requester's own error (local length, protection, operation).
    Local(CqeSyndrome),
    /// The responder refused; `responder_err` moves the responder QP to ERR too.
    Remote {
        syndrome: CqeSyndrome,
        responder_err: bool,
    },
    /// No receive WQE posted at the responder.
    Rnr,
}

type Exec = Result<u32, Fault>;

/// The requester QP's fields a WQE needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Requester {
    pub qpn: u32,
    pub who: Accessor,
    pub remote_qpn: u32,
    /// The QP's largest message ([`max_msg`]).
    pub max_msg: u64,
}

/// The largest message QP context `ctx` takes, as requester or responder: 2^log_msg_max
/// bytes, which INIT2RTR keeps within the device's log_max_msg (longer is a length error
/// at the requester, an invalid request at the responder).
pub(crate) fn max_msg(m: &crate::model::Model, ctx: &mlx5_prm::Qpc) -> u64 {
    1u64 << ctx.log_msg_max().min(m.gen().log_max_msg()).min(31)
}

/// The responder QP's fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct Responder {
    qpn: u32,
    who: Accessor,
    rre: bool,
    rwe: bool,
    rae: bool,
    /// Its largest message ([`max_msg`]).
    max_msg: u64,
}

/// Runs the send queue of QP `qpn` from the device's consumer counter up to the send counter
/// of the doorbell record, at most one ring's worth of WQEBBs. `bf` is a BlueFlame copy of the
/// WQE the doorbell announced: it is executed instead of the ring's copy when it is the next
/// WQE due.
pub(crate) fn run<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    qpn: u32,
    bf: Option<&[u8]>,
) {
    let mut bf = bf;
    let mut done: u32 = 0;
    let mut wqe = sendq::Wqe::new();
    loop {
        let Ok(qp) = local.m.qps.get(qpn) else {
            return;
        };
        let Some(ring) = &qp.buf else {
            return;
        };
        if qp.ctx.no_sq() {
            return;
        }
        let flushing = match qp.ctx.state() {
            Ok(QpState::Rts) => false,
            Ok(QpState::Err) => true,
            _ => return,
        };
        let log = qp.ctx.log_sq_size();
        let size = 1u32 << log.min(16);
        let Some(pc) = sendq::counter(local.dma, qp.ctx.dbr_addr()) else {
            local.m.dma_faults += 1;
            return;
        };
        let ci = qp.sq_ci;
        let pending = pc.wrapping_sub(ci);
        if pending == 0 || u32::from(pending) > size || done >= size {
            return;
        }
        let copy = bf
            .take()
            .filter(|b| sendq::index_of(b) == Some(ci) && b.len() >= sendq::ds(b).max(1) * DS);
        let read = match copy {
            Some(b) => {
                local.m.stats.blueflame_wqes += 1;
                wqe.copy_from(b);
                true
            }
            None => sendq::read(local.dma, ring, qp.sq_base, log, ci, &mut wqe),
        };
        if !read {
            local.m.dma_faults += 1;
            return;
        }
        let step = if flushing {
            flush_one(local, qpn, &wqe, ci);
            Step::Next
        } else {
            execute(local, remote.as_deref_mut(), qpn, &wqe, ci)
        };
        match step {
            Step::Next => {
                let n = sendq::wqebbs(&wqe);
                match local.m.qps.get_mut(qpn) {
                    // Unless a flush of this very queue already moved past it.
                    Ok(qp) if qp.sq_ci == ci => qp.sq_ci = ci.wrapping_add(n),
                    _ => {}
                }
                done += u32::from(n);
            }
            Step::Stall => return,
        }
    }
}

/// Completes one WQE of a QP in ERR with a flush error.
fn flush_one(local: &mut Side<'_>, qpn: u32, wqe: &[u8], index: u16) {
    let Some(cqn) = local.m.qps.get(qpn).ok().and_then(|q| q.cqn_snd) else {
        return;
    };
    let e = cq::err_cqe(
        CqeOpcode::ReqErr,
        CqeSyndrome::WrFlushErr,
        qpn,
        index,
        sendq::opcode(wqe),
    );
    cq::post_err(local, cqn, e);
}

/// Moves QP `qpn` to ERR: posted receives complete with flush errors, and (with `flush_sq`)
/// posted sends too. The requester whose WQE failed flushes its own send queue as its loop
/// goes on.
pub(crate) fn set_err(side: &mut Side<'_>, qpn: u32, flush_sq: bool) {
    let Ok(qp) = side.m.qps.get_mut(qpn) else {
        return;
    };
    qp.ctx.set_state(QpState::Err);
    qp.rnr = None;
    super::roce::req::flush(side, qpn);
    side.m.pending.qps.insert(qpn);
    rq::flush(side, Target::Qp(qpn));
    if flush_sq {
        run(side, None, qpn, None);
    }
}

/// Executes one WQE of an RTS QP.
fn execute<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    qpn: u32,
    wqe: &[u8],
    index: u16,
) -> Step {
    let Ok(qp) = local.m.qps.get(qpn) else {
        return Step::Next;
    };
    let req = Requester {
        qpn,
        who: Accessor {
            pd: qp.pd,
            rlky: qp.ctx.rlky(),
        },
        remote_qpn: qp.ctx.remote_qpn(),
        max_msg: max_msg(local.m, &qp.ctx),
    };
    let rc = qp.ctx.st() == Ok(QpServiceType::Rc);
    let ctrl = &wqe[..DS];
    let opcode = ctrl[3];
    let end = sendq::ds(wqe) * DS;
    let fm_ce_se = ctrl[11];
    let ce = (fm_ce_se >> 2) & 0x3;
    let se = fm_ce_se & 0x2 != 0;
    let imm = ctrl.read_be32(12);
    let msg = Message {
        opcode,
        imm,
        se,
        end,
    };
    let result = if !rc || end < DS {
        Err(Fault::Local(CqeSyndrome::LocalQpOpErr))
    } else {
        match SendOpcode::from_raw(opcode.into()) {
            Some(SendOpcode::Nop) => Ok(0),
            Some(SendOpcode::Send | SendOpcode::SendImm | SendOpcode::SendInval) => {
                send(local, remote.as_deref_mut(), &req, wqe, &msg)
            }
            Some(SendOpcode::RdmaWrite | SendOpcode::RdmaWriteImm) => {
                write(local, remote.as_deref_mut(), &req, wqe, &msg)
            }
            Some(SendOpcode::RdmaRead) => read(local, remote.as_deref_mut(), &req, wqe, &msg),
            Some(op @ (SendOpcode::AtomicCs | SendOpcode::AtomicFa)) => atomic(
                local,
                remote.as_deref_mut(),
                &req,
                wqe,
                &msg,
                op == SendOpcode::AtomicCs,
            ),
            _ => Err(Fault::Local(CqeSyndrome::LocalQpOpErr)),
        }
    };
    let (cqn, stamp) = match local.m.qps.get(qpn) {
        Ok(q) => (q.cqn_snd, q.stamp),
        Err(_) => (None, Stamp::FreeRunning),
    };
    let fault = match result {
        Ok(byte_cnt) => {
            if let Ok(qp) = local.m.qps.get_mut(qpn) {
                qp.rnr = None;
            }
            if ce >= CE_ALWAYS {
                if let Some(cqn) = cqn {
                    let mut c = cq::cqe(CqeOpcode::Req, qpn, index);
                    c.set_s_wqe_opcode(opcode);
                    c.set_byte_cnt(byte_cnt);
                    cq::post(local, cqn, stamp, *c.storage());
                }
            }
            return Step::Next;
        }
        Err(Fault::Rnr) => match rnr(local, qpn) {
            Some(fault) => fault,
            None => return Step::Stall,
        },
        Err(f) => f,
    };
    let syndrome = match fault {
        Fault::Local(s) | Fault::Remote { syndrome: s, .. } => s,
        Fault::Rnr => CqeSyndrome::RnrRetryExcErr,
    };
    if let Some(cqn) = cqn {
        let e = cq::err_cqe(CqeOpcode::ReqErr, syndrome, qpn, index, opcode);
        cq::post_err(local, cqn, e);
    }
    set_err(local, qpn, false);
    if let Fault::Remote {
        syndrome,
        responder_err: true,
    } = fault
    {
        let same_qp = remote.is_none() && req.remote_qpn == qpn;
        let side = peer(local, &mut remote);
        if side.m.qps.contains(req.remote_qpn) {
            set_err(side, req.remote_qpn, !same_qp);
            responder_event(side, req.remote_qpn, syndrome);
        }
    }
    Step::Next
}

/// The affiliated event of a responder QP that a request put in ERR without a completion of
/// its own: a local access violation (bad rkey or rights) or an invalid request, for an EQ
/// subscribed to it.
pub(crate) fn responder_event(side: &mut Side<'_>, qpn: u32, syndrome: CqeSyndrome) {
    let event = match syndrome {
        CqeSyndrome::RemoteAccessErr => EventType::WqAccessError,
        _ => EventType::WqInvalReqError,
    };
    let mut data = [0u8; 28];
    let mut ev = QpEvents::new_unchecked(&mut data[..]);
    ev.set_type(0);
    ev.set_qpn_rqn_sqn(qpn & 0xff_ffff);
    events::post(side.m, side.dma, event.raw(), 0, &data);
}

/// Receiver-not-ready: counts one more try against qpc.rnr_retry (7 retries forever). Returns
/// the fault to report when the retries are exhausted, `None` while the WQE should wait.
fn rnr(local: &mut Side<'_>, qpn: u32) -> Option<Fault> {
    let qp = local.m.qps.get_mut(qpn).ok()?;
    let left = match qp.rnr {
        None => qp.ctx.rnr_retry(),
        Some(RNR_INFINITE) => RNR_INFINITE,
        Some(n) => n.saturating_sub(1),
    };
    if left == 0 {
        qp.rnr = None;
        Some(Fault::Local(CqeSyndrome::RnrRetryExcErr))
    } else {
        qp.rnr = Some(left);
        local.m.pending.qps.insert(qpn);
        None
    }
}

/// The local scatter list of a read or atomic: data segments up to an invalid-lkey entry.
pub(crate) fn scatter_list(wqe: &[u8], start: usize, end: usize) -> Result<Vec<rq::Sge>, Fault> {
    let bad = Fault::Local(CqeSyndrome::LocalQpOpErr);
    let mut out = Vec::new();
    for p in sendq::gather_list(wqe, start, end).ok_or(bad)? {
        match p {
            Piece::Inline { .. } => return Err(bad),
            Piece::Data { lkey, .. } if u64::from(lkey) == mlx5_prm::INVALID_LKEY => break,
            Piece::Data { len, lkey, addr } => out.push(rq::Sge { len, lkey, addr }),
        }
    }
    Ok(out)
}
