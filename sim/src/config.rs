//! How a [`Device`](crate::Device) is built: firmware timing, execution mode, capabilities,
//! page demands, the timeouts firmware reports, and initial faults.

use crate::caps::Caps;
use crate::dma::DmaBacking;
use mlx5_prm::{HcaTsFormatCap, TimeoutUnit};
use std::time::Duration;

/// When the firmware finishes initializing, i.e. when the `initializing` bit of the
/// initialization segment (0x1fc bit 31) clears. Doorbells rung before that are ignored, as
/// firmware that is still booting accepts no commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FwReady {
    /// Ready from the start.
    Immediately,
    /// The first `n` reads of 0x1fc report initializing; later ones do not.
    AfterPolls(u32),
    /// Ready once this much time has passed since the device was created.
    After(Duration),
    /// Never ready: the driver's bring-up timeout path.
    Never,
}

/// Where commands execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In the thread that writes the command doorbell, before `write32` returns: fully
    /// deterministic, and the entry is already complete when the driver first polls it.
    Inline,
    /// In one worker thread fed in doorbell order, as real firmware runs beside the driver:
    /// the driver must poll ownership (or wait for the command-completion event).
    Threaded,
}

/// How an RC QP reaches the QP its `remote_qpn` names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RcTransport {
    /// Directly, in memory: the peer QP lives on this device or on the device at the other
    /// end of a [`Wire`](crate::Wire), and each WQE acts on it at once. No frame exists; the
    /// fast path of in-process tests.
    #[default]
    Fabric,
    /// As a RoCEv2 endpoint: requests, responses and acknowledgements are frames on the
    /// port (Ethernet, IP, UDP port 4791, the InfiniBand transport headers and the ICRC),
    /// addressed from the QP's address path and the port's RoCE address table, so any
    /// RoCEv2 peer on the link (another model, Linux's soft-RoCE) can be the other end.
    Roce,
}

/// Initial fault injection (the same settings [`FaultInjector`](crate::FaultInjector)
/// changes at run time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// `(opcode, status, syndrome)`: every execution of the opcode fails with that status and
    /// syndrome without running.
    pub fail_commands: Vec<(u16, u8, u32)>,
    /// Opcodes whose entries are never handed back (ownership stays with the device).
    pub never_complete: Vec<u16>,
    /// `(events, pages_each)`: after the next completed command, raise that many
    /// page-request events of `pages_each` pages each.
    pub page_request_storm: Option<(u32, i32)>,
    /// The first this many SEND and LSO WQEs fail as if their first data segment's lkey were
    /// unknown (see [`FaultInjector::bad_lkey_sends`](crate::FaultInjector::bad_lkey_sends)).
    pub bad_lkey_sends: u32,
    /// The port loses one frame in this many each way (0: none; see
    /// [`FaultInjector::port_loss`](crate::FaultInjector::port_loss)).
    pub port_loss: u32,
}

/// One firmware timeout as the PRM encodes it: a value and its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    /// The unit of `value`.
    pub unit: TimeoutUnit,
    /// The timeout in `unit`s (20 bits; larger values are cut to 20 bits).
    pub value: u32,
}

impl Timeout {
    /// `value` milliseconds.
    pub const fn ms(value: u32) -> Timeout {
        Timeout {
            unit: TimeoutUnit::Milliseconds,
            value,
        }
    }

    /// `value` seconds.
    pub const fn s(value: u32) -> Timeout {
        Timeout {
            unit: TimeoutUnit::Seconds,
            value,
        }
    }

    /// The 32-bit encoding of the initialization segment and of DTOR entries: the unit in
    /// bits 31:29, the value in bits 19:0.
    pub fn encode(self) -> u32 {
        (u32::from(self.unit.raw()) << 29) | (self.value & 0xf_ffff)
    }
}

/// The timeouts firmware reports: the two in the initialization segment (0xff8, 0xffc) and
/// the DTOR register's. When a device reports them (non-zero `cmd_q_init`), Linux reads DTOR
/// and uses these values instead of its own defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Command execution (initialization segment 0xff8).
    pub cmd_exec: Timeout,
    /// Firmware initialization after the command queue address is written (0xffc).
    pub cmd_q_init: Timeout,
    /// DTOR pcie_toggle_to.
    pub pcie_toggle: Timeout,
    /// DTOR health_poll_to: the interval of the driver's health poll.
    pub health_poll: Timeout,
    /// DTOR full_crdump_to.
    pub full_crdump: Timeout,
    /// DTOR fw_reset_to.
    pub fw_reset: Timeout,
    /// DTOR flush_on_err_to.
    pub flush_on_err: Timeout,
    /// DTOR pci_sync_update_to.
    pub pci_sync_update: Timeout,
    /// DTOR tear_down_to.
    pub tear_down: Timeout,
    /// DTOR fsm_reactivate_to.
    pub fsm_reactivate: Timeout,
    /// DTOR reclaim_pages_to.
    pub reclaim_pages: Timeout,
    /// DTOR reclaim_vfs_pages_to.
    pub reclaim_vfs_pages: Timeout,
    /// DTOR reset_unload_to.
    pub reset_unload: Timeout,
}

impl Default for Timeouts {
    /// Values of the order ConnectX firmware reports; the model itself finishes every
    /// operation well within them.
    fn default() -> Self {
        Timeouts {
            cmd_exec: Timeout::s(60),
            cmd_q_init: Timeout::s(2),
            pcie_toggle: Timeout::ms(2000),
            health_poll: Timeout::ms(2000),
            full_crdump: Timeout::s(60),
            fw_reset: Timeout::s(60),
            flush_on_err: Timeout::ms(2000),
            pci_sync_update: Timeout::ms(5000),
            tear_down: Timeout::ms(3000),
            fsm_reactivate: Timeout::ms(5000),
            reclaim_pages: Timeout::ms(5000),
            reclaim_vfs_pages: Timeout::s(120),
            reset_unload: Timeout::s(300),
        }
    }
}

/// Everything a [`Device`](crate::Device) is built from.
#[derive(Debug, Clone)]
pub struct Config {
    /// When the initializing bit clears.
    pub fw_ready: FwReady,
    /// Inline or threaded command execution.
    pub mode: Mode,
    /// The capability profile (maximum and current values).
    pub caps: Caps,
    /// Pages QUERY_PAGES asks for at boot (op_mod 1), before the capabilities are set.
    pub boot_pages: u32,
    /// Pages QUERY_PAGES asks for at init (op_mod 2), before INIT_HCA.
    pub init_pages: u32,
    /// Pages QUERY_PAGES asks for in regular operation (op_mod 3).
    pub regular_pages: u32,
    /// Faults active from the start.
    pub faults: Faults,
    /// Where DMA memory comes from: allocated by the model for a driver in this process (the
    /// default), or mapped by a host from outside (a vfio-user server and its guest's RAM).
    pub dma: DmaBacking,
    /// The timeouts firmware reports; `None`: the initialization segment's timeout words
    /// read 0 (the driver keeps its defaults) and DTOR is not implemented.
    pub timeouts: Option<Timeouts>,
    /// How RC QPs reach their peers.
    pub rc_transport: RcTransport,
    /// The internal timer's value at power-on, in ticks (0 by default, as after a reset). See
    /// [`Config::with_timer_before_wrap`].
    pub timer_start: u64,
    /// Whether the adapter lets the SWP L4 checksum mode be `l4_only` (the read-only
    /// `nv_sw_offload_cap.swp_l4_csum_mode_l4_only` of its non-volatile configuration, which
    /// Linux reads before it writes that mode). True by default, so that the whole devlink
    /// `swp_l4_csum_mode` can be exercised; which ConnectX-5 firmware sets it is not public.
    pub swp_l4_csum_l4_only: bool,
    /// Entries of the function's MSI-X table: the vectors an EQ may interrupt on. CREATE_EQ
    /// refuses an `eqc.intr` of this or more (BAD_PARAM), where an EQ on a vector the table
    /// lacks would never interrupt. 64 by default, as many as the vfio-user server's table.
    pub msix_vectors: u16,
}

impl Config {
    /// The device a Linux guest's `mlx5_core` probes: the
    /// [`Caps::connectx5_probe_only`] profile (port in InfiniBand mode, so the Ethernet
    /// driver is not started), the timeouts of [`Timeouts::default`] (so Linux also reads
    /// DTOR), and page demands of a few hundred KiB. The regular demand is announced with a
    /// page-request event once the driver has an EQ for them, as Linux never asks for it
    /// with QUERY_PAGES.
    pub fn linux_probe_only() -> Config {
        Config {
            caps: Caps::connectx5_probe_only(),
            timeouts: Some(Timeouts::default()),
            boot_pages: 16,
            init_pages: 48,
            regular_pages: 64,
            ..Config::default()
        }
    }

    /// [`Config::linux_probe_only`] with an Ethernet port
    /// ([`Caps::connectx5_linux_ethernet`]): the device for `mlx5e` (`scripts/guest` with
    /// `MLX5_GUEST_PROFILE=ethernet`).
    pub fn linux_ethernet() -> Config {
        Config {
            caps: Caps::connectx5_linux_ethernet(),
            ..Config::linux_probe_only()
        }
    }

    /// This configuration with the queues' timestamp formats `formats` (see
    /// [`Caps::with_ts_formats`]): the knob that turns on real-time CQE timestamps. Every
    /// profile advertises the free-running format only unless told otherwise.
    pub fn with_ts_formats(self, formats: HcaTsFormatCap) -> Config {
        Config {
            caps: self.caps.with_ts_formats(formats),
            ..self
        }
    }

    /// This configuration with the internal timer starting `ticks` before a `bits`-wide
    /// counter wraps (at 2^bits − ticks, modulo 2^64; `bits` of 64 or more is the timer's own
    /// 64-bit wrap). Linux's timecounter keeps 41 bits of the timer (`CYCLECOUNTER_MASK(41)`
    /// in `lib/clock.c`), which at 156.25 MHz wrap every 3.9 hours: started this way, a test
    /// sees the wrap within `ticks` of the device frequency.
    pub fn with_timer_before_wrap(self, bits: u32, ticks: u64) -> Config {
        let wrap = 1u64.checked_shl(bits).unwrap_or(0);
        Config {
            timer_start: wrap.wrapping_sub(ticks),
            ..self
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fw_ready: FwReady::Immediately,
            mode: Mode::Inline,
            caps: Caps::connectx5(),
            boot_pages: 16,
            init_pages: 32,
            regular_pages: 64,
            faults: Faults::default(),
            dma: DmaBacking::default(),
            timeouts: None,
            rc_transport: RcTransport::Fabric,
            timer_start: 0,
            swp_l4_csum_l4_only: true,
            msix_vectors: 64,
        }
    }
}
