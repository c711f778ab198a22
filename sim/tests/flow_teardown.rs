//! Taking flow steering down: DELETE_FLOW_TABLE_ENTRY, DESTROY_FLOW_GROUP and
//! DESTROY_FLOW_TABLE, in the order a driver uses (entries, then groups, then tables), the
//! references each one drops, the misuses each one refuses, and what steering does afterwards.

mod common;

use common::dp::Node;
use common::eth::{id_at, Eth};
use common::flow::{create_group, destroy_group, destroy_table};
use common::{Host, Reply};
use mlx5_prm::cmd;
use mlx5_prm::{CqeOpcode, FlowDestinationType, FlowTableMissAction, FlowTableType};
use mlx5_sim::syndrome as syn;

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

const BAD_PARAM: u8 = 0x3;
const BAD_RES: u8 = 0x5;
const RES_BUSY: u8 = 0x6;

fn delete_fte(host: &Host, ty: FlowTableType, table: u32, index: u32) -> Reply {
    host.run::<cmd::DeleteFte>(0, 0, 0, |i| {
        i.set_table_type(ty);
        i.set_table_id(table);
        i.set_flow_index(index);
    })
}

fn destroy_tir(host: &Host, tirn: u32) -> Reply {
    host.run::<cmd::DestroyTir>(0, 0, 0, |i| i.set_tirn(tirn))
}

/// A NIC RX table of 16 entries at `level`, optionally missing to `miss` (of a higher level).
fn create_table(host: &Host, level: u8, miss: Option<u32>) -> u32 {
    id_at(
        &host
            .run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                let mut c = i.flow_table_context_mut();
                c.set_log_size(4);
                c.set_level(level);
                if let Some(miss) = miss {
                    c.set_table_miss_action(FlowTableMissAction::Fwd);
                    c.set_table_miss_id(miss);
                }
            })
            .ok(),
    )
}

/// An entry at `index` of `table` (group `group`) that forwards to flow table `to`.
fn forward_to_table(host: &Host, table: u32, group: u32, index: u32, to: u32) {
    host.run::<cmd::SetFte>(0, 8, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_flow_index(index);
        let mut f = i.flow_context_mut();
        f.set_group_id(group);
        f.set_action(0x4);
        f.set_destination_list_size(1);
        let raw = i.storage_mut();
        let mut d = mlx5_prm::DestFormatStruct::new_unchecked(&mut raw[0x340..0x348]);
        d.set_destination_type(FlowDestinationType::FlowTable);
        d.set_destination_id(to);
    })
    .ok();
}

/// A frame for `dst`: just an L2 header and a few payload bytes.
fn frame(dst: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(b"teardown");
    f
}

#[test]
fn deleting_an_entry_releases_its_tir() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let host = &e.n.host;
    destroy_tir(host, e.tirn).fails(RES_BUSY, syn::TIR_BUSY);
    delete_fte(host, FlowTableType::NicRx, e.table, 0).ok();
    assert_eq!(e.n.dev().objects().flow_entries, 0);
    destroy_tir(host, e.tirn).ok();
}

#[test]
fn deleting_a_missing_entry_fails() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let host = &e.n.host;
    // An empty index inside the group, one outside any group, one past the table's end.
    for index in [1, 12, 1 << 20] {
        delete_fte(host, FlowTableType::NicRx, e.table, index).fails(BAD_PARAM, syn::FTE_NOT_FOUND);
    }
    delete_fte(host, FlowTableType::NicRx, 0x777, 0).fails(BAD_RES, syn::FT_UNKNOWN);
    delete_fte(host, FlowTableType::NicTx, e.table, 0).fails(BAD_RES, syn::FT_UNKNOWN);
    delete_fte(host, FlowTableType::Fdb, e.table, 0).fails(BAD_PARAM, syn::FT_BAD_TYPE);
    host.run::<cmd::DeleteFte>(0, 0, 0, |i| {
        i.set_other_vport(true);
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(e.table);
    })
    .fails(BAD_PARAM, syn::OTHER_FUNCTION);
    // The entry is still there, and goes once.
    delete_fte(host, FlowTableType::NicRx, e.table, 0).ok();
    delete_fte(host, FlowTableType::NicRx, e.table, 0).fails(BAD_PARAM, syn::FTE_NOT_FOUND);
}

#[test]
fn a_group_goes_once_its_entries_are_gone() {
    let e = Eth::new(Node::inline(), &[MAC_A, MAC_B]);
    let host = &e.n.host;
    destroy_group(host, e.table, e.group).fails(BAD_PARAM, syn::FG_NOT_EMPTY);
    delete_fte(host, FlowTableType::NicRx, e.table, 0).ok();
    destroy_group(host, e.table, e.group).fails(BAD_PARAM, syn::FG_NOT_EMPTY);
    delete_fte(host, FlowTableType::NicRx, e.table, 1).ok();

    // A group of another table, or an unknown one, is not this table's group.
    let other = create_table(host, 0, None);
    let other_group = common::be32(&create_group(host, other, 0, 3).ok().out, 8);
    destroy_group(host, e.table, other_group).fails(BAD_RES, syn::FG_UNKNOWN);
    destroy_group(host, e.table, 0x7777).fails(BAD_RES, syn::FG_UNKNOWN);
    destroy_group(host, 0x777, e.group).fails(BAD_RES, syn::FT_UNKNOWN);

    destroy_group(host, e.table, e.group).ok();
    destroy_group(host, e.table, e.group).fails(BAD_RES, syn::FG_UNKNOWN);
    // Its range is free again.
    create_group(host, e.table, 0, 15).ok();
}

#[test]
fn a_table_goes_once_its_groups_are_gone() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let host = &e.n.host;
    destroy_table(host, FlowTableType::NicRx, e.table).fails(BAD_PARAM, syn::FT_NOT_EMPTY);
    delete_fte(host, FlowTableType::NicRx, e.table, 0).ok();
    destroy_table(host, FlowTableType::NicRx, e.table).fails(BAD_PARAM, syn::FT_NOT_EMPTY);
    destroy_group(host, e.table, e.group).ok();
    destroy_table(host, FlowTableType::NicTx, e.table).fails(BAD_RES, syn::FT_UNKNOWN);
    host.run::<cmd::DestroyFlowTable>(0, 0, 0, |i| {
        i.set_other_vport(true);
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(e.table);
    })
    .fails(BAD_PARAM, syn::OTHER_FUNCTION);
    // The root table, now unused, can go: the root hold goes with it.
    destroy_table(host, FlowTableType::NicRx, e.table).ok();
    destroy_table(host, FlowTableType::NicRx, e.table).fails(BAD_RES, syn::FT_UNKNOWN);
    let o = e.n.dev().objects();
    assert_eq!((o.flow_tables, o.flow_groups, o.flow_entries), (0, 0, 0));
}

#[test]
fn a_table_another_table_leads_to_is_busy() {
    let n = Node::inline();
    let host = &n.host;
    // `last` is the miss table of `middle`; `first` has an entry forwarding to `middle`.
    let last = create_table(host, 3, None);
    let middle = create_table(host, 2, Some(last));
    let first = create_table(host, 1, None);
    let group = common::be32(&create_group(host, first, 0, 0).ok().out, 8);
    forward_to_table(host, first, group, 0, middle);

    destroy_table(host, FlowTableType::NicRx, middle).fails(RES_BUSY, syn::FT_BUSY);
    destroy_table(host, FlowTableType::NicRx, last).fails(RES_BUSY, syn::FT_BUSY);
    delete_fte(host, FlowTableType::NicRx, first, 0).ok();
    destroy_table(host, FlowTableType::NicRx, last).fails(RES_BUSY, syn::FT_BUSY);
    destroy_table(host, FlowTableType::NicRx, middle).ok();
    destroy_table(host, FlowTableType::NicRx, last).ok();
    destroy_group(host, first, group).ok();
    destroy_table(host, FlowTableType::NicRx, first).ok();
    assert_eq!(n.dev().objects().flow_tables, 0);
}

#[test]
fn a_root_that_is_also_a_destination_stays() {
    let n = Node::inline();
    let host = &n.host;
    let root = create_table(host, 2, None);
    let other = create_table(host, 1, Some(root));
    host.run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(root);
    })
    .ok();
    destroy_table(host, FlowTableType::NicRx, root).fails(RES_BUSY, syn::FT_BUSY);
    destroy_table(host, FlowTableType::NicRx, other).ok();
    destroy_table(host, FlowTableType::NicRx, root).ok();
    // A new root can be set afterwards.
    let next = create_table(host, 0, None);
    host.run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(next);
    })
    .ok();
    destroy_table(host, FlowTableType::NicRx, next).ok();
}

#[test]
fn after_teardown_frames_are_dropped() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let dev = e.n.dev().clone();
    let host = &e.n.host;
    e.post_recv(0, 2048);
    e.post_recv(0x1000, 2048);
    assert!(dev.receive_frame(&frame(MAC_A)));
    assert_eq!((dev.rx_frames(), dev.rx_dropped()), (1, 0));
    e.rcq.expect(CqeOpcode::RespSend);

    delete_fte(host, FlowTableType::NicRx, e.table, 0).ok();
    destroy_group(host, e.table, e.group).ok();
    destroy_table(host, FlowTableType::NicRx, e.table).ok();
    destroy_tir(host, e.tirn).ok();
    let o = dev.objects();
    assert_eq!(
        (o.flow_tables, o.flow_groups, o.flow_entries, o.tirs),
        (0, 0, 0, 0)
    );

    // A receive WQE is still posted, but no root table steers the frame to it.
    assert!(!dev.receive_frame(&frame(MAC_A)));
    assert_eq!((dev.rx_frames(), dev.rx_dropped()), (1, 1));
    assert!(e.rcq.poll().is_none());
}
