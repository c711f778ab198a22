//! NIC receive steering as the data path sees it after flow-table commands: entries of groups
//! with different match criteria tried in index order, a catch-all group, criteria on a part
//! the parser never fills, and changes (delete, re-add, replace) made after frames already
//! went through, which must take effect for the very next frame (the data path keeps match
//! criteria compiled per group and per entry; nothing may survive a change).

mod common;

use common::dp::Node;
use common::eth::Eth;
use common::Reply;
use mlx5_prm::cmd;
use mlx5_prm::{CqeOpcode, FlowDestinationType, FlowTableType, FteMatchParam};

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];
const IPV4: u16 = 0x0800;
const EXPERIMENTAL: u16 = 0x88b5;

/// An L2 frame: destination, source, ethertype, some payload.
fn frame(dst: [u8; 6], ethertype: u16) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.resize(60, 0x5a);
    f
}

/// CREATE_FLOW_GROUP over `start..=end` of the test table: criteria enable and mask.
fn group(e: &Eth, start: u32, end: u32, enable: u8, mask: impl FnOnce(&mut [u8])) -> u32 {
    let r = e.n.host.run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(e.table);
        i.set_start_flow_index(start);
        i.set_end_flow_index(end);
        i.set_match_criteria_enable(enable);
        mask(i.match_criteria_mut().storage_mut());
    });
    common::be32(&r.ok().out, 8)
}

/// SET_FLOW_TABLE_ENTRY (`op_mod` 0 new, 1 replace) at `index` in `group`: forward to the
/// test TIR with flow tag `tag`, the match value written by `value`.
fn entry(e: &Eth, op_mod: u16, index: u32, group: u32, tag: u32, value: impl FnOnce(&mut [u8])) {
    e.n.host
        .run::<cmd::SetFte>(op_mod, 8, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(e.table);
            i.set_flow_index(index);
            let mut f = i.flow_context_mut();
            f.set_group_id(group);
            f.set_action(0x4);
            f.set_flow_tag(tag);
            f.set_destination_list_size(1);
            value(f.match_value_mut().storage_mut());
            let raw = i.storage_mut();
            let mut d = mlx5_prm::DestFormatStruct::new_unchecked(&mut raw[0x340..0x348]);
            d.set_destination_type(FlowDestinationType::Tir);
            d.set_destination_id(e.tirn);
        })
        .ok();
}

fn delete(e: &Eth, index: u32) -> Reply {
    e.n.host.run::<cmd::DeleteFte>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(e.table);
        i.set_flow_index(index);
    })
}

fn ethertype(m: &mut [u8], v: u16) {
    FteMatchParam::new_unchecked(m)
        .outer_headers_mut()
        .set_ethertype(v);
}

/// Receives `f` into a fresh receive WQE: the flow tag of the entry that steered it, or
/// `None` when it was dropped.
fn steered(e: &Eth, f: &[u8]) -> Option<u32> {
    e.post_recv(0, 2048);
    if e.n.dev().receive_frame(f) {
        Some(e.rcq.expect(CqeOpcode::RespSend).qpn())
    } else {
        assert!(e.rcq.poll().is_none(), "a dropped frame leaves no CQE");
        None
    }
}

#[test]
fn a_deleted_entry_stops_steering_at_once() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let dev = e.n.dev().clone();
    let f = frame(MAC_A, IPV4);
    assert_eq!(steered(&e, &f), Some(0x100));
    assert_eq!(steered(&e, &f), Some(0x100));
    delete(&e, 0).ok();
    // Dropped: the receive WQE posted for it stays posted, nothing took it.
    e.post_recv(0, 2048);
    assert!(!dev.receive_frame(&f));
    assert!(e.rcq.poll().is_none());
    assert_eq!((dev.rx_frames(), dev.rx_dropped()), (2, 1));
    // Back in, at another index: steered again, with the new entry's tag.
    e.add_entry(5, MAC_A, e.tirn);
    assert!(dev.receive_frame(&f));
    assert_eq!(e.rcq.expect(CqeOpcode::RespSend).qpn(), 0x105);
    // Replacing the entry (op_mod 1) with another MAC takes effect for the next frame.
    entry(&e, 1, 5, e.group, 0x155, |m| {
        let mut h = FteMatchParam::new_unchecked(m);
        let mut h = h.outer_headers_mut();
        h.set_dmac_47_16(0x02bb_0000);
        h.set_dmac_15_0(0x0002);
    });
    assert_eq!(steered(&e, &f), None);
    assert_eq!(steered(&e, &frame(MAC_B, IPV4)), Some(0x155));
}

#[test]
fn groups_with_different_criteria_match_in_index_order() {
    // Group 0 (indices 0..=7, the test table's own) matches the destination MAC.
    let e = Eth::new(Node::inline(), &[MAC_A]);
    // Group 1 (8..=11) matches the ethertype only.
    let by_type = group(&e, 8, 11, 1, |m| ethertype(m, 0xffff));
    entry(&e, 0, 9, by_type, 0x209, |m| ethertype(m, EXPERIMENTAL));
    assert_eq!(steered(&e, &frame(MAC_A, IPV4)), Some(0x100));
    assert_eq!(
        steered(&e, &frame(MAC_A, EXPERIMENTAL)),
        Some(0x100),
        "lower index"
    );
    assert_eq!(steered(&e, &frame(MAC_B, EXPERIMENTAL)), Some(0x209));
    assert_eq!(steered(&e, &frame(MAC_B, IPV4)), None);

    // Group 2 (12..=13) masks a bit of the misc part, which no parsed frame sets: an entry
    // wanting it set never matches, one wanting it clear matches everything.
    let misc = group(&e, 12, 13, 2, |m| {
        FteMatchParam::new_unchecked(m)
            .misc_parameters_mut()
            .set_source_sqn(0xff_ffff)
    });
    entry(&e, 0, 12, misc, 0x30c, |m| {
        FteMatchParam::new_unchecked(m)
            .misc_parameters_mut()
            .set_source_sqn(7)
    });
    assert_eq!(steered(&e, &frame(MAC_B, IPV4)), None);
    entry(&e, 0, 13, misc, 0x30d, |_| {});
    assert_eq!(steered(&e, &frame(MAC_B, IPV4)), Some(0x30d));

    // Group 3 (14..=15) enables no part at all: a catch-all, after everything else.
    let all = group(&e, 14, 15, 0, |m| ethertype(m, 0xffff));
    delete(&e, 13).ok();
    entry(&e, 0, 15, all, 0x30f, |m| ethertype(m, 0x1234));
    assert_eq!(
        steered(&e, &frame(MAC_B, IPV4)),
        Some(0x30f),
        "mask not enabled"
    );
    assert_eq!(steered(&e, &frame(MAC_B, EXPERIMENTAL)), Some(0x209));
    // Emptied of its entries, the ethertype group goes; its frames fall to the catch-all.
    delete(&e, 9).ok();
    e.n.host
        .run::<cmd::DestroyFlowGroup>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(e.table);
            i.set_group_id(by_type);
        })
        .ok();
    assert_eq!(steered(&e, &frame(MAC_B, EXPERIMENTAL)), Some(0x30f));
    assert_eq!(steered(&e, &frame(MAC_A, EXPERIMENTAL)), Some(0x100));
}

#[test]
fn a_drop_entry_and_a_new_root_apply_to_the_next_frame() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let f = frame(MAC_A, IPV4);
    assert_eq!(steered(&e, &f), Some(0x100));
    // Another table whose only entry drops everything.
    let drop_all = e.n.host.run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.flow_table_context_mut().set_log_size(2);
    });
    let other = common::eth::id_at(&drop_all.ok());
    let g = e.n.host.run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(other);
        i.set_start_flow_index(0);
        i.set_end_flow_index(0);
    });
    let g = common::be32(&g.ok().out, 8);
    e.n.host
        .run::<cmd::SetFte>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(other);
            i.set_flow_index(0);
            let mut c = i.flow_context_mut();
            c.set_group_id(g);
            c.set_action(0x2);
        })
        .ok();
    // Steering starts at the new root, which drops everything.
    e.n.host
        .run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(other);
        })
        .ok();
    assert_eq!(steered(&e, &f), None);
    // And the old root again.
    e.n.host
        .run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(e.table);
        })
        .ok();
    assert_eq!(steered(&e, &f), Some(0x100));
}

/// Frames of several flows through one doorbell, looped back under one lock of the model
/// (which remembers how the previous frame was steered): each is steered by its own headers.
#[test]
fn a_batch_of_interleaved_flows_is_steered_frame_by_frame() {
    let e = Eth::new(Node::inline(), &[MAC_A, MAC_B]);
    let dev = e.n.dev().clone();
    dev.loopback(true);
    let hdr = |dst: [u8; 6]| frame(dst, IPV4)[..14].to_vec();
    let order = [
        MAC_A,
        MAC_A,
        MAC_B,
        MAC_A,
        [2, 0xcc, 0, 0, 0, 3],
        MAC_B,
        MAC_B,
        MAC_A,
    ];
    for _ in 0..order.len() {
        e.post_recv(0, 2048);
    }
    let mut first8 = 0;
    for (k, dst) in order.iter().enumerate() {
        // Same headers, different lengths: a short frame's length is part of its parse.
        first8 = e.post_send(&hdr(*dst), 0, 10 + k as u32);
    }
    e.ring_send(first8);
    let tags: Vec<u32> = std::iter::from_fn(|| e.rcq.poll())
        .map(|c| mlx5_prm::Cqe64::new_unchecked(&c[..]).qpn())
        .collect();
    assert_eq!(tags, vec![0x100, 0x100, 0x101, 0x100, 0x101, 0x101, 0x100]);
    assert_eq!(
        (dev.rx_frames(), dev.rx_dropped()),
        (7, 1),
        "the unknown MAC is dropped"
    );
}
