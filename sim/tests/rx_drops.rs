//! Frames nobody takes are counted once, where Linux's ethtool -S looks for the reason:
//!
//! - steering found no TIR (a table matched nothing and had nowhere to miss to, or there is
//!   no root table): the vNIC's nic_receive_steering_discard (QUERY_VNIC_ENV, gated by the
//!   general capability of the same name; `rx_steer_missed_packets`);
//! - the RQ had no receive WQE: out_of_buffer of the RQ's queue counter set
//!   (`rx_out_of_buffer`; for mlx5e's drop RQ, whose set is its own, `rx_if_down_packets`);
//! - a drop rule: nowhere (the rule's own decision).
//!
//! The port's PPCNT discards (`rx_discards_phy`, frames the port had no buffer for) stay 0,
//! and the vport's traffic counters count every frame the port passed up.

mod common;

use common::dp::Node;
use common::rx::{frame, Rx};
use common::Host;
use mlx5_prm::cmd::{self, AccessRegisterOpMod as Op, QueryHcaCapOpMod};
use mlx5_prm::{
    CmdHcaCap, Eth2863CntrsGrpDataLayout, FlowTableType, ModifyRqBitmask, PpcntReg,
    QueryQCounterOut, QueryVnicEnvOut, QueryVportCounterOut,
};

/// QUERY_VNIC_ENV's nic_receive_steering_discard.
fn steering_discards(host: &Host) -> u64 {
    let r = host.simple::<cmd::QueryVnicEnv>(0).ok();
    QueryVnicEnvOut::new_unchecked(&r.out[..])
        .vport_env()
        .nic_receive_steering_discard()
}

/// out_of_buffer of counter set `id`.
fn out_of_buffer(host: &Host, id: u8) -> u32 {
    let r = host
        .run::<cmd::QueryQCounter>(0, 0, 0, |i| i.set_counter_set_id(id))
        .ok();
    QueryQCounterOut::new_unchecked(&r.out[..]).out_of_buffer()
}

/// PPCNT RFC 2863 if_in_discards (ethtool's rx_discards_phy).
fn port_discards(host: &Host) -> u64 {
    let mut img = [0u8; 0x100];
    let mut p = PpcntReg::new_unchecked(&mut img[..]);
    p.set_local_port(1);
    p.set_grp_raw(0x1);
    let r = host
        .run::<cmd::AccessRegister>(Op::Read, img.len(), img.len(), |i| {
            i.set_register_id(0x5008);
            i.storage_mut()[16..].copy_from_slice(&img);
        })
        .ok();
    let g = Eth2863CntrsGrpDataLayout::new_unchecked(&r.out[16 + 8..16 + 0x100]);
    (u64::from(g.if_in_discards_high()) << 32) | u64::from(g.if_in_discards_low())
}

/// Unicast frames the vport received.
fn vport_unicast_rx(host: &Host) -> u64 {
    let r = host.simple::<cmd::QueryVportCounter>(0).ok();
    QueryVportCounterOut::new_unchecked(&r.out[..])
        .received_eth_unicast()
        .packets()
}

/// A new queue counter set.
fn counter_set(host: &Host) -> u8 {
    let r = host.simple::<cmd::AllocQCounter>(0).ok();
    mlx5_prm::AllocQCounterOut::new_unchecked(&r.out[..]).counter_set_id()
}

fn udp() -> Vec<u8> {
    frame::v4(None, 17, ([10, 0, 0, 1], 1), ([10, 0, 0, 2], 2), 40)
}

#[test]
fn a_frame_steering_cannot_place_is_a_steering_discard() {
    let rx = Rx::new(1, 4, |_| {});
    let host = &rx.n.host;
    let r = host
        .simple::<cmd::QueryHcaCap>(QueryHcaCapOpMod::GeneralCur)
        .ok();
    assert!(CmdHcaCap::new_unchecked(&r.out[0x10..0x110]).nic_receive_steering_discard());
    let set = counter_set(host);
    rx.modify_rq(0, ModifyRqBitmask::RqCounterSetId.raw().into(), |c| {
        c.set_counter_set_id(set)
    });
    // The root table has its groups but no entry: every frame misses, with no next table.
    assert_eq!(steering_discards(host), 0);
    for _ in 0..3 {
        assert!(!rx.receive(&udp()));
    }
    assert_eq!(steering_discards(host), 3);
    assert_eq!(out_of_buffer(host, set), 0);
    assert_eq!(port_discards(host), 0);
    assert_eq!(vport_unicast_rx(host), 3, "the vport saw them");
    assert!(rx.nothing());

    // With an entry, the frame is delivered and nothing more is counted.
    rx.steer_all_to(rx.direct_tir(0));
    assert!(rx.receive(&udp()));
    rx.got();
    assert_eq!(steering_discards(host), 3);

    // A drop rule is no discard of the device's own.
    host.run::<cmd::SetFte>(1, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(rx.table);
        i.set_flow_index(8);
        let mut f = i.flow_context_mut();
        f.set_group_id(rx.catch_all);
        f.set_action(0x2);
    })
    .ok();
    assert!(!rx.receive(&udp()));
    assert_eq!(steering_discards(host), 3);
    assert_eq!(out_of_buffer(host, set), 0);
    assert_eq!(vport_unicast_rx(host), 5);

    // Another vport's counters are not this function's to read.
    host.run::<cmd::QueryVnicEnv>(0, 0, 0, |i| i.set_other_vport(true))
        .fails(0x3, mlx5_sim::syndrome::OTHER_FUNCTION);
}

#[test]
fn without_a_root_table_every_frame_is_a_steering_discard() {
    let n = Node::inline();
    assert!(!n.dev().receive_frame(&udp()));
    assert!(!n.dev().receive_frame(&udp()));
    assert_eq!(steering_discards(&n.host), 2);
}

#[test]
fn a_frame_without_a_receive_wqe_counts_out_of_buffer_once() {
    let rx = Rx::new(1, 0, |_| {});
    let host = &rx.n.host;
    let set = counter_set(host);
    rx.modify_rq(0, ModifyRqBitmask::RqCounterSetId.raw().into(), |c| {
        c.set_counter_set_id(set)
    });
    rx.steer_all_to(rx.direct_tir(0));
    for _ in 0..2 {
        assert!(!rx.receive(&udp()));
    }
    assert_eq!(out_of_buffer(host, set), 2);
    assert_eq!(steering_discards(host), 0);
    assert_eq!(port_discards(host), 0);
    assert_eq!(vport_unicast_rx(host), 2);
    rx.post(0, 1);
    assert!(rx.receive(&udp()));
    rx.got();
    assert_eq!(out_of_buffer(host, set), 2);
}

#[test]
fn frames_for_mlx5es_drop_rq_count_in_its_own_set() {
    // RQ 0 is a channel's, RQ 1 the drop RQ: no WQE ever, a counter set of its own.
    let rx = Rx::new(2, 0, |_| {});
    let host = &rx.n.host;
    let (channel, drop) = (counter_set(host), counter_set(host));
    for (q, set) in [(0, channel), (1, drop)] {
        rx.modify_rq(q, ModifyRqBitmask::RqCounterSetId.raw().into(), |c| {
            c.set_counter_set_id(set)
        });
    }
    rx.post(0, 8);
    let rqt = rx.rqt(1, &[0]);
    rx.steer_all_to(rx.indirect_tir(rqt, |_| {}));
    assert!(rx.receive(&udp()));
    rx.got();
    // Channels closed: mlx5e points its tables at the drop RQ (MODIFY_RQT).
    rx.modify_rqt(rqt, &[1]);
    for _ in 0..3 {
        assert!(!rx.receive(&udp()));
    }
    assert_eq!(out_of_buffer(host, drop), 3, "rx_if_down_packets");
    assert_eq!(out_of_buffer(host, channel), 0, "rx_out_of_buffer");
    assert_eq!(steering_discards(host), 0);
    // Open again.
    rx.modify_rqt(rqt, &[0]);
    assert!(rx.receive(&udp()));
    assert_eq!(rx.got().rq, 0);
}
