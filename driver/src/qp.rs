//! Reliable-connected queue pairs whose state machine is enforced at compile time.
//!
//! A `Qp<S>` is in state `S` (`Reset`, `Init`, `Rtr`, `Rts`, `Error`); each transition method
//! exists only on the state it starts from, consumes the QP, takes exactly the parameters the
//! spec's transition table (`mlx5_prm::QP_STATE_MACHINE`, from `spec/qp_states.yaml`) requires,
//! and returns the QP in its new state. Error and reset are reachable from any state. A failed
//! transition gives the QP back, unchanged, with the error.
//!
//! ```compile_fail
//! # use mlx5_driver::qp::{Qp, Reset, Rts};
//! // A QP in RESET cannot be moved straight to RTS: there is no such method.
//! fn skip(qp: Qp<Reset>, hca: &mut mlx5_driver::Hca<mlx5_driver::backend::sim::SimBackend>) {
//!     let _ = qp.to_rts(hca, todo!());
//! }
//! ```

use crate::backend::{Backend, DmaAlloc, DmaBuf};
use crate::error::{Error, Result};
use crate::hca::Hca;
use mlx5_prm::cmd::*;
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{
    CreateQpOut, QpMtu, QpPmState, QpRqType, QpServiceType, QueryQpOut, QP_STATE_MACHINE,
};
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

/// A queue pair in state `S`.
pub struct Qp<S> {
    qpn: u32,
    buf: DmaBuf,
    dbrec: DmaBuf,
    config: QpConfig,
    _state: PhantomData<S>,
}

impl<S> Qp<S> {
    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &QpConfig {
        &self.config
    }

    fn into_state<T>(self) -> Qp<T> {
        Qp {
            qpn: self.qpn,
            buf: self.buf,
            dbrec: self.dbrec,
            config: self.config,
            _state: PhantomData,
        }
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
        let qpn = self.qpn;
        self.transition::<Qp2err, ErrorState, B>(hca, |i| i.set_qpn(qpn))
    }

    /// Moves the QP back to RESET from any state.
    pub fn reset<B: Backend>(
        self,
        hca: &mut Hca<B>,
    ) -> std::result::Result<Qp<Reset>, (Error, Qp<S>)> {
        let qpn = self.qpn;
        self.transition::<Qp2rst, Reset, B>(hca, |i| i.set_qpn(qpn))
    }

    /// The state the device reports (QUERY_QP).
    pub fn query_state<B: Backend>(&self, hca: &mut Hca<B>) -> Result<mlx5_prm::QpState> {
        let qpn = self.qpn;
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
        let qpn = self.qpn;
        match hca.run::<DestroyQp>(0, |i| i.set_qpn(qpn)) {
            Ok(_) => {
                let be = hca.backend();
                be.dma().free(self.buf);
                be.dma().free(self.dbrec);
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
            qpn,
            buf,
            dbrec,
            config,
            _state: PhantomData,
        })
    }

    /// RESET → INIT: binds the QP to a port and partition and sets its remote access rights.
    pub fn to_init<B: Backend>(
        self,
        hca: &mut Hca<B>,
        p: &InitParams,
    ) -> std::result::Result<Qp<Init>, (Error, Qp<Reset>)> {
        let qpn = self.qpn;
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
        let qpn = self.qpn;
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
        let qpn = self.qpn;
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

const _: () = assert!(<CreateQpOut<[u8; 16]> as View<[u8; 16]>>::SIZE == 16);
