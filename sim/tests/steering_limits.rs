//! Flow-table levels keep steering loop-free, and the walk of one frame is bounded however the
//! tables are wired: a guest cannot make the model loop or fan out without end under its lock.

mod common;

use common::dp::Node;
use common::eth::{id_at, Eth};
use common::{Host, Reply};
use mlx5_prm::cmd;
use mlx5_prm::{FlowDestinationType, FlowTableMissAction, FlowTableType};
use mlx5_sim::syndrome as syn;
use std::sync::mpsc;
use std::time::Duration;

const BAD_PARAM: u8 = mlx5_prm::CmdStatus::BadParamErr as u8;
const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa];

fn create_table(host: &Host, level: u8, miss: Option<u32>) -> Reply {
    host.run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        let mut c = i.flow_table_context_mut();
        c.set_log_size(4);
        c.set_level(level);
        if let Some(miss) = miss {
            c.set_table_miss_action(FlowTableMissAction::Fwd);
            c.set_table_miss_id(miss);
        }
    })
}

fn table(host: &Host, level: u8) -> u32 {
    id_at(&create_table(host, level, None).ok())
}

/// A group over all 16 entries of `table`, matching everything.
fn group(host: &Host, table: u32) -> u32 {
    let r = host
        .run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(table);
            i.set_end_flow_index(15);
        })
        .ok();
    id_at(&r)
}

/// An entry at `index` of `table` forwarding to `dests` (flow tables, or TIRs for `tir`).
fn forward(
    host: &Host,
    table: u32,
    group: u32,
    index: u32,
    dests: &[(bool, u32)],
    ignore: bool,
) -> Reply {
    host.run::<cmd::SetFte>(0, 8 * dests.len(), 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_flow_index(index);
        i.set_ignore_flow_level(ignore);
        let mut f = i.flow_context_mut();
        f.set_group_id(group);
        f.set_action(0x4);
        f.set_destination_list_size(dests.len() as u32);
        let raw = i.storage_mut();
        for (k, &(is_tir, id)) in dests.iter().enumerate() {
            let at = 0x340 + 8 * k;
            let mut d = mlx5_prm::DestFormatStruct::new_unchecked(&mut raw[at..at + 8]);
            d.set_destination_type(if is_tir {
                FlowDestinationType::Tir
            } else {
                FlowDestinationType::FlowTable
            });
            d.set_destination_id(id);
        }
    })
}

#[test]
fn a_table_forwards_and_misses_only_to_higher_levels() {
    let n = Node::inline();
    let host = &n.host;
    let t1 = table(host, 1);
    let g1 = group(host, t1);
    // To itself, to a table of its own level, to a lower level: refused.
    forward(host, t1, g1, 0, &[(false, t1)], false).fails(BAD_PARAM, syn::FTE_DEST_LEVEL);
    let same = table(host, 1);
    let lower = table(host, 0);
    forward(host, t1, g1, 0, &[(false, same)], false).fails(BAD_PARAM, syn::FTE_DEST_LEVEL);
    forward(host, t1, g1, 0, &[(false, lower)], false).fails(BAD_PARAM, syn::FTE_DEST_LEVEL);
    // With the level check lifted, which the model does not offer.
    forward(host, t1, g1, 0, &[(false, lower)], true).fails(BAD_PARAM, syn::FTE_IGNORE_FLOW_LEVEL);
    // One refused destination among good ones refuses the entry.
    let t2 = table(host, 2);
    forward(host, t1, g1, 0, &[(false, t2), (false, t1)], false)
        .fails(BAD_PARAM, syn::FTE_DEST_LEVEL);
    assert_eq!(n.dev().objects().flow_entries, 0);
    forward(host, t1, g1, 0, &[(false, t2)], false).ok();
    // Replacing the entry (op_mod 1) is checked the same way.
    host.run::<cmd::SetFte>(1, 8, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(t1);
        let mut f = i.flow_context_mut();
        f.set_group_id(g1);
        f.set_action(0x4);
        f.set_destination_list_size(1);
        let raw = i.storage_mut();
        let mut d = mlx5_prm::DestFormatStruct::new_unchecked(&mut raw[0x340..0x348]);
        d.set_destination_type(FlowDestinationType::FlowTable);
        d.set_destination_id(t1);
    })
    .fails(BAD_PARAM, syn::FTE_DEST_LEVEL);
    // Misses likewise; levels stop at max_ft_level (64).
    create_table(host, 2, Some(t2)).fails(BAD_PARAM, syn::FT_MISS_LEVEL);
    create_table(host, 3, Some(t2)).fails(BAD_PARAM, syn::FT_MISS_LEVEL);
    create_table(host, 1, Some(t2)).ok();
    create_table(host, 65, None).fails(BAD_PARAM, syn::FT_BAD_LEVEL);
    create_table(host, 64, None).ok();
}

#[test]
fn a_wide_table_graph_steers_a_frame_in_bounded_work() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let host = &e.n.host;
    // 20 levels of 3 tables, each forwarding to all 3 of the next level: 3^20 paths from the
    // root, which a walk that follows every path never finishes.
    const LEVELS: u8 = 20;
    let mut next: Vec<u32> = Vec::new();
    for level in (1..=LEVELS).rev() {
        let tables: Vec<u32> = (0..3).map(|_| table(host, level)).collect();
        for &t in &tables {
            let g = group(host, t);
            let dests: Vec<(bool, u32)> = if next.is_empty() {
                vec![(true, e.tirn)]
            } else {
                next.iter().map(|&id| (false, id)).collect()
            };
            forward(host, t, g, 0, &dests, false).ok();
        }
        next = tables;
    }
    let root = table(host, 0);
    let g = group(host, root);
    let dests: Vec<(bool, u32)> = next.iter().map(|&id| (false, id)).collect();
    forward(host, root, g, 0, &dests, false).ok();
    host.run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(root);
    })
    .ok();
    for k in 0..4 {
        e.post_recv(k * 2048, 2048);
    }
    let mut frame = vec![0u8; 60];
    frame[..6].copy_from_slice(&MAC_A);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let dev = e.n.dev().clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(dev.receive_frame(&frame)).unwrap());
    let delivered = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("steering one frame did not finish in 10 s");
    assert!(delivered);
    // Each table is walked once: the three last-level tables each send it to the TIR.
    assert_eq!(e.n.dev().rx_frames(), 1);
}
