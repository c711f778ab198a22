//! Work requests: what a send or receive asks for, and posting them (WQE, doorbell record,
//! doorbell, in the PRM's order with a to-device barrier before each hand-over).

use super::{PostedRecv, PostedSend, Qp};
use crate::backend::{Backend, Barriers};
use crate::doorbell::WQEBB;
use crate::error::Error;
use crate::mr::Region;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{
    QpDoorbellRecord, RecvWqe, SendOpcode, WqeAtomicSeg, WqeCompletionMode, WqeCtrlSeg, WqeDataSeg,
    WqeInlineSeg, WqeRaddrSeg,
};

use mlx5_prm::qp_machine::{Init, Machine, Rtr, Rts};
use mlx5_prm::rt::typestate::State;

/// A remote buffer: its address and key at the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr {
    /// The peer's IO address.
    pub addr: u64,
    /// The peer's remote key.
    pub rkey: u32,
}

/// What a send work request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    /// SEND the local region to the peer's next receive.
    Send,
    /// SEND with immediate data.
    SendImm(u32),
    /// RDMA WRITE the local region to the peer.
    Write(RemoteAddr),
    /// RDMA WRITE with immediate data (consumes a receive at the peer).
    WriteImm(RemoteAddr, u32),
    /// RDMA READ from the peer into the local region.
    Read(RemoteAddr),
    /// Atomic compare-and-swap of 8 bytes at the peer; the old value lands in the local region.
    CompareSwap {
        /// The peer's 8 bytes.
        remote: RemoteAddr,
        /// Expected value.
        compare: u64,
        /// New value.
        swap: u64,
    },
    /// Atomic fetch-and-add of 8 bytes at the peer; the old value lands in the local region.
    FetchAdd {
        /// The peer's 8 bytes.
        remote: RemoteAddr,
        /// Value to add.
        add: u64,
    },
}

impl SendOp {
    /// The operation's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            SendOp::Send => "send",
            SendOp::SendImm(_) => "send with immediate",
            SendOp::Write(_) => "rdma write",
            SendOp::WriteImm(..) => "rdma write with immediate",
            SendOp::Read(_) => "rdma read",
            SendOp::CompareSwap { .. } => "compare and swap",
            SendOp::FetchAdd { .. } => "fetch and add",
        }
    }
}

/// A send work request.
#[derive(Debug)]
pub struct SendRequest<'h, B: Backend> {
    /// The caller's identifier, returned with the completion.
    pub id: u64,
    /// The operation.
    pub op: SendOp,
    /// The local buffer: the data to send or write, or where read data or the old atomic value
    /// lands. Ownership passes to the QP until the completion.
    pub region: Option<Region<'h, B>>,
    /// Bytes of `region` to use (from its start); `None` for all of it.
    pub len: Option<usize>,
    /// Ask for a completion (unsignaled requests complete silently, with the next signaled one).
    pub signaled: bool,
    /// Carry these bytes in the WQE itself instead of pointing at `region` (SEND and WRITE
    /// only; at most [`MAX_INLINE`] bytes, or [`MAX_INLINE_RDMA`] for WRITE).
    pub inline: Option<Vec<u8>>,
}

/// Most inline bytes a SEND carries in one WQEBB (64 − control 16 − inline header 4).
pub const MAX_INLINE: usize = 44;
/// Most inline bytes an RDMA WRITE carries in one WQEBB (the remote address takes 16 more).
pub const MAX_INLINE_RDMA: usize = 28;

/// The generated QP states in which receives may be posted: INIT, RTR and RTS (a QP in RST
/// has no receive queue yet; one in ERR flushes). Sealed: implemented here for the spec's
/// state types only.
#[diagnostic::on_unimplemented(
    message = "a QP in state `{Self}` takes no receives",
    label = "receives are posted in INIT, RTR or RTS",
    note = "move the QP on with the generated transitions (`rst2init`, ...) first"
)]
pub trait AcceptsReceives: State<Machine = Machine> + sealed::Sealed {}
impl AcceptsReceives for Init {}
impl AcceptsReceives for Rtr {}
impl AcceptsReceives for Rts {}

/// The generated QP state in which sends may be posted: RTS. Sealed, as [`AcceptsReceives`].
#[diagnostic::on_unimplemented(
    message = "a QP in state `{Self}` takes no sends",
    label = "sends are posted in RTS",
    note = "move the QP on with the generated transitions (`rtr2rts`, ...) first"
)]
pub trait AcceptsSends: State<Machine = Machine> + sealed::Sealed {}
impl AcceptsSends for Rts {}

mod sealed {
    /// Only the driver says which states take work requests.
    pub trait Sealed {}
    impl Sealed for super::Init {}
    impl Sealed for super::Rtr {}
    impl Sealed for super::Rts {}
}

/// A posting refused: the error, and the region back.
pub type Refused<'h, B> = (Error, Option<Region<'h, B>>);

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Posts a receive into `region` (ownership passes to the QP until its completion). A
    /// region of another HCA, or a full receive queue, is refused and the region handed back.
    /// Only in the states that take receives (the bound is on the method, so that calling it
    /// on another state says which states do).
    pub fn post_recv(
        &mut self,
        id: u64,
        region: Region<'h, B>,
    ) -> std::result::Result<(), (Error, Region<'h, B>)>
    where
        S: AcceptsReceives,
    {
        if !std::ptr::eq(region.hca(), self.hca()) {
            let e = Error::ForeignResource {
                what: "region",
                owner: "HCA",
            };
            return Err((e, region));
        }
        let inner = &mut *self.inner;
        let entries = 1usize << inner.config.log_rq_size;
        if inner.work.recvs.len() >= entries {
            let e = Error::QueueFull {
                queue: "receive queue",
                capacity: entries,
            };
            return Err((e, region));
        }
        let stride = 16usize << inner.config.log_rq_stride;
        let at = (inner.work.rq_pi as usize & (entries - 1)) * stride;
        let buf = inner.object.memory(0);
        let mut wqe = RecvWqe::new_unchecked(buf.slice(at, stride));
        wqe.storage_mut().write_bytes(0, &vec![0u8; stride]);
        let mut seg = WqeDataSeg::new_unchecked(buf.slice(at, 16));
        seg.set_byte_count(region.len() as u32);
        seg.set_lkey(region.lkey());
        seg.set_addr(region.addr());
        if stride > 16 {
            // The scatter list ends at a segment with the invalid key.
            let mut end = WqeDataSeg::new_unchecked(buf.slice(at + 16, 16));
            end.set_lkey(mlx5_prm::INVALID_LKEY as u32);
        }
        inner.work.rq_pi = inner.work.rq_pi.wrapping_add(1);
        inner.work.recvs.push_back(PostedRecv { id, region });
        // The WQE must be visible before the counter that hands it over.
        B::Barriers::to_device();
        QpDoorbellRecord::new_unchecked(inner.object.memory(1).slice(0, 8))
            .set_receive_counter(inner.work.rq_pi as u16);
        Ok(())
    }
}

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Posts a send work request: writes the WQE, then the doorbell record, then rings the
    /// doorbell with the WQE's first 8 bytes (the PRM's order, with a to-device barrier before
    /// each hand-over). On error nothing reaches the device and the region comes back: a full
    /// send queue, inline data too long (or for an operation that carries none), a length
    /// beyond the region, or a region of another HCA. Only in RTS (the bound is on the
    /// method, as for [`Qp::post_recv`]).
    pub fn post_send(&mut self, req: SendRequest<'h, B>) -> std::result::Result<(), Refused<'h, B>>
    where
        S: AcceptsSends,
    {
        if let Some(r) = &req.region {
            if !std::ptr::eq(r.hca(), self.hca()) {
                let e = Error::ForeignResource {
                    what: "region",
                    owner: "HCA",
                };
                return Err((e, req.region));
            }
        }
        let rq_bytes = self.rq_bytes();
        let inner = &mut *self.inner;
        let entries = 1usize << inner.config.log_sq_size;
        if inner.work.sends.len() >= entries {
            let e = Error::QueueFull {
                queue: "send queue",
                capacity: entries,
            };
            return Err((e, req.region));
        }
        let (opcode, imm) = match req.op {
            SendOp::Send => (SendOpcode::Send, 0),
            SendOp::SendImm(i) => (SendOpcode::SendImm, i),
            SendOp::Write(_) => (SendOpcode::RdmaWrite, 0),
            SendOp::WriteImm(_, i) => (SendOpcode::RdmaWriteImm, i),
            SendOp::Read(_) => (SendOpcode::RdmaRead, 0),
            SendOp::CompareSwap { .. } => (SendOpcode::AtomicCs, 0),
            SendOp::FetchAdd { .. } => (SendOpcode::AtomicFa, 0),
        };
        let remote = match req.op {
            SendOp::Write(r) | SendOp::WriteImm(r, _) | SendOp::Read(r) => Some(r),
            SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => Some(remote),
            _ => None,
        };
        // Every check before the first byte of the WQE is written.
        if let Some(data) = &req.inline {
            let allowed = matches!(
                req.op,
                SendOp::Send | SendOp::SendImm(_) | SendOp::Write(_) | SendOp::WriteImm(..)
            );
            let max = match (allowed, remote.is_some()) {
                (false, _) => 0,
                (true, true) => MAX_INLINE_RDMA,
                (true, false) => MAX_INLINE,
            };
            if data.len() > max || !allowed {
                let e = Error::InlineTooLong {
                    len: data.len(),
                    max,
                    op: req.op.name(),
                };
                return Err((e, req.region));
            }
        } else if let (Some(region), Some(len)) = (&req.region, req.len) {
            if len > region.len() {
                let e = Error::InvalidArgument {
                    what: "post_send",
                    why: format!("{len} bytes of a {}-byte region", region.len()),
                };
                return Err((e, req.region));
            }
        }
        let index = inner.work.sq_pi as u16;
        let at = rq_bytes + (inner.work.sq_pi as usize & (entries - 1)) * WQEBB;
        let buf = inner.object.memory(0);
        buf.slice(at, WQEBB).write_bytes(0, &[0u8; WQEBB]);
        let mut ds = 1u8; // the control segment
        let mut seg_at = at + 16;
        if let Some(r) = remote {
            let mut raddr = WqeRaddrSeg::new_unchecked(buf.slice(seg_at, 16));
            raddr.set_raddr(r.addr);
            raddr.set_rkey(r.rkey);
            seg_at += 16;
            ds += 1;
        }
        match req.op {
            SendOp::CompareSwap { compare, swap, .. } => {
                let mut a = WqeAtomicSeg::new_unchecked(buf.slice(seg_at, 16));
                a.set_swap_add(swap);
                a.set_compare(compare);
                seg_at += 16;
                ds += 1;
            }
            SendOp::FetchAdd { add, .. } => {
                let mut a = WqeAtomicSeg::new_unchecked(buf.slice(seg_at, 16));
                a.set_swap_add(add);
                seg_at += 16;
                ds += 1;
            }
            _ => {}
        }
        if let Some(data) = &req.inline {
            let mut hdr = WqeInlineSeg::new_unchecked(buf.slice(seg_at, 4));
            hdr.set_inline(true);
            hdr.set_byte_count(data.len() as u16);
            buf.slice(seg_at + 4, data.len()).write_bytes(0, data);
            ds += (4 + data.len()).div_ceil(16) as u8;
        } else if let Some(region) = &req.region {
            let len = req.len.unwrap_or(region.len());
            let mut data = WqeDataSeg::new_unchecked(buf.slice(seg_at, 16));
            data.set_byte_count(len as u32);
            data.set_lkey(region.lkey());
            data.set_addr(region.addr());
            ds += 1;
        }
        let mut ctrl = WqeCtrlSeg::new_unchecked(buf.slice(at, 16));
        ctrl.set_opcode(opcode);
        ctrl.set_wqe_index(index);
        ctrl.set_qpn(inner.qpn);
        ctrl.set_ds(ds);
        ctrl.set_ce(if req.signaled {
            WqeCompletionMode::CqUpdate
        } else {
            WqeCompletionMode::OnError
        });
        ctrl.set_imm(imm);

        inner.work.sq_pi = inner.work.sq_pi.wrapping_add(1);
        inner.work.sends.push_back(PostedSend {
            id: req.id,
            wqe_index: index,
            region: req.region,
        });

        // A BlueFlame copy carries one basic block whole.
        let copy = inner.work.blueflame && usize::from(ds) * 16 <= WQEBB;
        let hca = inner.object.hca();
        inner.work.doorbell.ring(
            hca.backend(),
            inner.object.memory(1).slice(0, 8),
            inner.work.sq_pi as u16,
            inner.object.memory(0).slice(at, WQEBB),
            copy,
        );
        Ok(())
    }
}
