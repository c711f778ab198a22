//! Each RC QP takes messages of at most 2^log_msg_max bytes (its context, set by INIT2RTR
//! within the device's log_max_msg), as requester and as responder: a WQE longer than its
//! own QP's is a local length error; a message longer than the responder QP's is an invalid
//! request, which puts the responder in error too. The same on both transports.

mod common;

use common::dp::{on_roce, Node, Pair, Ring};
use common::rc_wqe::Wqe;
use mlx5_prm::{CqeOpcode, QpState, SendOpcode};

const ALL_RIGHTS: (bool, bool, bool) = (true, true, true);
/// log_msg_max of the smaller QP: 1 KiB.
const SMALL: u8 = 10;
const LOCAL_LENGTH: u8 = 0x1;
const FLUSHED: u8 = 0x5;
const REMOTE_INVALID_REQUEST: u8 = 0x12;

/// QPs `a` and `b` on one device, connected, a with log_msg_max `log_a`, b with `log_b`.
fn pair(n: &Node, log_a: u8, log_b: u8) -> Pair {
    let (scq_a, rcq_a) = (n.cq(5, false), n.cq(5, false));
    let (scq_b, rcq_b) = (n.cq(5, false), n.cq(5, false));
    let a = n.qp(&scq_a, &rcq_a, 6);
    let b = n.qp(&scq_b, &rcq_b, 6);
    n.log_msg_max.set(log_a);
    n.connect_to(&a, n, b.qpn, ALL_RIGHTS, 7);
    n.log_msg_max.set(log_b);
    n.connect_to(&b, n, a.qpn, ALL_RIGHTS, 7);
    Pair {
        scq_a,
        rcq_a,
        a,
        scq_b,
        rcq_b,
        b,
    }
}

/// A 64 KiB buffer granting every right, and its key.
fn buffer(n: &Node) -> (u64, u32) {
    let r = n.alloc(1 << 16);
    (r.iova, n.mkey(n.pd, r.iova, 1 << 16, "lr,lw,rr,rw"))
}

fn write(p: &Pair, len: u32, buf: u64, key: u32) -> Vec<u8> {
    Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
        .raddr(buf + (32 << 10), key)
        .data(len, key, buf)
        .build()
}

fn send(p: &Pair, len: u32, buf: u64, key: u32) -> Vec<u8> {
    Wqe::new(SendOpcode::Send, p.a.qpn, true)
        .data(len, key, buf)
        .build()
}

fn read(p: &Pair, len: u32, buf: u64, key: u32) -> Vec<u8> {
    Wqe::new(SendOpcode::RdmaRead, p.a.qpn, true)
        .raddr(buf + (32 << 10), key)
        .data(len, key, buf)
        .build()
}

type Build = fn(&Pair, u32, u64, u32) -> Vec<u8>;

/// Up to the smaller QP's limit every operation goes through; one byte more fails.
fn each_qps_limit_holds() {
    let ops: [(&str, Build); 3] = [("write", write), ("send", send), ("read", read)];
    for (name, op) in ops {
        // The requester's own limit: a local length error, the responder unaffected.
        let n = Node::inline();
        let p = pair(&n, SMALL, 30);
        let (buf, key) = buffer(&n);
        p.b.post_recv(&[(16 << 10, key, buf + (16 << 10))]);
        p.b.post_recv(&[(16 << 10, key, buf + (16 << 10))]);
        p.a.post(&op(&p, 1 << SMALL, buf, key), Ring::Doorbell);
        p.scq_a.expect(CqeOpcode::Req);
        p.a.post(&op(&p, (1 << SMALL) + 1, buf, key), Ring::Doorbell);
        let e = p.scq_a.expect_err(CqeOpcode::ReqErr, LOCAL_LENGTH);
        assert_eq!(e.wqe_counter(), 1, "{name}");
        assert_eq!(
            (n.qp_state(p.a.qpn), n.qp_state(p.b.qpn)),
            (QpState::Err, QpState::Rts),
            "{name}"
        );

        // The responder's limit: an invalid request, and the responder in error.
        let n = Node::inline();
        let p = pair(&n, 30, SMALL);
        let (buf, key) = buffer(&n);
        p.b.post_recv(&[(16 << 10, key, buf + (16 << 10))]);
        p.b.post_recv(&[(16 << 10, key, buf + (16 << 10))]);
        p.a.post(&op(&p, 1 << SMALL, buf, key), Ring::Doorbell);
        p.scq_a.expect(CqeOpcode::Req);
        if name == "send" {
            p.rcq_b.expect(CqeOpcode::RespSend);
        }
        p.a.post(&op(&p, (1 << SMALL) + 1, buf, key), Ring::Doorbell);
        let e = p
            .scq_a
            .expect_err(CqeOpcode::ReqErr, REMOTE_INVALID_REQUEST);
        assert_eq!(e.wqe_counter(), 1, "{name}");
        assert_eq!(n.qp_state(p.a.qpn), QpState::Err, "{name}");
        assert_eq!(n.qp_state(p.b.qpn), QpState::Err, "{name}");
        // A SEND completes the receive it was for in error; otherwise the receive still
        // posted is flushed.
        let first = if name == "send" {
            LOCAL_LENGTH
        } else {
            FLUSHED
        };
        p.rcq_b.expect_err(CqeOpcode::RespErr, first);
    }
}

#[test]
fn each_qps_log_msg_max_bounds_its_messages() {
    each_qps_limit_holds();
}

#[test]
fn each_qps_log_msg_max_bounds_its_messages_on_roce() {
    on_roce(each_qps_limit_holds);
}
