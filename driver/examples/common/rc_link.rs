//! Two model devices' RC QPs connected over RoCE v2 (or the in-memory fabric), as the examples
//! that measure or soak RC traffic set them up: the ends' addresses, a QP sized for a depth,
//! and the RST → INIT → RTR → RTS path toward the other end.

use mlx5_driver::backend::Backend;
use mlx5_driver::cq::Cq;
use mlx5_driver::mr::Access;
use mlx5_driver::qp::{
    Qp, QpConfig, Rst, Rst2init, Rtr2rts, Rtr2rtsOptional, Rts, Transitions as _,
};
use mlx5_driver::roce::{RoceAddress, RocePath};
use mlx5_driver::Hca;
use mlx5_prm::{QpMtu, QpPmState};
use std::net::{IpAddr, Ipv4Addr};

/// A driver error as a message naming what failed.
pub fn err(what: &'static str) -> impl Fn(mlx5_driver::Error) -> String {
    move |e| format!("{what}: {e}")
}

/// The two ends' MAC and IPv4 addresses (their RoCE address at GID index 0).
pub const ENDS: [([u8; 6], Ipv4Addr); 2] = [
    ([2, 0, 0, 0x52, 0, 1], Ipv4Addr::new(10, 82, 0, 1)),
    ([2, 0, 0, 0x52, 0, 2], Ipv4Addr::new(10, 82, 0, 2)),
];

/// Every access right.
pub const ALL: Access = Access {
    local_write: true,
    remote_read: true,
    remote_write: true,
    remote_atomic: true,
};

/// A QP of `hca` with room for `depth` outstanding requests, in RST.
pub fn create<'h, B: Backend>(
    hca: &'h Hca<B>,
    cq: &Cq<'h, B>,
    depth: usize,
) -> Result<Qp<'h, B, Rst>, String> {
    let log = depth.max(2).next_power_of_two().trailing_zeros() as u8;
    let config = QpConfig {
        log_sq_size: log + 1,
        log_rq_size: log + 1,
        log_rq_stride: 1,
    };
    Qp::create(hca, cq, cq, &config).map_err(err("creating a QP"))
}

/// `qp` to RTS toward QP `remote` of end `to` (its RoCE address, GID index 0 of both).
pub fn connect<'h, B: Backend>(
    hca: &'h Hca<B>,
    qp: Qp<'h, B, Rst>,
    remote: u32,
    to: usize,
) -> Result<Qp<'h, B, Rts>, String> {
    let init = Rst2init {
        pkey_index: 0,
        vhca_port_num: 1,
        rre: true,
        rwe: true,
        rae: true,
        pm_state: QpPmState::Migrated,
        counter_set_id: 0,
    };
    let qpn = qp.qpn();
    let qp = qp.rst2init(init).map_err(|(e, _)| format!("INIT: {e}"))?;
    let (mac, ip) = ENDS[to];
    let gid = RoceAddress::v2(IpAddr::V4(ip), mac).gid();
    let log_msg_max = hca.info().caps().log_max_msg();
    let rtr = RocePath::new(gid, mac, 0).init2rtr(qpn, remote, 0, QpMtu::Mtu1k, log_msg_max);
    let qp = qp.init2rtr(rtr).map_err(|(e, _)| format!("RTR: {e}"))?;
    let rts = Rtr2rts {
        next_send_psn: 0,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 4,
        ack_timeout: 14,
        optional: Rtr2rtsOptional::default(),
    };
    qp.rtr2rts(rts).map_err(|(e, _)| format!("RTS: {e}"))
}
