//! A vfio-user device server: the `mlx5-sim` device model presented as a ConnectX-5 PCI
//! function (15b3:1017) on a Unix socket, so that QEMU's `vfio-user-pci` device gives it to a
//! guest and the guest kernel's own `mlx5_core` drives it.
//!
//! The protocol is the rust-vmm `vfio_user` crate's; this crate is the device behind it:
//!
//! | module | what |
//! |---|---|
//! | [`pci`] | configuration space: identity, BAR 0, PM / PCI Express (FLR) / MSI-X / vendor capabilities |
//! | [`backend`] | the crate's `ServerBackend`: region accesses, DMA_MAP/UNMAP, SET_IRQS, reset |
//! | [`guestmem`] | guest memory shared by file descriptor, checked and mmapped |
//! | [`msix`] | vectors, eventfds, masks, pending bits |
//! | [`model`] | the device model and what the server asks of it |
//! | [`relay`] | the public socket: whole messages framed and checked before the crate's `Server::run` sees them |
//! | [`session`] | one client after another, each with a fresh device |
//! | [`port`] | the Ethernet port cabled to a TAP interface, and its pcap capture |
//! | [`control`] | the control socket (status, page requests, health faults, quit) |
//! | [`trace`], [`commands`] | the command trace as JSON lines, decoded from the spec |
//!
//! The guest is untrusted: every message is framed and checked by the relay before the
//! protocol crate sees it, and a bad one gets an error reply (none if it was posted, with
//! NoReply; the stream stays usable either way); a client that misbehaves beyond that, or
//! disconnects, ends only its own session.

pub mod backend;
pub mod commands;
pub mod control;
pub mod guestmem;
pub mod model;
pub mod msix;
pub mod pci;
pub mod port;
pub mod relay;
pub mod session;
pub mod stats;
pub mod trace;
