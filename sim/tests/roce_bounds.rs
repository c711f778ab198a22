//! What a guest's RC traffic on RoCE may make the model hold. A message may be as long as the
//! device's `log_max_msg` (1 GiB): the requester reads each packet's bytes from host memory
//! as it builds the packet (no copy of the message), the requester and the responder stop
//! building packets when the port's queue (or the device's own loopback queue) holds 4 MiB
//! and go on as frames leave, and the requester keeps no more WQEs in flight than its send
//! queue holds. Before, one 16-byte READ request or one SEND WQE had the model build every
//! frame of the message at once, and a guest moving its producer counter on past a stalled
//! WQE grew the in-flight list by a ring's worth per doorbell.

mod common;

use common::dp::{on_roce, Node, Pair, Ring};
use common::rc_wqe::Wqe;
use mlx5_prm::{Cqe64, CqeOpcode, SendOpcode};
use mlx5_sim::Wire;
use std::time::{Duration, Instant};

/// The port's queue budget (`eth::tx::PORT_QUEUE_BUDGET`) and one more frame, the most the
/// queues may hold when a packet is queued.
const BOUND: u64 = (4 << 20) + 4096 + 128;
/// A message four times the budget: 16,384 packets at the path MTU of 1024.
const LEN: usize = 16 << 20;

fn wait(cq: &common::dp::Cq, nodes: &[&Node]) -> Cqe64<[u8; 64]> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(c) = cq.poll() {
            return Cqe64::new_unchecked(c);
        }
        assert!(Instant::now() < end, "no completion in 60 s");
        std::thread::sleep(Duration::from_micros(100));
        nodes.iter().for_each(|n| n.dev().tick());
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 11) as u8)
        .collect()
}

/// A 16 MiB WRITE, READ and SEND from `a` (on `na`) to `b` (on `nb`): every byte arrives,
/// and the queues never held more than the budget.
fn long_messages(na: &Node, nb: &Node) {
    let p = Pair::new(na, nb, (true, true, true), 7);
    let nodes: &[&Node] = &[na, nb];
    let (a_buf, b_buf) = (na.alloc(2 * LEN), nb.alloc(2 * LEN));
    let akey = na.mkey(na.pd, a_buf.iova, 2 * LEN as u64, "lr,lw,rr,rw");
    let bkey = nb.mkey(nb.pd, b_buf.iova, 2 * LEN as u64, "lr,lw,rr,rw");
    na.write(a_buf.iova, &pattern(LEN, 1));
    p.a.post(
        &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
            .raddr(b_buf.iova, bkey)
            .data(LEN as u32, akey, a_buf.iova)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(wait(&p.scq_a, nodes).opcode(), Ok(CqeOpcode::Req));
    assert!(nb.read(b_buf.iova, LEN) == pattern(LEN, 1), "written");
    nb.write(b_buf.iova + LEN as u64, &pattern(LEN, 2));
    p.a.post(
        &Wqe::new(SendOpcode::RdmaRead, p.a.qpn, true)
            .raddr(b_buf.iova + LEN as u64, bkey)
            .data(LEN as u32, akey, a_buf.iova + LEN as u64)
            .build(),
        Ring::Doorbell,
    );
    let c = wait(&p.scq_a, nodes);
    assert_eq!((c.opcode(), c.byte_cnt()), (Ok(CqeOpcode::Req), LEN as u32));
    assert!(
        na.read(a_buf.iova + LEN as u64, LEN) == pattern(LEN, 2),
        "read"
    );
    na.write(a_buf.iova, &pattern(LEN, 3));
    p.b.post_recv(&[(LEN as u32, bkey, b_buf.iova)]);
    p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, true)
            .data(LEN as u32, akey, a_buf.iova)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(wait(&p.scq_a, nodes).opcode(), Ok(CqeOpcode::Req));
    let r = wait(&p.rcq_b, nodes);
    assert_eq!(
        (r.opcode(), r.byte_cnt()),
        (Ok(CqeOpcode::RespSend), LEN as u32)
    );
    assert!(nb.read(b_buf.iova, LEN) == pattern(LEN, 3), "sent");
    for n in nodes {
        let s = n.dev().roce_stats();
        assert!(
            s.peak_queued <= BOUND,
            "{} bytes of frames queued at once (bound {BOUND})",
            s.peak_queued
        );
        assert_eq!(n.dev().dma_faults(), 0);
    }
}

#[test]
fn long_messages_to_the_device_itself_stay_within_the_loopback_budget() {
    on_roce(|| {
        let n = Node::inline();
        long_messages(&n, &n);
        assert!(n.dev().roce_stats().looped > 16384 * 3, "looped back");
    });
}

#[test]
fn long_messages_over_a_wire_stay_within_the_port_budget() {
    on_roce(|| {
        let (na, nb) = (Node::inline(), Node::inline());
        let _wire = Wire::connect(na.dev(), nb.dev());
        long_messages(&na, &nb);
    });
}

/// A SEND nobody acknowledges (the peer is not connected), then NOPs posted behind it and
/// announced, the producer counter moved on by three rings' worth: the requester keeps at
/// most a ring of WQEs in flight.
#[test]
fn wqes_in_flight_stay_within_the_send_queue() {
    on_roce(|| {
        let (na, nb) = (Node::inline(), Node::inline());
        let p = Pair::new(&na, &nb, (true, true, true), 7);
        let buf = na.alloc(4096);
        let key = na.mkey(na.pd, buf.iova, 4096, "lr");
        p.a.post(
            &Wqe::new(SendOpcode::Send, p.a.qpn, true)
                .data(64, key, buf.iova)
                .build(),
            Ring::Doorbell,
        );
        let size = 64; // Pair's send queues have 2^6 WQEs.
        for _ in 0..3 * size {
            p.a.post(
                &Wqe::new(SendOpcode::Nop, p.a.qpn, false).build(),
                Ring::Doorbell,
            );
        }
        let n = na.dev().rc_in_flight(p.a.qpn);
        assert!(
            (1..=size).contains(&n),
            "{n} WQEs in flight on a ring of {size}"
        );
    });
}
