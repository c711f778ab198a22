//! The operations of an RC send WQE at the responder: SEND into the next receive, RDMA WRITE
//! and READ through the rkey, and the atomics, with the responder's checks (its state, its
//! access rights, the remote key) and the receive CQE of a consumed receive WQE.

use super::source::Source;
use super::{scatter_list, set_err, Exec, Fault, Requester, Responder, STEP};
use crate::datapath::mem::{self, Access, Accessor};
use crate::datapath::rq::{self, ScatterError, Target};
use crate::datapath::sendq::DS;
use crate::datapath::{cq, peer, Side};
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{CqeOpcode, CqeSyndrome, QpServiceType, QpState, SendOpcode};

/// The control segment's fields an operation needs.
pub(super) struct Message {
    pub(super) opcode: u8,
    pub(super) imm: u32,
    pub(super) se: bool,
    /// DS count × 16: where the WQE's segments end.
    pub(super) end: usize,
}

/// The responder QP, if it can take requests (RC in RTR or RTS). A responder that cannot
/// answer leaves the requester to time out: transport retry exceeded.
fn responder(side: &Side<'_>, qpn: u32) -> Result<Responder, Fault> {
    let gone = Fault::Remote {
        syndrome: CqeSyndrome::TransportRetryExcErr,
        responder_err: false,
    };
    let qp = side.m.qps.get(qpn).map_err(|_| gone)?;
    let ready = matches!(qp.ctx.state(), Ok(QpState::Rtr | QpState::Rts));
    if qp.ctx.st() != Ok(QpServiceType::Rc) || !ready {
        return Err(gone);
    }
    Ok(Responder {
        qpn,
        who: Accessor {
            pd: qp.pd,
            rlky: qp.ctx.rlky(),
        },
        rre: qp.ctx.rre(),
        rwe: qp.ctx.rwe(),
        rae: qp.ctx.rae(),
        max_msg: super::max_msg(side.m, &qp.ctx),
    })
}

/// A message longer than the responder QP's largest (its 2^log_msg_max): an invalid request,
/// which the responder reports as its own error too.
const fn too_long() -> Fault {
    Fault::Remote {
        syndrome: CqeSyndrome::RemoteInvalReqErr,
        responder_err: true,
    }
}

const fn remote_access(responder_err: bool) -> Fault {
    Fault::Remote {
        syndrome: CqeSyndrome::RemoteAccessErr,
        responder_err,
    }
}

/// The remote address segment at byte 16: (raddr, rkey).
fn raddr(wqe: &[u8], msg: &Message) -> Result<(u64, u32), Fault> {
    if msg.end < 2 * DS {
        return Err(Fault::Local(CqeSyndrome::LocalQpOpErr));
    }
    Ok((wqe.read_be64(DS), wqe.read_be32(DS + 8)))
}

/// Whose memory a message is read from: the requester's (SEND, WRITE) or the responder's
/// (READ); it is written on the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadFrom {
    Requester,
    Responder,
}

/// Moves `len` bytes in steps of [`STEP`]. `buf` holds the bytes read before the move (the
/// whole of a message of one step, see [`first_step`], or none); `read(side, lo, hi, buf)`
/// appends bytes `lo .. hi` of the message from the side `from` names, `write(side, at,
/// bytes)` places them at offset `at` on the other side. The first error stops the move,
/// what was placed before it staying placed (as on a device, which writes the packets before
/// the failing one).
fn stream<'a>(
    local: &mut Side<'a>,
    remote: &mut Option<&mut Side<'a>>,
    len: u64,
    from: ReadFrom,
    mut buf: Vec<u8>,
    mut read: impl FnMut(&mut Side<'_>, u64, u64, &mut Vec<u8>) -> Result<(), Fault>,
    mut write: impl FnMut(&mut Side<'_>, u64, &[u8]) -> Result<(), Fault>,
) -> Result<(), Fault> {
    let mut lo = 0;
    let mut hi = buf.len() as u64;
    loop {
        if hi > lo {
            match from {
                ReadFrom::Requester => write(peer(local, remote), lo, &buf)?,
                ReadFrom::Responder => write(local, lo, &buf)?,
            }
        }
        lo = hi;
        if lo >= len {
            return Ok(());
        }
        hi = len.min(lo + STEP);
        buf.clear();
        match from {
            ReadFrom::Requester => read(local, lo, hi, &mut buf)?,
            ReadFrom::Responder => read(peer(local, remote), lo, hi, &mut buf)?,
        }
    }
}

/// The requester's part of a SEND or WRITE before the responder sees it, so that its errors
/// come first: a message of one step is read now (each key checked as it is read), a longer
/// one has its keys checked whole and is read a step at a time as it is placed. Returns the
/// bytes read (the buffer [`stream`] goes on with).
fn first_step(
    side: &mut Side<'_>,
    who: Accessor,
    src: &Source,
    len: u64,
) -> Result<Vec<u8>, Fault> {
    let mut buf = Vec::with_capacity(len.min(STEP) as usize);
    if len > STEP {
        src.check(side.m, who)?;
    } else {
        gathered(src, who)(side, 0, len, &mut buf)?;
    }
    Ok(buf)
}

/// Reads bytes `lo .. hi` of a requester's gather list; a key that does not grant the read,
/// or memory that is not mapped, is a local protection error.
fn gathered(
    src: &Source,
    who: Accessor,
) -> impl FnMut(&mut Side<'_>, u64, u64, &mut Vec<u8>) -> Result<(), Fault> + '_ {
    move |side, lo, hi, buf| {
        if src.read(side, who, lo, hi, buf) {
            Ok(())
        } else {
            Err(Fault::Local(CqeSyndrome::LocalProtErr))
        }
    }
}

/// The receive WQE a message consumes: none posted is receiver-not-ready; a QP without a
/// receive queue cannot take the message (an invalid request).
fn receive(side: &mut Side<'_>, r: &Responder) -> Result<rq::Posted, Fault> {
    let t = Target::Qp(r.qpn);
    if !rq::exists(side.m, t) {
        return Err(Fault::Remote {
            syndrome: CqeSyndrome::RemoteInvalReqErr,
            responder_err: true,
        });
    }
    rq::peek(side.m, side.dma, t).ok_or(Fault::Rnr)
}

/// A message the receive WQE `index` cannot take: the responder completes it in error and
/// goes to ERR; the requester hears an invalid request (too long) or a remote operational
/// error. `is_requester`: the responder is the requester itself (a QP connected to itself),
/// whose send queue the requester's own loop flushes.
fn refuse(
    side: &mut Side<'_>,
    r: &Responder,
    index: u16,
    e: ScatterError,
    is_requester: bool,
) -> Fault {
    let (local, remote) = match e {
        ScatterError::TooLong => (CqeSyndrome::LocalLengthErr, CqeSyndrome::RemoteInvalReqErr),
        ScatterError::Protection => (CqeSyndrome::LocalProtErr, CqeSyndrome::RemoteOpErr),
    };
    rq::fail(side, Target::Qp(r.qpn), index, local);
    set_err(side, r.qpn, !is_requester);
    Fault::Remote {
        syndrome: remote,
        responder_err: false,
    }
}

/// What the responder reports for a message that consumed a receive WQE.
struct Incoming {
    opcode: CqeOpcode,
    byte_cnt: u32,
    imm: Option<u32>,
    se: bool,
    src_qpn: u32,
}

/// Consumes the receive WQE `index` and posts its CQE.
fn complete(side: &mut Side<'_>, r: &Responder, index: u16, msg: Incoming) {
    let t = Target::Qp(r.qpn);
    rq::consume(side.m, t);
    let Some((cqn, stamp)) = rq::completes_to(side.m, t) else {
        return;
    };
    let mut c = cq::cqe(msg.opcode, r.qpn, index);
    c.set_byte_cnt(msg.byte_cnt);
    c.set_rqpn(msg.src_qpn & 0xff_ffff);
    c.set_se(msg.se);
    if let Some(imm) = msg.imm {
        c.set_immediate(imm);
    }
    cq::post(side, cqn, stamp, *c.storage());
}

/// SEND, SEND_IMM, SEND_INVAL: the gathered message lands in the responder's next receive.
pub(super) fn send<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    req: &Requester,
    wqe: &[u8],
    msg: &Message,
) -> Exec {
    let (src, len) = Source::plan(req, wqe, DS, msg.end)?;
    let buf = first_step(local, req.who, &src, len)?;
    let is_requester = remote.is_none() && req.remote_qpn == req.qpn;
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    let (opcode, imm) = match SendOpcode::from_raw(msg.opcode.into()) {
        Some(SendOpcode::SendImm) => (CqeOpcode::RespSendImm, Some(msg.imm)),
        Some(SendOpcode::SendInval) => (CqeOpcode::RespSendInv, Some(msg.imm)),
        _ => (CqeOpcode::RespSend, None),
    };
    let posted = receive(side, &r)?;
    // Longer than the QP takes: as a receive buffer too short (IBTA: an invalid request).
    // A step's entries are checked as it is placed; a longer message's all at once first.
    let capacity: u64 = posted.sges.iter().map(|s| u64::from(s.len)).sum();
    let fits = if len > r.max_msg || len > capacity {
        Err(ScatterError::TooLong)
    } else if len > STEP {
        rq::check(side.m, r.who, &posted.sges, len)
    } else {
        Ok(())
    };
    if let Err(e) = fits {
        return Err(refuse(side, &r, posted.index, e, is_requester));
    }
    stream(
        local,
        &mut remote,
        len,
        ReadFrom::Requester,
        buf,
        gathered(&src, req.who),
        |side, at, bytes| {
            rq::place(side, r.who, &posted.sges, at, bytes).map_err(|_| {
                refuse(
                    side,
                    &r,
                    posted.index,
                    ScatterError::Protection,
                    is_requester,
                )
            })
        },
    )?;
    let incoming = Incoming {
        opcode,
        byte_cnt: len as u32,
        imm,
        se: msg.se,
        src_qpn: req.qpn,
    };
    complete(peer(local, &mut remote), &r, posted.index, incoming);
    Ok(len as u32)
}

/// RDMA_WRITE, RDMA_WRITE_IMM: the gathered data goes to raddr through the rkey; with
/// immediate, a receive WQE is consumed too (checked for before any data moves).
pub(super) fn write<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    req: &Requester,
    wqe: &[u8],
    msg: &Message,
) -> Exec {
    let (addr, rkey) = raddr(wqe, msg)?;
    let (src, len) = Source::plan(req, wqe, 2 * DS, msg.end)?;
    let buf = first_step(local, req.who, &src, len)?;
    let with_imm = msg.opcode == SendOpcode::RdmaWriteImm.raw();
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    if !r.rwe {
        return Err(remote_access(true));
    }
    if len > r.max_msg {
        return Err(too_long());
    }
    // The rkey before the receive an immediate needs; a step's range is checked as it is
    // written.
    if len > STEP || with_imm {
        mem::check(side.m, rkey, r.who, addr, len, Access::RemoteWrite)
            .map_err(|_| remote_access(true))?;
    }
    let posted = if with_imm {
        Some(receive(side, &r)?)
    } else {
        None
    };
    stream(
        local,
        &mut remote,
        len,
        ReadFrom::Requester,
        buf,
        gathered(&src, req.who),
        |side, at, bytes| {
            let n = bytes.len() as u64;
            let e = mem::resolve(
                side.m,
                rkey,
                r.who,
                addr.wrapping_add(at),
                n,
                Access::RemoteWrite,
            )
            .map_err(|_| remote_access(true))?;
            if mem::write(side.dma, &e, bytes) {
                Ok(())
            } else {
                side.m.dma_faults += 1;
                Err(remote_access(true))
            }
        },
    )?;
    if let Some(posted) = posted {
        let incoming = Incoming {
            opcode: CqeOpcode::RespWrImm,
            byte_cnt: len as u32,
            imm: Some(msg.imm),
            se: msg.se,
            src_qpn: req.qpn,
        };
        complete(peer(local, &mut remote), &r, posted.index, incoming);
    }
    Ok(0)
}

/// RDMA_READ: raddr through the rkey into the local scatter list; the requester CQE carries
/// the length (the sum of the scatter list).
pub(super) fn read<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    req: &Requester,
    wqe: &[u8],
    msg: &Message,
) -> Exec {
    let (addr, rkey) = raddr(wqe, msg)?;
    let sges = scatter_list(wqe, 2 * DS, msg.end)?;
    let len: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
    if len > req.max_msg {
        return Err(Fault::Local(CqeSyndrome::LocalLengthErr));
    }
    // The local list before the responder: a step's extents are resolved now and written at
    // once; a longer list is checked whole and placed a step at a time.
    let prot = Fault::Local(CqeSyndrome::LocalProtErr);
    let dest = if len > STEP {
        rq::check(local.m, req.who, &sges, len).map_err(|_| prot)?;
        None
    } else {
        Some(rq::extents(local.m, req.who, &sges, len).map_err(|_| prot)?)
    };
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    if !r.rre {
        return Err(remote_access(true));
    }
    if len > r.max_msg {
        return Err(too_long());
    }
    if len > STEP {
        mem::check(side.m, rkey, r.who, addr, len, Access::RemoteRead)
            .map_err(|_| remote_access(true))?;
    }
    stream(
        local,
        &mut remote,
        len,
        ReadFrom::Responder,
        Vec::with_capacity(len.min(STEP) as usize),
        |side, lo, hi, buf| {
            let at = addr.wrapping_add(lo);
            let e = mem::resolve(side.m, rkey, r.who, at, hi - lo, Access::RemoteRead)
                .map_err(|_| remote_access(true))?;
            if mem::read(side.dma, &e, buf) {
                Ok(())
            } else {
                side.m.dma_faults += 1;
                Err(remote_access(true))
            }
        },
        |side, at, bytes| match &dest {
            Some(e) if mem::write(side.dma, e, bytes) => Ok(()),
            Some(_) => {
                side.m.dma_faults += 1;
                Err(prot)
            }
            None => rq::place(side, req.who, &sges, at, bytes).map_err(|_| prot),
        },
    )?;
    Ok(len as u32)
}

/// ATOMIC_CS, ATOMIC_FA on the 8 bytes at raddr (big-endian, 8-byte aligned); the original
/// value goes to the local scatter list (big-endian).
pub(super) fn atomic<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    req: &Requester,
    wqe: &[u8],
    msg: &Message,
    compare_swap: bool,
) -> Exec {
    let (addr, rkey) = raddr(wqe, msg)?;
    if msg.end < 3 * DS {
        return Err(Fault::Local(CqeSyndrome::LocalQpOpErr));
    }
    let (swap_add, compare) = (wqe.read_be64(2 * DS), wqe.read_be64(2 * DS + 8));
    let sges = scatter_list(wqe, 3 * DS, msg.end)?;
    let dest = rq::extents(local.m, req.who, &sges, 8).map_err(|e| match e {
        ScatterError::TooLong => Fault::Local(CqeSyndrome::LocalLengthErr),
        ScatterError::Protection => Fault::Local(CqeSyndrome::LocalProtErr),
    })?;
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    if addr % 8 != 0 {
        return Err(Fault::Remote {
            syndrome: CqeSyndrome::RemoteInvalReqErr,
            responder_err: true,
        });
    }
    if !r.rae {
        return Err(remote_access(true));
    }
    let e = mem::resolve(side.m, rkey, r.who, addr, 8, Access::RemoteAtomic)
        .map_err(|_| remote_access(true))?;
    let mut old = Vec::new();
    if !mem::read(side.dma, &e, &mut old) || old.len() != 8 {
        side.m.dma_faults += 1;
        return Err(remote_access(true));
    }
    let original = old.read_be64(0);
    let new = if compare_swap {
        if original == compare {
            swap_add
        } else {
            original
        }
    } else {
        original.wrapping_add(swap_add)
    };
    if !mem::write(side.dma, &e, &new.to_be_bytes()) {
        side.m.dma_faults += 1;
        return Err(remote_access(true));
    }
    if !mem::write(local.dma, &dest, &original.to_be_bytes()) {
        local.m.dma_faults += 1;
        return Err(Fault::Local(CqeSyndrome::LocalProtErr));
    }
    Ok(8)
}
