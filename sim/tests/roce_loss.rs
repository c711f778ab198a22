//! RC over RoCE v2 between two devices whose ports lose frames (`FaultInjector::port_loss`):
//! long writes, reads and sends still complete with every byte right, the requester resends
//! (go-back-N on sequence NAKs and timeouts, a read asked again from its first missing
//! response), and nothing runs out of retries: each loss costs a resend, not a retry budget
//! spent on the responses behind it. And RoCE traffic in the vport's and port's counters.

mod common;

use common::dp::{on_roce, Node, Pair, Ring};
use common::rc_wqe::Wqe;
use mlx5_prm::{CqeOpcode, SendOpcode};
use mlx5_sim::Wire;
use std::time::{Duration, Instant};

/// Polls `cq` for one CQE, ticking both devices (their ACK timers run there) for up to 20 s.
fn wait(cq: &common::dp::Cq, nodes: [&Node; 2]) -> [u8; 64] {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(c) = cq.poll() {
            return c;
        }
        assert!(Instant::now() < end, "no completion in 20 s");
        std::thread::sleep(Duration::from_micros(200));
        nodes.iter().for_each(|n| n.dev().tick());
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ seed ^ (i >> 9) as u8)
        .collect()
}

fn lossy_transfers() {
    let (na, nb) = (Node::inline(), Node::inline());
    let _wire = Wire::connect(na.dev(), nb.dev());
    for n in [&na, &nb] {
        n.dev().faults().port_loss(10);
    }
    let p = Pair::new(&na, &nb, (true, true, true), 7);
    const LEN: usize = 64 << 10; // 64 packets at the path MTU of 1024
    let (a_buf, b_buf) = (na.alloc(4 * LEN), nb.alloc(4 * LEN));
    let akey = na.mkey(na.pd, a_buf.iova, 4 * LEN as u64, "lr,lw,rr,rw");
    let bkey = nb.mkey(nb.pd, b_buf.iova, 4 * LEN as u64, "lr,lw,rr,rw");
    for round in 0..8u8 {
        // A write of 64 KiB from a into b ...
        na.write(a_buf.iova, &pattern(LEN, round));
        p.a.post(
            &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
                .raddr(b_buf.iova + LEN as u64, bkey)
                .data(LEN as u32, akey, a_buf.iova)
                .build(),
            Ring::Doorbell,
        );
        let c = wait(&p.scq_a, [&na, &nb]);
        assert_eq!(
            mlx5_prm::Cqe64::new_unchecked(c).opcode(),
            Ok(CqeOpcode::Req)
        );
        assert_eq!(nb.read(b_buf.iova + LEN as u64, LEN), pattern(LEN, round));
        // ... read back into a's second buffer ...
        p.a.post(
            &Wqe::new(SendOpcode::RdmaRead, p.a.qpn, true)
                .raddr(b_buf.iova + LEN as u64, bkey)
                .data(LEN as u32, akey, a_buf.iova + 2 * LEN as u64)
                .build(),
            Ring::Doorbell,
        );
        let c = wait(&p.scq_a, [&na, &nb]);
        let c = mlx5_prm::Cqe64::new_unchecked(c);
        assert_eq!((c.opcode(), c.byte_cnt()), (Ok(CqeOpcode::Req), LEN as u32));
        assert_eq!(
            na.read(a_buf.iova + 2 * LEN as u64, LEN),
            pattern(LEN, round)
        );
        // ... and sent back from b to a.
        p.a.post_recv(&[(LEN as u32, akey, a_buf.iova + 3 * LEN as u64)]);
        p.b.post(
            &Wqe::new(SendOpcode::Send, p.b.qpn, true)
                .data(LEN as u32, bkey, b_buf.iova + LEN as u64)
                .build(),
            Ring::Doorbell,
        );
        let c = mlx5_prm::Cqe64::new_unchecked(wait(&p.scq_b, [&na, &nb]));
        assert_eq!(c.opcode(), Ok(CqeOpcode::Req));
        let r = mlx5_prm::Cqe64::new_unchecked(wait(&p.rcq_a, [&na, &nb]));
        assert_eq!(
            (r.opcode(), r.byte_cnt()),
            (Ok(CqeOpcode::RespSend), LEN as u32)
        );
        assert_eq!(
            na.read(a_buf.iova + 3 * LEN as u64, LEN),
            pattern(LEN, round)
        );
    }
    for n in [&na, &nb] {
        let (out, arriving) = n.dev().faults().frames_lost();
        assert!(
            out > 0 && arriving > 0,
            "lost {out} leaving, {arriving} arriving"
        );
    }
}

#[test]
fn writes_reads_and_sends_survive_a_port_losing_one_frame_in_10() {
    on_roce(lossy_transfers);
}

/// RoCE traffic in the port's and the vport's counters: the vport reports it as RDMA
/// (received/transmitted_ib_unicast, Linux's rx/tx_vport_rdma_unicast), not as Ethernet; a
/// port whose link is down takes no RoCE packet.
fn roce_in_the_vport_counters() {
    let (na, nb) = (Node::inline(), Node::inline());
    let _wire = Wire::connect(na.dev(), nb.dev());
    let p = Pair::new(&na, &nb, (true, true, true), 7);
    let (a_buf, b_buf) = (na.alloc(1 << 16), nb.alloc(1 << 16));
    let akey = na.mkey(na.pd, a_buf.iova, 1 << 16, "lr,lw");
    let bkey = nb.mkey(nb.pd, b_buf.iova, 1 << 16, "lw,rw");
    for _ in 0..10 {
        p.a.post(
            &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
                .raddr(b_buf.iova, bkey)
                .data(4096, akey, a_buf.iova)
                .build(),
            Ring::Doorbell,
        );
        p.scq_a.expect(CqeOpcode::Req);
    }
    let vport = |n: &Node| {
        let r = n
            .host
            .run::<mlx5_prm::cmd::QueryVportCounter>(0, 0, 0, |_| {})
            .ok();
        let v = mlx5_prm::QueryVportCounterOut::new_unchecked(r.out);
        let pair = |t: mlx5_prm::TrafficCounter<&[u8]>| (t.packets(), t.octets());
        (
            pair(v.received_ib_unicast()),
            pair(v.transmitted_ib_unicast()),
            v.received_eth_unicast().packets() + v.transmitted_eth_unicast().packets(),
        )
    };
    let (a, b) = (na.dev().roce_stats(), nb.dev().roce_stats());
    // 4 KiB at MTU 1024: four requests and one ACK per write.
    assert_eq!(
        (a.tx_packets, a.rx_packets, b.tx_packets, b.rx_packets),
        (40, 10, 10, 40)
    );
    let ((rx_a, _), (tx_a, tx_a_bytes), eth_a) = vport(&na);
    let ((rx_b, rx_b_bytes), (tx_b, _), eth_b) = vport(&nb);
    assert_eq!((rx_a, tx_a, rx_b, tx_b), (10, 40, 40, 10));
    assert_eq!(tx_a_bytes, rx_b_bytes, "the same frames, both ends");
    assert!(tx_a_bytes > 40 * 4096 / 4, "{tx_a_bytes} bytes");
    assert_eq!((eth_a, eth_b), (0, 0), "no RoCE packet counts as Ethernet");
    // The responder's link goes down: its port takes nothing, the requester gives up.
    nb.dev().raise_port_change(1, false);
    let dropped = nb.dev().rx_dropped();
    p.a.post(
        &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
            .raddr(b_buf.iova, bkey)
            .data(64, akey, a_buf.iova)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(nb.dev().rx_dropped(), dropped + 1);
    assert_eq!(nb.dev().roce_stats().rx_packets, 40);
}

#[test]
fn roce_counts_as_rdma_traffic_and_needs_the_link_up() {
    on_roce(roce_in_the_vport_counters);
}
