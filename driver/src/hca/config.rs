//! What bring-up is told ([`HcaConfig`]) and what it learns ([`DeviceInfo`]).

use mlx5_prm::CmdHcaCap;
use std::time::Duration;

/// Bring-up settings.
#[derive(Debug, Clone)]
pub struct HcaConfig {
    /// How long to wait for the initializing bit to clear.
    pub fw_ready_timeout: Duration,
    /// Deadline of each command.
    pub cmd_timeout: Duration,
    /// log2 of the async EQ's entries.
    pub eq_log_size: u8,
    /// The driver version string given to firmware.
    pub driver_version: String,
    /// Most firmware pages the device may hold at once (a request beyond it is refused with
    /// [`crate::Error::PageLimit`] before anything is allocated, and the device told the pages will
    /// not come). The capability pages carry no such bound, so this is the driver's own.
    pub max_firmware_pages: usize,
    /// Commands kept in [`crate::Hca::history`], and events in [`crate::Hca::recent_events`] (the last
    /// ones; older ones are counted, not kept).
    pub log_capacity: usize,
}

/// Default of [`HcaConfig::max_firmware_pages`]: 2 GiB of 4 KiB pages, above what adapters
/// ask for (hundreds of MiB), far below what an untrusted request could ask (8 TiB).
pub const DEFAULT_MAX_FIRMWARE_PAGES: usize = 1 << 19;

impl Default for HcaConfig {
    fn default() -> Self {
        HcaConfig {
            fw_ready_timeout: Duration::from_secs(10),
            cmd_timeout: Duration::from_secs(60),
            eq_log_size: 7,
            driver_version: format!("mlx5-prm,{}", env!("CARGO_PKG_VERSION")),
            max_firmware_pages: DEFAULT_MAX_FIRMWARE_PAGES,
            log_capacity: 1024,
        }
    }
}

/// What bring-up learned about the device.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Firmware version (major, minor, subminor).
    pub fw_version: (u16, u16, u16),
    /// The ISSI in use.
    pub issi: u16,
    /// The current general capabilities page (`cmd_hca_cap`), as bytes.
    pub caps: Vec<u8>,
    /// The maximum general capabilities page.
    pub max_caps: Vec<u8>,
    /// The UAR page index.
    pub uar: u32,
    /// The async EQ number.
    pub eqn: u8,
    /// The protection domain.
    pub pd: u32,
    /// The transport domain.
    pub transport_domain: u32,
    /// The reserved lkey (memory accessed by physical address).
    pub resd_lkey: u32,
}

impl DeviceInfo {
    /// The current general capabilities as their generated view.
    pub fn caps(&self) -> CmdHcaCap<&[u8]> {
        CmdHcaCap::new_unchecked(&self.caps[..])
    }
}
