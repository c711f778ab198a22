//! Counters read with commands: queue counter sets that RQs name (ALLOC/DEALLOC/QUERY_Q_COUNTER,
//! MODIFY_RQ's counter_set_id) and the vport's traffic counters (QUERY_VPORT_COUNTER), as
//! mlx5e reads them for `ethtool -S` and `ip -s link`.

mod common;

use common::dp::Node;
use common::eth::{l2, Eth};
use mlx5_prm::cmd;
use mlx5_prm::{AllocQCounterOut, CqeOpcode, QueryQCounterOut, QueryVportCounterOut, RqState};
use mlx5_sim::syndrome as syn;

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];
const BCAST: [u8; 6] = [0xff; 6];

fn alloc_set(e: &Eth) -> u8 {
    let r = e.n.host.simple::<cmd::AllocQCounter>(0).ok();
    AllocQCounterOut::new_unchecked(&r.out[..]).counter_set_id()
}

/// out_of_buffer of set `id`, clearing the set when `clear`.
fn out_of_buffer(e: &Eth, id: u8, clear: bool) -> u32 {
    let r =
        e.n.host
            .run::<cmd::QueryQCounter>(0, 0, 0, |i| {
                i.set_counter_set_id(id);
                i.set_clear(clear);
            })
            .ok();
    QueryQCounterOut::new_unchecked(&r.out[..]).out_of_buffer()
}

/// Points the Eth RQ at counter set `id` with MODIFY_RQ (RDY to RDY, bitmask counter_set_id).
fn name_set(e: &Eth, id: u8) -> common::Reply {
    e.n.host.run::<cmd::ModifyRq>(0, 0, 0, |i| {
        i.set_rqn(e.rqn);
        i.set_rq_state(RqState::Rdy);
        i.set_modify_bitmask(mlx5_prm::ModifyRqBitmask::RqCounterSetId as u64);
        let mut c = i.ctx_mut();
        c.set_state(RqState::Rdy);
        c.set_counter_set_id(id);
    })
}

#[test]
fn a_frame_without_a_receive_wqe_counts_out_of_buffer_in_the_rqs_set() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.n.dev().loopback(true);
    let id = alloc_set(&e);
    assert_ne!(id, 0, "set 0 means no set and is never handed out");
    name_set(&e, id).ok();
    assert_eq!(out_of_buffer(&e, id, false), 0);

    // Two frames with no receive WQE posted: both dropped and counted.
    for _ in 0..2 {
        e.send(&l2(MAC_A, MAC_B), 0x8000, 64);
        e.scq.expect(CqeOpcode::Req);
    }
    assert_eq!(e.rcq.poll(), None);
    assert_eq!(out_of_buffer(&e, id, false), 2, "query without clear keeps");
    assert_eq!(out_of_buffer(&e, id, true), 2, "clear returns the counts");
    assert_eq!(out_of_buffer(&e, id, false), 0, "then they start again");

    // A frame that finds a WQE is not a drop.
    e.post_recv(0, 2048);
    e.send(&l2(MAC_A, MAC_B), 0x8000, 64);
    e.rcq.expect(CqeOpcode::RespSend);
    assert_eq!(out_of_buffer(&e, id, false), 0);

    // A second set counts only for the RQ that names it.
    let other = alloc_set(&e);
    assert_ne!(other, id);
    e.send(&l2(MAC_A, MAC_B), 0x8000, 64);
    assert_eq!(
        (
            out_of_buffer(&e, id, false),
            out_of_buffer(&e, other, false)
        ),
        (1, 0)
    );

    // After DEALLOC_Q_COUNTER the RQ counts nowhere and the set is unknown.
    e.n.host
        .run::<cmd::DeallocQCounter>(0, 0, 0, |i| i.set_counter_set_id(id))
        .ok();
    e.send(&l2(MAC_A, MAC_B), 0x8000, 64);
    e.n.host
        .run::<cmd::QueryQCounter>(0, 0, 0, |i| i.set_counter_set_id(id))
        .fails(0x5, syn::QCNT_UNKNOWN);
    assert_eq!(out_of_buffer(&e, other, false), 0);
}

#[test]
fn rqs_name_only_allocated_sets_or_none() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    name_set(&e, 7).fails(0x5, syn::QCNT_UNKNOWN);
    name_set(&e, 0).ok();
    let id = alloc_set(&e);
    name_set(&e, id).ok();
    e.n.host
        .run::<cmd::DeallocQCounter>(0, 0, 0, |i| i.set_counter_set_id(id))
        .ok();
    e.n.host
        .run::<cmd::DeallocQCounter>(0, 0, 0, |i| i.set_counter_set_id(id))
        .fails(0x5, syn::QCNT_UNKNOWN);
}

#[test]
fn queue_counter_sets_stop_at_max_qp_cnt() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let r =
        e.n.host
            .simple::<cmd::QueryHcaCap>(cmd::QueryHcaCapOpMod::GeneralCur)
            .ok();
    let max = mlx5_prm::CmdHcaCap::new_unchecked(&r.out[0x10..0x110]).max_qp_cnt();
    assert_eq!(max, 255);
    let ids: std::collections::BTreeSet<u8> = (0..max).map(|_| alloc_set(&e)).collect();
    assert_eq!(ids.len(), usize::from(max), "every set has its own id");
    assert!(!ids.contains(&0));
    e.n.host
        .simple::<cmd::AllocQCounter>(0)
        .fails(0x8, syn::QCNT_LIMIT);
    e.n.host
        .run::<cmd::DeallocQCounter>(0, 0, 0, |i| i.set_counter_set_id(42))
        .ok();
    assert_eq!(alloc_set(&e), 42, "a freed id is the only one left");
}

#[test]
fn vport_counters_count_sent_and_received_frames_by_address_kind() {
    let e = Eth::new(Node::inline(), &[MAC_A, BCAST]);
    e.n.dev().loopback(true);
    for k in 0..3 {
        e.post_recv(k * 2048, 2048);
    }
    e.send(&l2(MAC_A, MAC_B), 0x8000, 100); // 114 bytes, unicast
    e.send(&l2(BCAST, MAC_B), 0x8000, 50); // 64 bytes, broadcast
    e.send(&l2([0x01, 0, 0x5e, 0, 0, 1], MAC_B), 0x8000, 50); // multicast, steered nowhere
    for _ in 0..3 {
        e.scq.expect(CqeOpcode::Req);
    }
    let query = |clear: bool| {
        let r =
            e.n.host
                .run::<cmd::QueryVportCounter>(0, 0, 0, |i| i.set_clear(clear))
                .ok();
        let v = QueryVportCounterOut::new_unchecked(&r.out[..]);
        let pair = |t: mlx5_prm::TrafficCounter<&[u8]>| (t.packets(), t.octets());
        [
            pair(v.received_eth_unicast()),
            pair(v.received_eth_multicast()),
            pair(v.received_eth_broadcast()),
            pair(v.transmitted_eth_unicast()),
            pair(v.transmitted_eth_multicast()),
            pair(v.transmitted_eth_broadcast()),
        ]
    };
    // The multicast frame came back through the port and reached the vport, though no flow
    // entry took it: the vport counts what it receives before steering.
    let expected = [(1, 114), (1, 64), (1, 64), (1, 114), (1, 64), (1, 64)];
    assert_eq!(query(false), expected);
    assert_eq!(query(true), expected);
    assert_eq!(query(false), [(0, 0); 6]);

    e.n.host
        .run::<cmd::QueryVportCounter>(0, 0, 0, |i| i.set_other_vport(true))
        .fails(0x3, syn::OTHER_FUNCTION);
}

#[test]
fn teardown_frees_the_queue_counter_sets() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    alloc_set(&e);
    alloc_set(&e);
    assert_eq!(e.n.dev().objects().q_counters, 2);
    e.n.host
        .run::<cmd::TeardownHca>(0, 0, 0, |i| {
            i.set_profile(mlx5_prm::TeardownHcaProfile::GracefulClose)
        })
        .ok();
    // TEARDOWN_HCA drops every object of the function, counter sets among them.
    let objects = e.n.dev().objects();
    assert_eq!((objects.q_counters, objects.total()), (0, 0), "{objects:?}");
}
