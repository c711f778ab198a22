//! The QP's states as types and its transitions: each method exists only on the state it
//! starts from, consumes the QP, takes exactly the parameters the spec's transition table
//! (`mlx5_prm::QP_STATE_MACHINE`, from `spec/qp_states.yaml`) requires, and returns the QP in
//! its new state; a refused transition gives the QP back unchanged, with the error.
//!
//! This file is the one place that maps a transition to its command and the fields it writes
//! (`transition::<Command, Target>(fill)`), so state types and methods generated from the spec
//! can replace the hand-written ones here without touching the rest of the QP.

use super::Qp;
use crate::backend::Backend;
use crate::error::Error;
use mlx5_prm::cmd::*;
use mlx5_prm::{QpMtu, QpPmState};

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

/// The result of a transition: the QP in its new state, or the error and the QP unchanged.
pub type Moved<'h, B, From, To> = std::result::Result<Qp<'h, B, To>, (Error, Qp<'h, B, From>)>;

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

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Moves the QP to ERROR from any state: outstanding work completes with flush errors.
    pub fn to_error(self) -> Moved<'h, B, S, ErrorState> {
        let qpn = self.qpn();
        self.transition::<Qp2err, ErrorState>(|i| i.set_qpn(qpn))
    }

    /// Moves the QP back to RESET from any state.
    pub fn reset(self) -> Moved<'h, B, S, Reset> {
        let qpn = self.qpn();
        self.transition::<Qp2rst, Reset>(|i| i.set_qpn(qpn))
    }
}

impl<'h, B: Backend> Qp<'h, B, Reset> {
    /// RESET → INIT: binds the QP to a port and partition and sets its remote access rights.
    pub fn to_init(self, p: &InitParams) -> Moved<'h, B, Reset, Init> {
        let qpn = self.qpn();
        self.transition::<Rst2initQp, Init>(|i| {
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

impl<'h, B: Backend> Qp<'h, B, Init> {
    /// INIT → RTR: connects the receive side to the peer.
    pub fn to_rtr(self, p: &RtrParams) -> Moved<'h, B, Init, Rtr> {
        let qpn = self.qpn();
        self.transition::<Init2rtrQp, Rtr>(|i| {
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

impl<'h, B: Backend> Qp<'h, B, Rtr> {
    /// RTR → RTS: starts the send side.
    pub fn to_rts(self, p: &RtsParams) -> Moved<'h, B, Rtr, Rts> {
        let qpn = self.qpn();
        self.transition::<Rtr2rtsQp, Rts>(|i| {
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
