//! Flow groups of a table take index ranges that never overlap: CREATE_FLOW_GROUP refuses a
//! range that shares an index with one of the same table's groups (and only those: another
//! table's groups do not count), DESTROY_FLOW_GROUP frees its range, and DESTROY_FLOW_TABLE
//! waits for the table's last group. The model finds an overlap through each table's ranges
//! in order; the proptest checks it against a plain list of ranges.

mod common;

use common::eth::id_at;
use common::flow::{create_group, destroy_group, destroy_table};
use common::Host;
use mlx5_prm::{cmd, FlowTableType};
use mlx5_sim::syndrome as syn;
use proptest::prelude::*;

const BAD_PARAM: u8 = mlx5_prm::CmdStatus::BadParamErr as u8;
/// Tables of 64 entries: ranges collide often.
const LOG_SIZE: u8 = 6;

fn create_table(host: &Host) -> u32 {
    let r = host.run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.flow_table_context_mut().set_log_size(LOG_SIZE);
    });
    id_at(&r.ok())
}

/// One step: create a group on table `table % 2` over `start ..= start + len`, or destroy
/// the `pick`-th group alive.
#[derive(Debug, Clone)]
enum Op {
    Create { table: usize, start: u32, len: u32 },
    Destroy { pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize, 0..64u32, 0..12u32).prop_map(|(table, start, len)| Op::Create { table, start, len }),
        1 => any::<usize>().prop_map(|pick| Op::Destroy { pick }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn groups_of_a_table_never_overlap(ops in prop::collection::vec(op(), 1..60)) {
        let host = Host::inline();
        host.bring_up();
        let tables = [create_table(&host), create_table(&host)];
        // (table index, start, end, group id) of every group alive.
        let mut alive: Vec<(usize, u32, u32, u32)> = Vec::new();
        for op in ops {
            match op {
                Op::Create { table, start, len } => {
                    let end = start + len;
                    let r = create_group(&host, tables[table], start, end);
                    if end >= 1 << LOG_SIZE {
                        r.fails(BAD_PARAM, syn::FG_BAD_RANGE);
                    } else if alive.iter().any(|&(t, s, e, _)| t == table && s <= end && start <= e) {
                        r.fails(BAD_PARAM, syn::FG_OVERLAP);
                    } else {
                        let id = common::be32(&r.ok().out, 8);
                        alive.push((table, start, end, id));
                    }
                }
                Op::Destroy { pick } if !alive.is_empty() => {
                    let (table, _, _, id) = alive.remove(pick % alive.len());
                    destroy_group(&host, tables[table], id).ok();
                }
                Op::Destroy { .. } => {}
            }
        }
        for (i, &table) in tables.iter().enumerate() {
            if alive.iter().any(|&(t, ..)| t == i) {
                destroy_table(&host, FlowTableType::NicRx, table).fails(BAD_PARAM, syn::FT_NOT_EMPTY);
            }
        }
        for (table, _, _, id) in alive.drain(..) {
            destroy_group(&host, tables[table], id).ok();
        }
        for table in tables {
            destroy_table(&host, FlowTableType::NicRx, table).ok();
        }
    }
}

/// Groups end to end over a table's whole range, made from both ends towards the middle: each
/// touches its neighbours' ranges without sharing an index.
#[test]
fn adjacent_groups_fill_a_table() {
    let host = Host::inline();
    host.bring_up();
    let table = create_table(&host);
    let mut ids = Vec::new();
    for k in 0..16u32 {
        let start = if k % 2 == 0 {
            k / 2 * 4
        } else {
            60 - k / 2 * 4
        };
        ids.push(common::be32(
            &create_group(&host, table, start, start + 3).ok().out,
            8,
        ));
    }
    for index in [0, 31, 32, 63] {
        create_group(&host, table, index, index).fails(BAD_PARAM, syn::FG_OVERLAP);
    }
    destroy_group(&host, table, ids[3]).ok();
    // ids[3] held 56 ..= 59: free again, and only that.
    create_group(&host, table, 55, 56).fails(BAD_PARAM, syn::FG_OVERLAP);
    create_group(&host, table, 59, 60).fails(BAD_PARAM, syn::FG_OVERLAP);
    create_group(&host, table, 56, 59).ok();
}
