//! The PRM's errors on the RC data path with their effect on both QPs (the requester's and
//! responder's error CQEs, their states, affiliated events, flush errors afterwards), and
//! receiver-not-ready retries.

use crate::common::dp::{Node, Pair, Ring};
use crate::common::rc_wqe::Wqe;
use crate::{buffer, ALL_RIGHTS, NO_RIGHTS};
use mlx5_prm::{CqeOpcode, QpState, SendOpcode};
use std::thread::sleep;
use std::time::Duration;

/// Posts a bad WQE on a fresh pair and checks the requester's error CQE, both QPs' states,
/// and that a later WQE and a posted receive are flushed.
fn remote_error(
    rights: (bool, bool, bool),
    remote_rights: &str,
    build: impl Fn(u32, u64, u32, u64, u32) -> Vec<u8>,
    syndrome: u8,
    responder_err: bool,
) {
    let n = Node::inline();
    let p = Pair::new(&n, &n, rights, 7);
    let (local, lkey) = buffer(&n, "lr,lw");
    let (remote, rkey) = buffer(&n, remote_rights);
    p.b.post_recv(&[(64, rkey, remote)]);
    let wqe = build(p.a.qpn, local, lkey, remote, rkey);
    p.a.post(&wqe, Ring::Doorbell);
    let e = p.scq_a.expect_err(CqeOpcode::ReqErr, syndrome);
    assert_eq!((e.wqe_counter(), e.qpn()), (0, p.a.qpn));
    assert_eq!(n.qp_state(p.a.qpn), QpState::Err);
    let b_state = if responder_err {
        QpState::Err
    } else {
        QpState::Rts
    };
    assert_eq!(n.qp_state(p.b.qpn), b_state);
    if responder_err {
        // The responder's posted receive completes with a flush error, and an affiliated
        // event names it: access violation, or invalid request.
        let e = p.rcq_b.expect_err(CqeOpcode::RespErr, 0x5);
        assert_eq!(e.wqe_counter(), 0);
        let ev = n.next_eqe().expect("an affiliated event");
        let ty = if syndrome == 0x13 { 0x11 } else { 0x10 };
        assert_eq!(ev.event_type_raw(), ty);
        let qe = mlx5_prm::QpEvents::new_unchecked(&ev.storage()[0x20..0x3c]);
        assert_eq!((qe.r#type(), qe.qpn_rqn_sqn()), (0, p.b.qpn));
    }
    assert!(n.next_eqe().is_none());
    // Every later WQE, signaled or not, is flushed.
    for signaled in [false, true] {
        p.a.post(
            &Wqe::new(SendOpcode::Nop, p.a.qpn, signaled).build(),
            Ring::Doorbell,
        );
        p.scq_a.expect_err(CqeOpcode::ReqErr, 0x5);
    }
    // A receive posted to the requester in ERR is flushed at the device's next look.
    p.a.post_recv(&[(8, lkey, local)]);
    n.dev().tick();
    p.rcq_a.expect_err(CqeOpcode::RespErr, 0x5);
}

#[test]
fn remote_access_errors() {
    let write = |qpn, local, lkey, remote, rkey| {
        Wqe::new(SendOpcode::RdmaWrite, qpn, true)
            .raddr(remote, rkey)
            .data(16, lkey, local)
            .build()
    };
    // Wrong tag of the rkey.
    remote_error(
        ALL_RIGHTS,
        "rw,rr",
        |q, l, lk, r, rk| write(q, l, lk, r, rk ^ 1),
        0x13,
        true,
    );
    // Unknown index.
    remote_error(
        ALL_RIGHTS,
        "rw",
        |q, l, lk, r, _| write(q, l, lk, r, 0x0fff_ff5a),
        0x13,
        true,
    );
    // Outside the region.
    remote_error(
        ALL_RIGHTS,
        "rw",
        |q, l, lk, r, rk| write(q, l, lk, r + 65530, rk),
        0x13,
        true,
    );
    // The key does not grant remote write.
    remote_error(ALL_RIGHTS, "rr", write, 0x13, true);
    // The responder QP does not allow remote writes (rwe clear).
    remote_error((true, false, true), "rw", write, 0x13, true);
    // Read without rr on the key, and without rre on the QP.
    let read = |qpn, local, lkey, remote, rkey| {
        Wqe::new(SendOpcode::RdmaRead, qpn, true)
            .raddr(remote, rkey)
            .data(16, lkey, local)
            .build()
    };
    remote_error(ALL_RIGHTS, "rw", read, 0x13, true);
    remote_error((false, true, true), "rr", read, 0x13, true);
    // Atomic without a on the key; misaligned atomic.
    let fa = |off: u64| {
        move |qpn, local, lkey, remote: u64, rkey| {
            Wqe::new(SendOpcode::AtomicFa, qpn, true)
                .raddr(remote + off, rkey)
                .atomic(1, 0)
                .data(8, lkey, local)
                .build()
        }
    };
    remote_error(ALL_RIGHTS, "rw,rr", fa(0), 0x13, true);
    remote_error(ALL_RIGHTS, "a", fa(4), 0x12, true);
}

#[test]
fn local_errors() {
    let send = |len: u32, key_xor: u32| {
        move |qpn, local, lkey: u32, _remote, _rkey| {
            Wqe::new(SendOpcode::Send, qpn, false)
                .data(len, lkey ^ key_xor, local)
                .build()
        }
    };
    // A bad lkey in the gather list: local protection error, the responder is unaffected.
    remote_error(NO_RIGHTS, "lw", send(16, 0x100), 0x4, false);
    // A message longer than the receive buffer (64 bytes): local length error at the
    // responder, remote invalid request at the requester.
    let n = Node::inline();
    let p = Pair::new(&n, &n, NO_RIGHTS, 7);
    let (buf, key) = buffer(&n, "lr,lw");
    p.b.post_recv(&[(64, key, buf)]);
    p.b.post_recv(&[(64, key, buf)]);
    p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, false)
            .data(100, key, buf + 4096)
            .build(),
        Ring::Doorbell,
    );
    p.scq_a.expect_err(CqeOpcode::ReqErr, 0x12);
    let e = p.rcq_b.expect_err(CqeOpcode::RespErr, 0x1);
    assert_eq!(e.wqe_counter(), 0);
    p.rcq_b.expect_err(CqeOpcode::RespErr, 0x5);
    assert_eq!(
        (n.qp_state(p.a.qpn), n.qp_state(p.b.qpn)),
        (QpState::Err, QpState::Err)
    );
    // An unknown opcode: local QP operation error.
    let n = Node::inline();
    let p = Pair::new(&n, &n, NO_RIGHTS, 7);
    let mut w = Wqe::new(SendOpcode::Nop, p.a.qpn, true).build();
    w[3] = 0x3f;
    p.a.post(&w, Ring::Doorbell);
    p.scq_a.expect_err(CqeOpcode::ReqErr, 0x2);
}

#[test]
fn receiver_not_ready_waits_for_a_receive() {
    let n = Node::inline();
    let p = Pair::new(&n, &n, NO_RIGHTS, 7);
    let (buf, key) = buffer(&n, "lr,lw");
    n.write(buf, b"patience");
    p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, true)
            .data(8, key, buf)
            .build(),
        Ring::Doorbell,
    );
    p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, true)
            .data(8, key, buf)
            .build(),
        Ring::Doorbell,
    );
    // Ticks a millisecond apart: on RoCE the responder's RNR NAK asks for a wait
    // (min_rnr_nak) before each retry.
    for _ in 0..20 {
        sleep(Duration::from_millis(1));
        n.dev().tick();
    }
    assert!(p.scq_a.poll().is_none(), "stalled on RNR, retrying forever");
    assert!(p.rcq_b.poll().is_none());
    // One receive: the first send goes, the second waits again.
    p.b.post_recv(&[(64, key, buf + 4096)]);
    sleep(Duration::from_millis(1));
    n.dev().tick();
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 0);
    assert_eq!(p.rcq_b.expect(CqeOpcode::RespSend).byte_cnt(), 8);
    assert!(p.scq_a.poll().is_none());
    assert_eq!(n.read(buf + 4096, 8), b"patience");
    // Any BAR write lets the device retry too (here a CQ doorbell record update + arm).
    p.b.post_recv(&[(64, key, buf + 8192)]);
    sleep(Duration::from_millis(1));
    p.scq_b.arm(false);
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 1);
    assert_eq!(n.qp_state(p.a.qpn), QpState::Rts);
}

#[test]
fn receiver_not_ready_retries_run_out() {
    for rnr_retry in [0u8, 3] {
        let n = Node::inline();
        let p = Pair::new(&n, &n, NO_RIGHTS, rnr_retry);
        let (buf, key) = buffer(&n, "lr,lw");
        p.a.post(
            &Wqe::new(SendOpcode::Send, p.a.qpn, false)
                .data(8, key, buf)
                .build(),
            Ring::Doorbell,
        );
        for _ in 0..rnr_retry {
            assert!(p.scq_a.poll().is_none());
            sleep(Duration::from_millis(1));
            n.dev().tick();
        }
        let e = p.scq_a.expect_err(CqeOpcode::ReqErr, 0x16);
        assert_eq!(e.s_wqe_opcode(), SendOpcode::Send.raw());
        assert_eq!(n.qp_state(p.a.qpn), QpState::Err);
        assert_eq!(n.qp_state(p.b.qpn), QpState::Rts, "the responder is fine");
    }
}

#[test]
fn a_qp_connected_to_itself_fails_once() {
    let n = Node::inline();
    let (scq, rcq) = (n.cq(4, false), n.cq(4, false));
    let qp = n.qp(&scq, &rcq, 4);
    n.connect(&qp, qp.qpn, NO_RIGHTS, 7);
    let (buf, key) = buffer(&n, "lr,lw");
    qp.post_recv(&[(8, key, buf)]);
    qp.post(
        &Wqe::new(SendOpcode::Send, qp.qpn, true)
            .data(100, key, buf)
            .build(),
        Ring::Silent,
    );
    qp.post(
        &Wqe::new(SendOpcode::Nop, qp.qpn, false).build(),
        Ring::Doorbell,
    );
    rcq.expect_err(CqeOpcode::RespErr, 0x1);
    let order: Vec<(u8, u16)> = std::iter::from_fn(|| scq.poll())
        .map(|e| {
            let e = mlx5_prm::ErrCqe::new_unchecked(e);
            (e.syndrome_raw(), e.wqe_counter())
        })
        .collect();
    assert_eq!(order, vec![(0x12, 0), (0x5, 1)]);
    assert_eq!(n.qp_state(qp.qpn), QpState::Err);
}

again_on_roce!(
    remote_access_errors,
    local_errors,
    receiver_not_ready_waits_for_a_receive,
    receiver_not_ready_retries_run_out,
    a_qp_connected_to_itself_fails_once,
);
