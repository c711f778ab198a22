//! RC QPs on the device model: created, brought RESET → INIT → RTR → RTS with exactly the
//! parameters the transition table requires, sent to ERROR and back to RESET; the model checks
//! every transition against the same table and QUERY_QP confirms each state.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::Cq;
use mlx5_driver::qp::*;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::{QpMtu, QpState};

fn params(remote_qpn: u32) -> (InitParams, RtrParams, RtsParams) {
    let init = InitParams {
        port: 1,
        pkey_index: 0,
        access: RemoteAccess {
            read: true,
            write: true,
            atomic: true,
        },
    };
    let rtr = RtrParams {
        mtu: QpMtu::Mtu1k,
        log_msg_max: 20,
        remote_qpn,
        next_rcv_psn: 0x100,
        log_rra_max: 2,
        min_rnr_nak: 12,
        path: RocePath {
            rmac: [0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
            rgid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            src_addr_index: 0,
            hop_limit: 64,
            port: 1,
        },
    };
    let rts = RtsParams {
        next_send_psn: 0x100,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 2,
        ack_timeout: 14,
    };
    (init, rtr, rts)
}

#[test]
fn reset_to_rts_and_back() {
    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    let mut hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let eqn = hca.info().eqn;
    let cq = Cq::create(&mut hca, 6, eqn).unwrap();
    let config = QpConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        log_rq_stride: 1,
        send_cq: cq.cqn(),
        recv_cq: cq.cqn(),
    };
    let a = Qp::create(&mut hca, config.clone()).unwrap();
    let b = Qp::create(&mut hca, config).unwrap();
    assert_eq!(a.query_state(&mut hca).unwrap(), QpState::Rst);

    let (init, rtr, rts) = params(b.qpn());
    let a = a.to_init(&mut hca, &init).map_err(|(e, _)| e).unwrap();
    assert_eq!(a.query_state(&mut hca).unwrap(), QpState::Init);
    let a = a.to_rtr(&mut hca, &rtr).map_err(|(e, _)| e).unwrap();
    assert_eq!(a.query_state(&mut hca).unwrap(), QpState::Rtr);
    let a = a.to_rts(&mut hca, &rts).map_err(|(e, _)| e).unwrap();
    assert_eq!(a.query_state(&mut hca).unwrap(), QpState::Rts);

    let a = a.to_error(&mut hca).map_err(|(e, _)| e).unwrap();
    assert_eq!(a.query_state(&mut hca).unwrap(), QpState::Err);
    let a = a.reset(&mut hca).map_err(|(e, _)| e).unwrap();
    assert_eq!(a.query_state(&mut hca).unwrap(), QpState::Rst);

    assert!(a.destroy(&mut hca).is_ok());
    assert!(b.destroy(&mut hca).is_ok());
    assert!(cq.destroy(&mut hca).is_ok());
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
    assert_eq!(device.dma().allocated(), 0);
}

#[test]
fn a_refused_transition_gives_the_qp_back() {
    let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
    let mut hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let eqn = hca.info().eqn;
    let cq = Cq::create(&mut hca, 6, eqn).unwrap();
    let config = QpConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        log_rq_stride: 1,
        send_cq: cq.cqn(),
        recv_cq: cq.cqn(),
    };
    let qp = Qp::create(&mut hca, config).unwrap();
    let (init, mut rtr, _) = params(qp.qpn());
    let qp = qp.to_init(&mut hca, &init).map_err(|(e, _)| e).unwrap();
    // A message size beyond the device's log_max_msg is refused with the PRM's status.
    rtr.log_msg_max = 31;
    let (err, qp) = match qp.to_rtr(&mut hca, &rtr) {
        Ok(_) => panic!("the model accepted log_msg_max 31"),
        Err(pair) => pair,
    };
    assert!(err.to_string().contains("init2rtr_qp"), "{err}");
    assert!(err.status().is_some(), "{err}");
    // Still in INIT, and still usable.
    assert_eq!(qp.query_state(&mut hca).unwrap(), QpState::Init);
    rtr.log_msg_max = 20;
    let qp = qp.to_rtr(&mut hca, &rtr).map_err(|(e, _)| e).unwrap();
    assert!(qp.destroy(&mut hca).is_ok());
    assert!(cq.destroy(&mut hca).is_ok());
}
