//! Shared by the driver's integration tests: bringing a device up, QP parameters and the
//! walk of a QP to RTS, a timestamped SEND between two QPs, frames, and the command sequence
//! of a bring-up.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::Backend;
use mlx5_driver::cq::Cq;
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::*;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::Command;
use mlx5_prm::{QpMtu, QpPmState};
use mlx5_sim::{Config, Device, Mode};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod qp_params;
pub use qp_params::params;

/// Every access right.
pub const ALL: Access = Access {
    local_write: true,
    remote_read: true,
    remote_write: true,
    remote_atomic: true,
};

/// A model in `mode` and an HCA brought up on it.
pub fn up(mode: Mode) -> (Hca<SimBackend>, Arc<Device>) {
    up_with(
        Config {
            mode,
            ..Config::default()
        },
        &HcaConfig::default(),
    )
}

/// A model built from `config` and an HCA brought up on it with `hca`.
pub fn up_with(config: Config, hca: &HcaConfig) -> (Hca<SimBackend>, Arc<Device>) {
    let (be, dev) = SimBackend::new(config);
    (Hca::bring_up(be, hca).expect("bring-up"), dev)
}

/// Takes a new QP through INIT and RTR to RTS, connected to QP `peer`.
pub fn to_rts<'h, B: Backend>(qp: Qp<'h, B, Rst>, peer: u32) -> Qp<'h, B, Rts> {
    let (init, rtr, rts) = params(peer);
    let qp = qp.rst2init(init).map_err(|(e, _)| e).unwrap();
    let qp = qp.init2rtr(rtr).map_err(|(e, _)| e).unwrap();
    qp.rtr2rts(rts).map_err(|(e, _)| e).unwrap()
}

/// A SEND of 16 bytes from `a` to `b` (connected, both completing to `cq`), a receive posted
/// on `b` first, both with `id`: the raw timestamps of the two completions (at most 2 s
/// waited for them), each completion checked and handed to its QP.
pub fn send_stamped<'h, B: Backend>(
    hca: &'h Hca<B>,
    cq: &mut Cq<'h, B>,
    (a, b): (&mut Qp<'h, B, Rts>, &mut Qp<'h, B, Rts>),
    id: u64,
) -> Vec<u64> {
    b.post_recv(id, Region::register(hca, 4096, ALL).unwrap())
        .map_err(|(e, _)| e)
        .unwrap();
    a.post_send(SendRequest {
        id,
        op: SendOp::Send,
        region: Some(Region::register(hca, 64, ALL).unwrap()),
        len: Some(16),
        signaled: true,
        inline: None,
    })
    .map_err(|(e, _)| e)
    .unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while out.len() < 2 && Instant::now() < deadline {
        cq.poll_timestamped(2 - out.len(), &mut out);
    }
    assert_eq!(out.len(), 2, "the send's and the receive's completions");
    let mut stamps = Vec::new();
    for (c, stamp) in out {
        assert!(c.status.is_ok(), "{c:?}");
        let qp = if c.qpn == a.qpn() { &mut *a } else { &mut *b };
        qp.complete(c).unwrap();
        stamps.push(stamp);
    }
    stamps
}

/// A QP geometry: `1 << log` WQEs each way, two scatter entries per receive.
pub fn qp_config(log: u8) -> QpConfig {
    QpConfig {
        log_sq_size: log,
        log_rq_size: log,
        log_rq_stride: 1,
    }
}

pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa];
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb];

/// A frame to `dst` of `len` bytes carrying `seq`.
pub fn frame(dst: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&MAC_A);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes()); // local experimental ethertype
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f.iter_mut().enumerate().skip(18) {
        *b = (seq as usize + i) as u8;
    }
    f
}

/// `(opcode, op_mod)` of every command bring-up sends, in order.
pub fn bring_up_sequence() -> Vec<(u16, u16)> {
    vec![
        (EnableHca::OPCODE, 0),
        (QueryIssi::OPCODE, 0),
        (SetIssi::OPCODE, 0),
        (QueryPages::OPCODE, 1),
        (ManagePages::OPCODE, 1),
        (QueryHcaCap::OPCODE, 0),
        (QueryHcaCap::OPCODE, 1),
        (SetHcaCap::OPCODE, 0),
        (QueryHcaCap::OPCODE, 1),
        (QueryPages::OPCODE, 2),
        (ManagePages::OPCODE, 1),
        (InitHca::OPCODE, 0),
        (QueryPages::OPCODE, 3),
        (ManagePages::OPCODE, 1),
        (SetDriverVersion::OPCODE, 0),
        (AllocUar::OPCODE, 0),
        (CreateEq::OPCODE, 0),
        (AllocPd::OPCODE, 0),
        (AllocTransportDomain::OPCODE, 0),
        (QuerySpecialContexts::OPCODE, 0),
    ]
}
