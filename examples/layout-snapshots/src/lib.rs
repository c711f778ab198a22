//! A driver crate's guard against layout changes in its `mlx5-prm` dependency.
//!
//! A driver relies on a few layouts (the CQE it parses, the WQE segments it builds, the
//! mailboxes it fills). Every generated view has a `LAYOUT` constant whose `{}` form is a
//! stable text table (name, size, each field's PRM position, name, kernel bit offset and
//! width); `tests/layouts.rs` snapshots the ones this crate uses with insta. When a bump of
//! `mlx5-prm` moves, narrows, widens or removes one of those fields, `cargo test` fails and
//! `cargo insta review` shows the change line by line, before the driver misreads a device.
//!
//! ```
//! let table = mlx5_prm::Cqe64::LAYOUT.to_string();
//! assert!(table.starts_with("cqe64: 64 bytes\n"));
//! ```

/// The layouts this example crate relies on, as a driver would list them.
pub const RELIED_ON: &[mlx5_prm::rt::Layout] = &[
    mlx5_prm::Cqe64::LAYOUT,
    mlx5_prm::WqeCtrlSeg::LAYOUT,
    mlx5_prm::WqeDataSeg::LAYOUT,
    mlx5_prm::CreateCqIn::LAYOUT,
];
