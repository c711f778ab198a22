//! The operations of an RC send WQE at the responder: SEND into the next receive, RDMA WRITE
//! and READ through the rkey, and the atomics, with the responder's checks (its state, its
//! access rights, the remote key) and the receive CQE of a consumed receive WQE.

use super::{gather, scatter_list, set_err, Exec, Fault, Requester, Responder};
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

/// What the responder reports for an incoming message that consumes a receive WQE.
struct Incoming<'d> {
    pub(super) opcode: CqeOpcode,
    /// The data to scatter (none for RDMA write with immediate).
    data: Option<&'d [u8]>,
    byte_cnt: u32,
    pub(super) imm: Option<u32>,
    pub(super) se: bool,
    src_qpn: u32,
    /// The responder is the requester itself (a QP connected to itself): its send queue is
    /// flushed by the requester's own loop, not here.
    is_requester: bool,
}

/// The responder's side of a message that needs a receive WQE.
fn deliver(side: &mut Side<'_>, r: &Responder, msg: Incoming<'_>) -> Result<(), Fault> {
    let t = Target::Qp(r.qpn);
    if !rq::exists(side.m, t) {
        return Err(Fault::Remote {
            syndrome: CqeSyndrome::RemoteInvalReqErr,
            responder_err: true,
        });
    }
    let posted = rq::peek(side.m, side.dma, t).ok_or(Fault::Rnr)?;
    if let Some(data) = msg.data {
        // Longer than the QP takes: as a receive buffer too short (IBTA: an invalid request).
        let placed = if data.len() as u64 > r.max_msg {
            Err(ScatterError::TooLong)
        } else {
            rq::scatter(side.m, side.dma, r.who, &posted.sges, data)
        };
        if let Err(e) = placed {
            // The responder completes the receive in error and goes to ERR; the requester
            // hears an invalid request (too long) or a remote operational error.
            let (local, remote) = match e {
                ScatterError::TooLong => {
                    (CqeSyndrome::LocalLengthErr, CqeSyndrome::RemoteInvalReqErr)
                }
                ScatterError::Protection => (CqeSyndrome::LocalProtErr, CqeSyndrome::RemoteOpErr),
            };
            rq::fail(side, t, posted.index, local);
            set_err(side, r.qpn, !msg.is_requester);
            return Err(Fault::Remote {
                syndrome: remote,
                responder_err: false,
            });
        }
    }
    rq::consume(side.m, t);
    let Some((cqn, stamp)) = rq::completes_to(side.m, t) else {
        return Ok(());
    };
    let mut c = cq::cqe(msg.opcode, r.qpn, posted.index);
    c.set_byte_cnt(msg.byte_cnt);
    c.set_rqpn(msg.src_qpn & 0xff_ffff);
    c.set_se(msg.se);
    if let Some(imm) = msg.imm {
        c.set_immediate(imm);
    }
    cq::post(side, cqn, stamp, *c.storage());
    Ok(())
}

/// SEND, SEND_IMM, SEND_INVAL: the gathered message lands in the responder's next receive.
pub(super) fn send<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    req: &Requester,
    wqe: &[u8],
    msg: &Message,
) -> Exec {
    let data = gather(local, req, wqe, DS, msg.end)?;
    let is_requester = remote.is_none() && req.remote_qpn == req.qpn;
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    let (opcode, imm) = match SendOpcode::from_raw(msg.opcode.into()) {
        Some(SendOpcode::SendImm) => (CqeOpcode::RespSendImm, Some(msg.imm)),
        Some(SendOpcode::SendInval) => (CqeOpcode::RespSendInv, Some(msg.imm)),
        _ => (CqeOpcode::RespSend, None),
    };
    let len = data.len() as u32;
    deliver(
        side,
        &r,
        Incoming {
            opcode,
            data: Some(&data),
            byte_cnt: len,
            imm,
            se: msg.se,
            src_qpn: req.qpn,
            is_requester,
        },
    )?;
    Ok(len)
}

/// RDMA_WRITE, RDMA_WRITE_IMM: the gathered data goes to raddr through the rkey; with
/// immediate, a receive WQE is consumed too.
pub(super) fn write<'a>(
    local: &mut Side<'a>,
    mut remote: Option<&mut Side<'a>>,
    req: &Requester,
    wqe: &[u8],
    msg: &Message,
) -> Exec {
    let (addr, rkey) = raddr(wqe, msg)?;
    let data = gather(local, req, wqe, 2 * DS, msg.end)?;
    let with_imm = msg.opcode == SendOpcode::RdmaWriteImm.raw();
    let is_requester = remote.is_none() && req.remote_qpn == req.qpn;
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    if !r.rwe {
        return Err(remote_access(true));
    }
    if data.len() as u64 > r.max_msg {
        return Err(too_long());
    }
    let e = mem::resolve(
        side.m,
        rkey,
        r.who,
        addr,
        data.len() as u64,
        Access::RemoteWrite,
    )
    .map_err(|_| remote_access(true))?;
    if with_imm {
        let t = Target::Qp(r.qpn);
        if rq::exists(side.m, t) && rq::peek(side.m, side.dma, t).is_none() {
            return Err(Fault::Rnr);
        }
    }
    if !mem::write(side.dma, &e, &data) {
        side.m.dma_faults += 1;
        return Err(remote_access(true));
    }
    if with_imm {
        deliver(
            side,
            &r,
            Incoming {
                opcode: CqeOpcode::RespWrImm,
                data: None,
                byte_cnt: data.len() as u32,
                imm: Some(msg.imm),
                se: msg.se,
                src_qpn: req.qpn,
                is_requester,
            },
        )?;
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
    let dest = rq::extents(local.m, req.who, &sges, len)
        .map_err(|_| Fault::Local(CqeSyndrome::LocalProtErr))?;
    let side = peer(local, &mut remote);
    let r = responder(side, req.remote_qpn)?;
    if !r.rre {
        return Err(remote_access(true));
    }
    if len > r.max_msg {
        return Err(too_long());
    }
    let e = mem::resolve(side.m, rkey, r.who, addr, len, Access::RemoteRead)
        .map_err(|_| remote_access(true))?;
    let mut data = Vec::new();
    if !mem::read(side.dma, &e, &mut data) {
        side.m.dma_faults += 1;
        return Err(remote_access(true));
    }
    if !mem::write(local.dma, &dest, &data) {
        local.m.dma_faults += 1;
        return Err(Fault::Local(CqeSyndrome::LocalProtErr));
    }
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
