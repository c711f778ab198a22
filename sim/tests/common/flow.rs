//! Flow-steering commands the tests issue by hand, on NIC RX tables unless a table type is
//! named: groups made and destroyed, tables destroyed.

use super::{Host, Reply};
use mlx5_prm::cmd;
use mlx5_prm::FlowTableType;

/// A group over entries `start ..= end` of NIC RX table `table`, with no match criteria.
pub fn create_group(host: &Host, table: u32, start: u32, end: u32) -> Reply {
    host.run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_start_flow_index(start);
        i.set_end_flow_index(end);
    })
}

/// DESTROY_FLOW_GROUP of `group` in NIC RX table `table`.
pub fn destroy_group(host: &Host, table: u32, group: u32) -> Reply {
    host.run::<cmd::DestroyFlowGroup>(0, 0, 0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_group_id(group);
    })
}

/// DESTROY_FLOW_TABLE of `table`, named as a table of type `ty`.
pub fn destroy_table(host: &Host, ty: FlowTableType, table: u32) -> Reply {
    host.run::<cmd::DestroyFlowTable>(0, 0, 0, |i| {
        i.set_table_type(ty);
        i.set_table_id(table);
    })
}
