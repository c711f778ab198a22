//! Commands, layouts and unions by opcode or name, from the tables `mlx5-prm` generates from
//! the spec (`cmd::ALL`, and with feature `reflect` `ALL_LAYOUTS` / `ALL_UNIONS`): what the
//! trace needs to name a command and decode its mailboxes. Nothing here is written by hand,
//! so a command the spec adds is traced without a change to this crate.

use mlx5_prm::rt::reflect::{LayoutAccess, UnionAccess};

pub use mlx5_prm::rt::CommandInfo;

/// The command with `opcode`, if the spec has it.
pub fn by_opcode(opcode: u16) -> Option<&'static CommandInfo> {
    mlx5_prm::cmd::by_opcode(opcode)
}

/// The reflection table of the layout called `name`.
pub fn layout(name: &str) -> Option<&'static LayoutAccess> {
    mlx5_prm::layout_by_name(name)
}

/// The reflection table of the union called `name`.
pub fn union(name: &str) -> Option<&'static UnionAccess> {
    mlx5_prm::union_by_name(name)
}
