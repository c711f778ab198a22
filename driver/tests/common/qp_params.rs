//! The three transitions' arguments (generated from the spec's state machine) for an RC QP
//! on the model's port connected to `remote_qpn`: every remote access on, 1 KiB path MTU,
//! seven retries. Included by path (`#[path]`) into `tests/common`, `tests/forged` (shared
//! with the `forged_device` fuzz target) and the crate's own `qp/post/tests.rs`, which name
//! the driver differently (`mlx5_driver` or `crate`): the including module brings the types
//! (`Rst2init`, `Init2rtr`, `Rtr2rts`, their `…Optional`, `QpMtu`, `QpPmState`) and
//! `rmac_fields` into scope.

use super::*;

/// See the module's documentation.
pub fn params(remote_qpn: u32) -> (Rst2init, Init2rtr, Rtr2rts) {
    let init = Rst2init {
        pkey_index: 0,
        vhca_port_num: 1,
        rre: true,
        rwe: true,
        rae: true,
        pm_state: QpPmState::Migrated,
        counter_set_id: 0,
    };
    let (rmac_47_32, rmac_31_0) = rmac_fields([2, 0, 0, 0, 0, 1]);
    let rtr = Init2rtr {
        mtu: QpMtu::Mtu1k,
        log_msg_max: 20,
        remote_qpn,
        next_rcv_psn: 0,
        log_rra_max: 2,
        min_rnr_nak: 1,
        rmac_47_32,
        rmac_31_0,
        rgid_rip: [0; 16],
        src_addr_index: 0,
        hop_limit: 64,
        tclass: 0,
        flow_label: 0,
        udp_sport: 0xc000,
        dscp: 0,
        eth_prio: 0,
        vhca_port_num: 1,
        optional: Init2rtrOptional::default(),
    };
    let rts = Rtr2rts {
        next_send_psn: 0,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 2,
        ack_timeout: 14,
        optional: Rtr2rtsOptional::default(),
    };
    (init, rtr, rts)
}
