//! A user-space driver for NVIDIA ConnectX (mlx5) adapters, built on the generated
//! `mlx5-prm` types.
//!
//! - [`backend`]: the seam to a device (MMIO, DMA memory, events, barriers); the device model
//!   (`mlx5-sim`, feature `sim`, on by default) is one backend, VFIO on real hardware another;
//! - [`cmd`]: the command interface (queue, mailboxes, ownership, typed errors);
//! - [`pages`]: firmware pages;
//! - [`eq`]: the asynchronous event queue;
//! - [`cq`]: completion queues (owner-bit polling, doorbell record, arming; the doorbell words
//!   from the generated word builders);
//! - [`mr`]: memory regions (mkeys) and the ownership of posted buffers;
//! - [`qp`]: reliable-connected QPs whose states and transitions are the typestate generated
//!   from the spec's state machine (`mlx5_prm::qp_machine`), and their work requests;
//! - [`eth`]: raw Ethernet queues (SQ, RQ, steering by MAC; one set per HCA at a time) with
//!   ixy-style batch calls over a packet buffer pool whose handles carry ownership and return
//!   their buffer on drop;
//! - [`roce`]: the RoCE address (GID) table and the address path of an RC QP to a RoCE peer;
//! - [`clock`]: the device clock, CQE timestamps in ns, PTP adjustments (MTUTC), PPS pins;
//! - [`hca`]: bring-up and teardown, the [`Hca`] handle that owns it all, and typed access
//!   registers ([`Hca::read_reg`], [`Hca::write_reg`]);
//! - [`port`]: a port's state, link modes, FEC, MTU, pause, counters and module
//!   ([`module`] decodes its EEPROM);
//! - [`health`]: firmware health as Linux polls it (counter, syndrome, health buffer) and
//!   [`nvconfig`]: the non-volatile configuration (MNVDA, MNVQC; applied at the next reset).
//!
//! Every resource borrows the HCA it came from (and packets their pool), so none outlives it;
//! dropping a resource destroys its device objects and frees its memory, or quarantines the
//! memory the device may still write (see `docs/architecture.md`, "Ownership rules").
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mlx5_driver::backend::sim::SimBackend;
//! use mlx5_driver::{Hca, HcaConfig};
//!
//! let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
//! let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
//! assert!(hca.info().caps().log_max_qp() > 0);
//! let quarantined = hca.teardown().unwrap();
//! assert_eq!((quarantined.buffers, device.pages_held()), (0, 0));
//! # }
//! ```

pub mod backend;
pub mod clock;
pub mod cmd;
pub mod counters;
pub mod cq;
pub mod device_spec;
mod doorbell;
pub mod eq;
pub mod error;
pub mod eth;
pub mod hca;
pub mod health;
pub mod module;
pub mod mr;
#[cfg(feature = "smoltcp")]
pub mod net;
pub mod nvconfig;
pub mod pages;
pub mod port;
pub mod qp;
mod recent;
mod ring;
pub mod roce;
mod undo;

pub use device_spec::DeviceSpec;
pub use error::{Error, Result};
pub use hca::{DeviceInfo, Hca, HcaConfig};
pub use recent::Recent;
