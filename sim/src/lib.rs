//! A software model of an mlx5 adapter that behaves as the PRM says the hardware does: the
//! initialization segment, the command interface, firmware pages, queues and the data path.
//!
//! It is the default device for every test and demo in this workspace, since the team has no
//! ConnectX card, and a product of its own for anyone testing a driver without hardware. The
//! model is built on the same generated `mlx5-prm` types as the driver; it lands with the
//! bring-up issue.
