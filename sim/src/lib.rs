//! A software model of an mlx5 (ConnectX) adapter that behaves as the PRM says the hardware
//! does: the initialization segment, the command interface with its mailboxes, firmware pages,
//! capabilities, the objects of the control path (EQs, CQs, mkeys, QPs, SQs, RQs, TIS/TIR/RQT,
//! flow tables, vports) and events, and the data path: send queues run on send doorbells and
//! BlueFlame copies up to the counter of their doorbell record, RC QPs send, write, read and
//! do atomics on their peer (on the same device or across a [`Wire`]), Ethernet SQs put frames
//! on the port ([`Link`]), received frames are steered through the flow tables to RQs, and
//! CQEs land in CQ rings with completion events for armed CQs.
//!
//! It is the default device for every test and demo in this workspace, since no one here has a
//! ConnectX card, and a product of its own: a device to test a driver against without
//! hardware, which answers every misuse with the PRM's status and a syndrome naming the check
//! that failed ([`syndrome`]). It is written from the device's side on the same generated
//! `mlx5-prm` types as the driver, so the two meet only at the PRM's byte layouts.
//!
//! ```
//! use mlx5_sim::{Config, Device};
//!
//! let dev = Device::new(Config::default());
//! assert_eq!(dev.read32(0x04) >> 16, 5); // cmd_interface_rev
//! assert_eq!(dev.read32(0x1fc) >> 31, 0); // not initializing
//! let cmdq = dev.dma().alloc(4096, 4096).unwrap();
//! dev.write32(0x10, (cmdq.iova >> 32) as u32);
//! dev.write32(0x14, cmdq.iova as u32);
//! ```
//!
//! The driver reaches the device through [`Device::read32`], [`Device::write32`],
//! [`Device::write64`] and [`Device::write_block`] (BAR 0) and memory from [`Device::dma`]; a
//! test also plays firmware and link through [`Device::request_pages`],
//! [`Device::release_all_pages`], [`Device::raise_port_change`],
//! [`Device::set_health_syndrome`], [`Device::inject_health_error`],
//! [`Device::stop_health_counter`], [`Device::faults`], [`Device::receive_frame`],
//! [`Device::attach_link`], [`Wire::connect`] and [`Device::tick`]. A host (such as a
//! vfio-user server) watches every command with [`Device::set_command_observer`] and lists
//! what the model lacks with [`Device::unimplemented_commands`]. [`Config::linux_probe_only`]
//! is the device a Linux guest's `mlx5_core` probes (see `docs/linux-probe.md`).

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod bar;
mod bits;
mod budget;
mod busmaster;
mod caps;
mod clock;
mod cmdq;
mod config;
mod datapath;
mod device;
// The host-facing API: external DMA, sized BAR accesses, the interrupt sink, reset.
mod host;
// The one module that handles raw host memory (see its documentation for the argument).
#[allow(unsafe_code)]
mod dma;
mod events;
mod exec;
mod fail;
mod faults;
mod frames;
mod inventory;
mod irq;
mod mailbox;
mod model;
mod module_eeprom;
mod observe;
mod pages;
mod pas;
pub mod pcap;
mod port_status;
mod record;
mod regs;
mod roce_addr;
mod session;
mod stackvec;
pub mod syndrome;
mod table;
// TAP devices, namespaces and interface ioctls are system calls on raw descriptors.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub mod tap;
mod uar;
mod wire;
mod worker;

pub use bar::{BAR_SIZE, FIRST_UAR, UAR_PAGE_SIZE};
pub use budget::STORAGE_BUDGET;
pub use busmaster::HELD_MAX as BUS_MASTER_HELD_MAX;
pub use caps::{Caps, SetRule, Settable};
pub use config::{Config, Faults, FwReady, Mode, RcTransport, Timeout, Timeouts};
pub use datapath::roce::RoceStats;
pub use device::Device;
pub use dma::{
    DmaBacking, DmaError, DmaRegion, DmaSpace, DEFAULT_DMA_LIMIT, DMA_PAGE_SIZE, IOVA_BASE,
};
pub use exec::handles::RESD_LKEY;
pub use exec::hca::PSID;
pub use faults::FaultInjector;
pub use host::BAR_SPARE;
pub use inventory::Objects;
pub use irq::InterruptSink;
pub use module_eeprom::{ModuleEeprom, MODULE_PN, MODULE_SN, MODULE_VENDOR};
pub use observe::{
    CommandObserver, CommandTrace, UnimplementedCommand, UnimplementedCommands, MAX_UNIMPLEMENTED,
};
pub use port_status::PortStatus;
pub use record::{CommandRecord, COMMAND_LOG};
pub use regs::{HealthError, FW_REV, HEALTH_COUNTER_PERIOD, LOG_CMDQ_SIZE, LOG_CMDQ_STRIDE};
pub use wire::{Link, Wire};

/// Opcodes of every command the model executes.
pub fn supported_opcodes() -> impl Iterator<Item = u16> {
    exec::opcodes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shareable<T: Send + Sync>() {}

    #[test]
    fn handles_cross_threads() {
        shareable::<Device>();
        shareable::<DmaSpace>();
        shareable::<DmaRegion>();
        shareable::<FaultInjector>();
        shareable::<Wire>();
    }
}
