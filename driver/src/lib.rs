//! A user-space mlx5 driver built on the generated `mlx5-prm` types: HCA initialization, the
//! command interface, event, completion and work queues, and the data path.
//!
//! The same code runs against the device model (`mlx5-sim`) and, through a VFIO backend, on
//! real hardware. It lands with the bring-up and data-path issues.
