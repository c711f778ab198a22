//! Reliable-connected queue pairs whose state machine is enforced at compile time.
//!
//! A `Qp<S>` is in state `S` (`Reset`, `Init`, `Rtr`, `Rts`, `Error`); each transition method
//! exists only on the state it starts from, consumes the QP, takes exactly the parameters the
//! spec's transition table (`mlx5_prm::QP_STATE_MACHINE`, from `spec/qp_states.yaml`) requires,
//! and returns the QP in its new state. Error and reset are reachable from any state. A failed
//! transition gives the QP back, unchanged, with the error.
//!
//! ```no_run
//! # use mlx5_driver::qp::{Qp, Rtr};
//! // From RTR, the move to RTS exists.
//! fn step(qp: Qp<Rtr>, hca: &mut mlx5_driver::Hca<mlx5_driver::backend::sim::SimBackend>) {
//!     let _ = qp.to_rts(hca, todo!());
//! }
//! ```
//!
//! ```compile_fail,E0599
//! # use mlx5_driver::qp::{Qp, Reset, Rts};
//! // A QP in RESET cannot be moved straight to RTS: there is no such method.
//! fn skip(qp: Qp<Reset>, hca: &mut mlx5_driver::Hca<mlx5_driver::backend::sim::SimBackend>) {
//!     let _ = qp.to_rts(hca, todo!());
//! }
//! ```

use crate::backend::{Backend, Barriers, DmaAlloc, DmaBuf};
use crate::cq::Completion;
use crate::doorbell::{SendDoorbell, WQEBB};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::mr::Region;
use mlx5_prm::cmd::*;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{
    CqeOpcode, QpDoorbellRecord, RecvWqe, SendOpcode, WqeAtomicSeg, WqeCompletionMode, WqeCtrlSeg,
    WqeDataSeg, WqeInlineSeg, WqeRaddrSeg,
};
use mlx5_prm::{
    CreateQpOut, QpMtu, QpPmState, QpRqType, QpServiceType, QueryQpOut, QP_STATE_MACHINE,
};
use std::collections::VecDeque;
use std::marker::PhantomData;

/// The QP is in RESET.
pub struct Reset;
/// The QP is in INIT.
pub struct Init;
/// The QP is ready to receive.
pub struct Rtr;
/// The QP is ready to send.
pub struct Rts;
/// The QP is in ERROR.
pub struct ErrorState;

/// Geometry and completion queues of a new QP.
#[derive(Debug, Clone)]
pub struct QpConfig {
    /// log2 of the send queue's WQEBBs (64 bytes each).
    pub log_sq_size: u8,
    /// log2 of the receive queue's entries.
    pub log_rq_size: u8,
    /// log2 of a receive entry's size in 16-byte units (scatter entries per receive).
    pub log_rq_stride: u8,
    /// CQ for send completions.
    pub send_cq: u32,
    /// CQ for receive completions.
    pub recv_cq: u32,
}

/// Remote access rights of the QP (the responder side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoteAccess {
    /// Remote reads.
    pub read: bool,
    /// Remote writes.
    pub write: bool,
    /// Remote atomics.
    pub atomic: bool,
}

/// RESET → INIT: what the transition table requires.
#[derive(Debug, Clone)]
pub struct InitParams {
    /// Port, from 1.
    pub port: u8,
    /// Partition key index.
    pub pkey_index: u16,
    /// Remote access rights.
    pub access: RemoteAccess,
}

/// The RoCE path to the peer.
#[derive(Debug, Clone)]
pub struct RocePath {
    /// The peer's MAC address.
    pub rmac: [u8; 6],
    /// The peer's GID.
    pub rgid: [u8; 16],
    /// Index of our source GID.
    pub src_addr_index: u8,
    /// IP hop limit.
    pub hop_limit: u8,
    /// Our port, from 1.
    pub port: u8,
}

/// INIT → RTR: what the transition table requires.
#[derive(Debug, Clone)]
pub struct RtrParams {
    /// Path MTU.
    pub mtu: QpMtu,
    /// log2 of the largest message.
    pub log_msg_max: u8,
    /// The peer's QP number.
    pub remote_qpn: u32,
    /// First PSN expected from the peer.
    pub next_rcv_psn: u32,
    /// log2 of the RDMA reads and atomics the peer may have outstanding here.
    pub log_rra_max: u8,
    /// RNR NAK timer code.
    pub min_rnr_nak: u8,
    /// The path to the peer.
    pub path: RocePath,
}

/// RTR → RTS: what the transition table requires.
#[derive(Debug, Clone)]
pub struct RtsParams {
    /// First PSN to send.
    pub next_send_psn: u32,
    /// Retries on timeout.
    pub retry_count: u8,
    /// Retries on receiver-not-ready (7 = forever).
    pub rnr_retry: u8,
    /// log2 of the RDMA reads and atomics this QP may have outstanding at the peer.
    pub log_sra_max: u8,
    /// Local ACK timeout code (4.096 µs × 2^n).
    pub ack_timeout: u8,
}

/// A queue pair in state `S`. (Boxed inside, so moving it between states is cheap.)
pub struct Qp<S> {
    inner: Box<Inner>,
    _state: PhantomData<S>,
}

/// What a QP is, whatever its state.
struct Inner {
    qpn: u32,
    buf: DmaBuf,
    dbrec: DmaBuf,
    config: QpConfig,
    work: Work,
}

/// The rings' producer counters and the work requests the device holds.
struct Work {
    /// The send doorbell (UAR page, next BlueFlame half).
    doorbell: SendDoorbell,
    /// Send WQEBBs posted (wraps at 16 bits in the doorbell record).
    sq_pi: u32,
    /// Receive WQEs posted.
    rq_pi: u32,
    /// Copy single-WQEBB requests whole into the BlueFlame register (saves the device a read).
    blueflame: bool,
    sends: VecDeque<PostedSend>,
    recvs: VecDeque<PostedRecv>,
}

struct PostedSend {
    id: u64,
    wqe_index: u16,
    region: Option<Region>,
}

struct PostedRecv {
    id: u64,
    region: Region,
}

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

/// A send work request.
#[derive(Debug)]
pub struct SendRequest {
    /// The caller's identifier, returned with the completion.
    pub id: u64,
    /// The operation.
    pub op: SendOp,
    /// The local buffer: the data to send or write, or where read data or the old atomic value
    /// lands. Ownership passes to the QP until the completion.
    pub region: Option<Region>,
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

/// A finished work request: its identifier, its buffer back, and how it ended.
#[derive(Debug)]
pub struct Done {
    /// The caller's identifier.
    pub id: u64,
    /// The buffer, back in the caller's hands.
    pub region: Option<Region>,
    /// The completion (`None` for unsignaled requests finished by a later one).
    pub completion: Option<Completion>,
}

impl<S> Qp<S> {
    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.inner.qpn
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &QpConfig {
        &self.inner.config
    }

    fn into_state<T>(self) -> Qp<T> {
        Qp {
            inner: self.inner,
            _state: PhantomData,
        }
    }

    fn rq_bytes(&self) -> usize {
        (1usize << self.inner.config.log_rq_size) * (16usize << self.inner.config.log_rq_stride)
    }

    /// Hands a completion of this QP to it: returns the finished work requests (a signaled
    /// send also finishes the unsignaled ones posted before it) with their buffers. Values the
    /// device wrote are checked: a completion for a WQE the QP does not have outstanding is an
    /// error, not a guess.
    pub fn complete(&mut self, c: Completion) -> Result<Vec<Done>> {
        if c.qpn != self.inner.qpn {
            return Err(Error::BadDeviceValue {
                command: "cqe",
                what: format!(
                    "completion for QP 0x{:x} handed to QP 0x{:x}",
                    c.qpn, self.inner.qpn
                ),
            });
        }
        let requester = c.opcode == CqeOpcode::Req.raw() || c.opcode == CqeOpcode::ReqErr.raw();
        if requester {
            let Some(pos) = self
                .inner
                .work
                .sends
                .iter()
                .position(|p| p.wqe_index == c.wqe_counter)
            else {
                return Err(Error::BadDeviceValue {
                    command: "cqe",
                    what: format!(
                        "send completion for WQE {} which is not outstanding",
                        c.wqe_counter
                    ),
                });
            };
            let mut done: Vec<Done> = self
                .inner
                .work
                .sends
                .drain(..=pos)
                .map(|p| Done {
                    id: p.id,
                    region: p.region,
                    completion: None,
                })
                .collect();
            if let Some(last) = done.last_mut() {
                last.completion = Some(c);
            }
            Ok(done)
        } else {
            // Receives complete in the order they were posted.
            let Some(p) = self.inner.work.recvs.pop_front() else {
                return Err(Error::BadDeviceValue {
                    command: "cqe",
                    what: "receive completion with no receive outstanding".into(),
                });
            };
            if c.status.is_ok() && c.byte_cnt as usize > p.region.len() {
                return Err(Error::BadDeviceValue {
                    command: "cqe",
                    what: format!(
                        "received {} bytes into a {}-byte buffer",
                        c.byte_cnt,
                        p.region.len()
                    ),
                });
            }
            Ok(vec![Done {
                id: p.id,
                region: Some(p.region),
                completion: Some(c),
            }])
        }
    }

    /// Turns BlueFlame copies on or off: with it on, a request that fits one WQEBB is copied
    /// whole to the BlueFlame register instead of ringing with its first 8 bytes.
    pub fn set_blueflame(&mut self, on: bool) {
        self.inner.work.blueflame = on;
    }

    /// Sends outstanding and receives posted.
    pub fn outstanding(&self) -> (usize, usize) {
        (self.inner.work.sends.len(), self.inner.work.recvs.len())
    }

    /// Runs a transition command; on failure the QP comes back unchanged.
    fn transition<C, T, B>(
        self,
        hca: &mut Hca<B>,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> std::result::Result<Qp<T>, (Error, Qp<S>)>
    where
        C: Command<OpMod = u16>,
        B: Backend,
    {
        debug_assert!(
            QP_STATE_MACHINE.by_opcode(C::OPCODE).is_some(),
            "{} is a QP transition",
            C::NAME
        );
        match hca.run::<C>(0, fill) {
            Ok(_) => Ok(self.into_state()),
            Err(e) => Err((e, self)),
        }
    }

    /// Moves the QP to ERROR from any state: outstanding work completes with flush errors.
    pub fn to_error<B: Backend>(
        self,
        hca: &mut Hca<B>,
    ) -> std::result::Result<Qp<ErrorState>, (Error, Qp<S>)> {
        let qpn = self.inner.qpn;
        self.transition::<Qp2err, ErrorState, B>(hca, |i| i.set_qpn(qpn))
    }

    /// Moves the QP back to RESET from any state.
    pub fn reset<B: Backend>(
        self,
        hca: &mut Hca<B>,
    ) -> std::result::Result<Qp<Reset>, (Error, Qp<S>)> {
        let qpn = self.inner.qpn;
        self.transition::<Qp2rst, Reset, B>(hca, |i| i.set_qpn(qpn))
    }

    /// The state the device reports (QUERY_QP).
    pub fn query_state<B: Backend>(&self, hca: &mut Hca<B>) -> Result<mlx5_prm::QpState> {
        let qpn = self.inner.qpn;
        let out = hca.run::<QueryQp>(0, |i| i.set_qpn(qpn))?;
        let view = QueryQpOut::new_checked(&out[..])?;
        let ctx = view.qpc();
        ctx.state().map_err(|e| Error::BadDeviceValue {
            command: QueryQp::NAME,
            what: e.to_string(),
        })
    }

    /// Destroys the QP and frees its buffers; on failure the QP comes back with the error.
    pub fn destroy<B: Backend>(self, hca: &mut Hca<B>) -> std::result::Result<(), (Error, Qp<S>)> {
        let qpn = self.inner.qpn;
        match hca.run::<DestroyQp>(0, |i| i.set_qpn(qpn)) {
            Ok(_) => {
                let be = hca.backend();
                let inner = *self.inner;
                be.dma().free(inner.buf);
                be.dma().free(inner.dbrec);
                Ok(())
            }
            Err(e) => Err((e, self)),
        }
    }
}

impl Qp<Reset> {
    /// Creates an RC QP: a receive queue followed by a send queue in one page-aligned buffer,
    /// and a doorbell record.
    pub fn create<B: Backend>(hca: &mut Hca<B>, config: QpConfig) -> Result<Qp<Reset>> {
        let rq_bytes = (1usize << config.log_rq_size) * (16usize << config.log_rq_stride);
        let sq_bytes = (1usize << config.log_sq_size) * 64;
        let bytes = (rq_bytes + sq_bytes).div_ceil(4096) * 4096;
        let be = hca.backend();
        let buf = be.dma().alloc(bytes, 4096)?;
        let dbrec = match be.dma().alloc(64, 64) {
            Ok(d) => d,
            Err(e) => {
                be.dma().free(buf);
                return Err(e);
            }
        };
        let pages: Vec<u64> = (0..bytes / 4096)
            .map(|p| buf.iova() + (p * 4096) as u64)
            .collect();
        let (pd, uar, dbr) = (hca.info().pd, hca.info().uar, dbrec.iova());
        let c = config.clone();
        let result = hca.run_extra::<CreateQp>(0, pages.len() * 8, 0, |i| {
            let mut q = i.qpc_mut();
            q.set_st(QpServiceType::Rc);
            q.set_pm_state(QpPmState::Migrated);
            q.set_pd(pd);
            q.set_uar_page(uar);
            q.set_log_sq_size(c.log_sq_size);
            q.set_log_rq_size(c.log_rq_size);
            q.set_log_rq_stride(c.log_rq_stride);
            q.set_rq_type(QpRqType::Regular);
            q.set_cqn_snd(c.send_cq);
            q.set_cqn_rcv(c.recv_cq);
            q.set_log_page_size(0);
            q.set_dbr_addr(dbr);
            for (k, p) in pages.iter().enumerate() {
                let _ = i.set_pas(k, *p);
            }
        });
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                let be = hca.backend();
                be.dma().free(buf);
                be.dma().free(dbrec);
                return Err(e);
            }
        };
        let qpn = CreateQpOut::new_checked(&out[..])?.qpn();
        Ok(Qp {
            inner: Box::new(Inner {
                qpn,
                buf,
                dbrec,
                config,
                work: Work {
                    doorbell: SendDoorbell::new(uar),
                    sq_pi: 0,
                    rq_pi: 0,
                    blueflame: false,
                    sends: VecDeque::new(),
                    recvs: VecDeque::new(),
                },
            }),
            _state: PhantomData,
        })
    }

    /// RESET → INIT: binds the QP to a port and partition and sets its remote access rights.
    pub fn to_init<B: Backend>(
        self,
        hca: &mut Hca<B>,
        p: &InitParams,
    ) -> std::result::Result<Qp<Init>, (Error, Qp<Reset>)> {
        let qpn = self.inner.qpn;
        self.transition::<Rst2initQp, Init, B>(hca, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.set_pm_state(QpPmState::Migrated);
            q.set_rre(p.access.read);
            q.set_rwe(p.access.write);
            q.set_rae(p.access.atomic);
            let mut path = q.primary_address_path_mut();
            path.set_pkey_index(p.pkey_index);
            path.set_vhca_port_num(p.port);
        })
    }
}

impl Qp<Init> {
    /// INIT → RTR: connects the receive side to the peer.
    pub fn to_rtr<B: Backend>(
        self,
        hca: &mut Hca<B>,
        p: &RtrParams,
    ) -> std::result::Result<Qp<Rtr>, (Error, Qp<Init>)> {
        let qpn = self.inner.qpn;
        self.transition::<Init2rtrQp, Rtr, B>(hca, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.set_mtu(p.mtu);
            q.set_log_msg_max(p.log_msg_max);
            q.set_remote_qpn(p.remote_qpn);
            q.set_next_rcv_psn(p.next_rcv_psn);
            q.set_log_rra_max(p.log_rra_max);
            q.set_min_rnr_nak(p.min_rnr_nak);
            let mut path = q.primary_address_path_mut();
            path.set_rmac_47_32(u16::from_be_bytes([p.path.rmac[0], p.path.rmac[1]]));
            path.set_rmac_31_0(u32::from_be_bytes([
                p.path.rmac[2],
                p.path.rmac[3],
                p.path.rmac[4],
                p.path.rmac[5],
            ]));
            path.set_rgid_rip(&p.path.rgid);
            path.set_src_addr_index(p.path.src_addr_index);
            path.set_hop_limit(p.path.hop_limit);
            path.set_vhca_port_num(p.path.port);
        })
    }
}

impl Qp<Rtr> {
    /// RTR → RTS: starts the send side.
    pub fn to_rts<B: Backend>(
        self,
        hca: &mut Hca<B>,
        p: &RtsParams,
    ) -> std::result::Result<Qp<Rts>, (Error, Qp<Rtr>)> {
        let qpn = self.inner.qpn;
        self.transition::<Rtr2rtsQp, Rts, B>(hca, |i| {
            i.set_qpn(qpn);
            let mut q = i.qpc_mut();
            q.set_next_send_psn(p.next_send_psn);
            q.set_retry_count(p.retry_count);
            q.set_rnr_retry(p.rnr_retry);
            q.set_log_sra_max(p.log_sra_max);
            q.primary_address_path_mut().set_ack_timeout(p.ack_timeout);
        })
    }
}

/// States in which receives may be posted (INIT and later, short of ERROR).
pub trait AcceptsReceives {}
impl AcceptsReceives for Init {}
impl AcceptsReceives for Rtr {}
impl AcceptsReceives for Rts {}

impl<S: AcceptsReceives> Qp<S> {
    /// Posts a receive into `region` (ownership passes to the QP until its completion).
    pub fn post_recv<B: Backend>(
        &mut self,
        _backend: &B,
        id: u64,
        region: Region,
    ) -> std::result::Result<(), (Error, Region)> {
        let entries = 1usize << self.inner.config.log_rq_size;
        if self.inner.work.recvs.len() >= entries {
            return Err((
                Error::BadDeviceValue {
                    command: "post_recv",
                    what: format!("receive queue full ({entries} posted)"),
                },
                region,
            ));
        }
        let stride = 16usize << self.inner.config.log_rq_stride;
        let at = (self.inner.work.rq_pi as usize & (entries - 1)) * stride;
        let mut wqe = RecvWqe::new_unchecked(self.inner.buf.slice(at, stride));
        wqe.storage_mut().write_bytes(0, &vec![0u8; stride]);
        let mut seg = WqeDataSeg::new_unchecked(self.inner.buf.slice(at, 16));
        seg.set_byte_count(region.len() as u32);
        seg.set_lkey(region.lkey());
        seg.set_addr(region.addr());
        if stride > 16 {
            // The scatter list ends at a segment with the invalid key.
            let mut end = WqeDataSeg::new_unchecked(self.inner.buf.slice(at + 16, 16));
            end.set_lkey(mlx5_prm::INVALID_LKEY as u32);
        }
        self.inner.work.rq_pi = self.inner.work.rq_pi.wrapping_add(1);
        self.inner.work.recvs.push_back(PostedRecv { id, region });
        // The WQE must be visible before the counter that hands it over.
        B::Barriers::to_device();
        QpDoorbellRecord::new_unchecked(self.inner.dbrec.slice(0, 8))
            .set_receive_counter(self.inner.work.rq_pi as u16);
        Ok(())
    }
}

impl Qp<Rts> {
    /// Posts a send work request: writes the WQE, then the doorbell record, then rings the
    /// doorbell with the WQE's first 8 bytes (the PRM's order, with a to-device barrier before
    /// each hand-over). On error the region comes back.
    pub fn post_send<B: Backend>(
        &mut self,
        be: &B,
        req: SendRequest,
    ) -> std::result::Result<(), (Error, Option<Region>)> {
        let entries = 1usize << self.inner.config.log_sq_size;
        if self.inner.work.sends.len() >= entries {
            return Err((
                Error::BadDeviceValue {
                    command: "post_send",
                    what: format!("send queue full ({entries} outstanding)"),
                },
                req.region,
            ));
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
        let index = self.inner.work.sq_pi as u16;
        let at = self.rq_bytes() + (self.inner.work.sq_pi as usize & (entries - 1)) * WQEBB;
        self.inner
            .buf
            .slice(at, WQEBB)
            .write_bytes(0, &[0u8; WQEBB]);
        let mut ds = 1u8; // the control segment
        let mut seg_at = at + 16;
        let remote = match req.op {
            SendOp::Write(r) | SendOp::WriteImm(r, _) | SendOp::Read(r) => Some(r),
            SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => Some(remote),
            _ => None,
        };
        if let Some(r) = remote {
            let mut raddr = WqeRaddrSeg::new_unchecked(self.inner.buf.slice(seg_at, 16));
            raddr.set_raddr(r.addr);
            raddr.set_rkey(r.rkey);
            seg_at += 16;
            ds += 1;
        }
        match req.op {
            SendOp::CompareSwap { compare, swap, .. } => {
                let mut a = WqeAtomicSeg::new_unchecked(self.inner.buf.slice(seg_at, 16));
                a.set_swap_add(swap);
                a.set_compare(compare);
                seg_at += 16;
                ds += 1;
            }
            SendOp::FetchAdd { add, .. } => {
                let mut a = WqeAtomicSeg::new_unchecked(self.inner.buf.slice(seg_at, 16));
                a.set_swap_add(add);
                seg_at += 16;
                ds += 1;
            }
            _ => {}
        }
        if let Some(data) = &req.inline {
            let max = if remote.is_some() {
                MAX_INLINE_RDMA
            } else {
                MAX_INLINE
            };
            let allowed = matches!(
                req.op,
                SendOp::Send | SendOp::SendImm(_) | SendOp::Write(_) | SendOp::WriteImm(..)
            );
            if data.len() > max || !allowed {
                return Err((
                    Error::BadDeviceValue {
                        command: "post_send",
                        what: format!(
                            "{} inline bytes for {:?} (at most {max}, SEND or WRITE only)",
                            data.len(),
                            req.op
                        ),
                    },
                    req.region,
                ));
            }
            let mut hdr = WqeInlineSeg::new_unchecked(self.inner.buf.slice(seg_at, 4));
            hdr.set_inline(true);
            hdr.set_byte_count(data.len() as u16);
            self.inner
                .buf
                .slice(seg_at + 4, data.len())
                .write_bytes(0, data);
            ds += (4 + data.len()).div_ceil(16) as u8;
        } else if let Some(region) = &req.region {
            let len = req.len.unwrap_or(region.len()).min(region.len());
            let mut data = WqeDataSeg::new_unchecked(self.inner.buf.slice(seg_at, 16));
            data.set_byte_count(len as u32);
            data.set_lkey(region.lkey());
            data.set_addr(region.addr());
            ds += 1;
        }
        let mut ctrl = WqeCtrlSeg::new_unchecked(self.inner.buf.slice(at, 16));
        ctrl.set_opcode(opcode);
        ctrl.set_wqe_index(index);
        ctrl.set_qpn(self.inner.qpn);
        ctrl.set_ds(ds);
        ctrl.set_ce(if req.signaled {
            WqeCompletionMode::CqUpdate
        } else {
            WqeCompletionMode::OnError
        });
        ctrl.set_imm(imm);

        self.inner.work.sq_pi = self.inner.work.sq_pi.wrapping_add(1);
        self.inner.work.sends.push_back(PostedSend {
            id: req.id,
            wqe_index: index,
            region: req.region,
        });

        // A BlueFlame copy carries one basic block whole.
        let copy = self.inner.work.blueflame && usize::from(ds) * 16 <= WQEBB;
        let inner = &mut *self.inner;
        inner.work.doorbell.ring(
            be,
            inner.dbrec.slice(0, 8),
            inner.work.sq_pi as u16,
            inner.buf.slice(at, WQEBB),
            copy,
        );
        Ok(())
    }
}

const _: () = assert!(<CreateQpOut<[u8; 16]> as View<[u8; 16]>>::SIZE == 16);

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::cq::Cq;
    use crate::mr::{Access, Region};
    use crate::HcaConfig;
    use mlx5_prm::rt::Bytes;

    /// Brings a QP to RTS on the model (control path only) and returns everything.
    fn rts() -> (
        Hca<SimBackend>,
        std::sync::Arc<mlx5_sim::Device>,
        Cq,
        Qp<Rts>,
    ) {
        let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
        let mut hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
        let eqn = hca.info().eqn;
        let cq = Cq::create(&mut hca, 6, eqn).unwrap();
        let config = QpConfig {
            log_sq_size: 4,
            log_rq_size: 4,
            log_rq_stride: 1,
            send_cq: cq.cqn(),
            recv_cq: cq.cqn(),
        };
        let qp = Qp::create(&mut hca, config).unwrap();
        let qpn = qp.qpn();
        let qp = qp
            .to_init(
                &mut hca,
                &InitParams {
                    port: 1,
                    pkey_index: 0,
                    access: RemoteAccess::default(),
                },
            )
            .map_err(|(e, _)| e)
            .unwrap();
        let rtr = RtrParams {
            mtu: QpMtu::Mtu1k,
            log_msg_max: 20,
            remote_qpn: qpn,
            next_rcv_psn: 0,
            log_rra_max: 1,
            min_rnr_nak: 1,
            path: RocePath {
                rmac: [2, 0, 0, 0, 0, 1],
                rgid: [0; 16],
                src_addr_index: 0,
                hop_limit: 64,
                port: 1,
            },
        };
        let qp = qp.to_rtr(&mut hca, &rtr).map_err(|(e, _)| e).unwrap();
        let rts = RtsParams {
            next_send_psn: 0,
            retry_count: 7,
            rnr_retry: 7,
            log_sra_max: 1,
            ack_timeout: 14,
        };
        let qp = qp.to_rts(&mut hca, &rts).map_err(|(e, _)| e).unwrap();
        (hca, dev, cq, qp)
    }

    #[test]
    fn a_send_wqe_is_laid_out_as_the_prm_says_and_rung_in_order() {
        let (mut hca, dev, _cq, mut qp) = rts();
        let region = Region::register(
            &mut hca,
            256,
            Access {
                local_write: true,
                ..Access::default()
            },
        )
        .unwrap();
        let (lkey, addr) = (region.lkey(), region.addr());
        let remote = RemoteAddr {
            addr: 0x1234_5000,
            rkey: 0x77,
        };
        qp.post_send(
            hca.backend(),
            SendRequest {
                id: 7,
                op: SendOp::Write(remote),
                region: Some(region),
                len: Some(100),
                signaled: true,
                inline: None,
            },
        )
        .map_err(|(e, _)| e)
        .unwrap();
        let at = qp.rq_bytes();
        let ctrl = WqeCtrlSeg::new_unchecked(qp.inner.buf.slice(at, 16));
        assert_eq!(ctrl.opcode(), Ok(SendOpcode::RdmaWrite));
        assert_eq!((ctrl.wqe_index(), ctrl.qpn(), ctrl.ds()), (0, qp.qpn(), 3));
        assert_eq!(ctrl.ce(), Ok(WqeCompletionMode::CqUpdate));
        let raddr = WqeRaddrSeg::new_unchecked(qp.inner.buf.slice(at + 16, 16));
        assert_eq!((raddr.raddr(), raddr.rkey()), (0x1234_5000, 0x77));
        let data = WqeDataSeg::new_unchecked(qp.inner.buf.slice(at + 32, 16));
        assert_eq!(
            (data.byte_count(), data.lkey(), data.addr()),
            (100, lkey, addr)
        );
        // The doorbell record holds the new producer counter; the UAR write carries the WQE's
        // first 8 bytes.
        assert_eq!(qp.inner.dbrec.slice(0, 8).read_be32(4) & 0xffff, 1);
        assert_eq!(
            dev.last_send_doorbell(hca.info().uar),
            Some(qp.inner.buf.slice(at, 8).read_be64(0))
        );
        assert_eq!(qp.outstanding(), (1, 0));
    }

    #[test]
    fn completions_are_checked_before_buffers_come_back() {
        let (mut hca, _dev, _cq, mut qp) = rts();
        for id in 0..3 {
            let region = Region::register(&mut hca, 64, Access::default()).unwrap();
            let req = SendRequest {
                id,
                op: SendOp::Send,
                region: Some(region),
                len: None,
                signaled: id == 2,
                inline: None,
            };
            qp.post_send(hca.backend(), req)
                .map_err(|(e, _)| e)
                .unwrap();
        }
        let c = Completion {
            opcode: CqeOpcode::Req.raw(),
            qpn: qp.qpn(),
            wqe_counter: 9,
            byte_cnt: 0,
            immediate: 0,
            status: Ok(()),
        };
        assert!(
            qp.complete(c).is_err(),
            "a WQE index that is not outstanding is refused"
        );
        let other = Completion {
            qpn: qp.qpn() + 1,
            wqe_counter: 2,
            ..c
        };
        assert!(
            qp.complete(other).is_err(),
            "another QP's completion is refused"
        );
        // The signaled third request finishes the two unsignaled ones before it.
        let done = qp
            .complete(Completion {
                wqe_counter: 2,
                ..c
            })
            .unwrap();
        assert_eq!(done.iter().map(|d| d.id).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(done.iter().all(|d| d.region.is_some()));
        assert!(done[2].completion.is_some() && done[0].completion.is_none());
        assert_eq!(qp.outstanding(), (0, 0));
        let recv = Completion {
            opcode: CqeOpcode::RespSend.raw(),
            ..c
        };
        assert!(
            qp.complete(recv).is_err(),
            "a receive completion with nothing posted is refused"
        );
    }
}
