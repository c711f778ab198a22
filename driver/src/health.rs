//! Firmware health, watched the way Linux's `mlx5_core` watches it (`health.c`): firmware
//! keeps incrementing a counter in the initialization segment (`health_counter`, 0x1010) and
//! reports a fatal condition with a syndrome (the byte next to the counter, and the health
//! buffer at 0x200 with the details). A driver samples both every few seconds; a counter that
//! stops moving for several samples in a row, or a syndrome, means the firmware is gone.
//!
//! [`HealthMonitor`] is that poll without a thread: the caller calls [`HealthMonitor::poll`]
//! every [`HealthConfig::interval`] (or [`HealthMonitor::run`] does the waiting), and each
//! poll answers with a [`HealthStatus`]. [`Hca::health`] is a one-off snapshot: firmware
//! version, counter, syndrome and the decoded health buffer.
//!
//! Linux's defaults are kept: a poll every 2 s (DTOR's `health_poll_to`, Linux adds up to a
//! second at random) and [`MAX_MISSES`] (3) unchanged samples. Linux 6.x treats the syndrome
//! as fatal together with the buffer's `rfr` (reset required) bit and only reports a counter
//! that stopped; this monitor calls both fatal, as the older driver did, and keeps `rfr` and
//! the miss count in the status so a caller can tell them apart. An all-ones firmware version
//! in the buffer means PCI reads no longer reach the device, also fatal (Linux's "PCI slot
//! is unavailable").
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mlx5_driver::backend::sim::SimBackend;
//! use mlx5_driver::health::{HealthConfig, Verdict};
//! use mlx5_driver::{Hca, HcaConfig};
//!
//! let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
//! let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
//! assert!(hca.health().healthy());
//! device.set_health_syndrome(0x10);
//! let mut monitor = hca.health_monitor(HealthConfig::default());
//! let status = monitor.poll().unwrap();
//! assert!(matches!(status.verdict, Verdict::Fatal(_)));
//! assert_eq!(status.syndrome.name, Some("high_temp_err"));
//! # }
//! ```

use crate::backend::{Backend, Mmio, Regs};
use crate::error::Result;
use crate::Hca;
use mlx5_prm::rt::MmioBytes;
use mlx5_prm::{HealthSyndrome, InitialSeg};
use std::fmt;
use std::time::Duration;

/// Unchanged counter samples in a row that make the device unhealthy (Linux's MAX_MISSES).
pub const MAX_MISSES: u32 = 3;

/// Time between polls (Linux's health poll interval, DTOR's default `health_poll_to`).
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// The firmware assertion words at the start of the health buffer: six dwords that the
/// kernel's `device.h` names (`assert_var`) and the spec's `health_buffer` leaves reserved.
const ASSERT_VARS: usize = 6;

/// How the monitor judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HealthConfig {
    /// Unchanged counter samples in a row that are fatal (at least 1).
    pub max_misses: u32,
    /// Time between polls: what [`HealthMonitor::run`] waits, and what a caller of
    /// [`HealthMonitor::poll`] should. Shorter than the firmware's counter period, a healthy
    /// counter looks stopped.
    pub interval: Duration,
}

impl Default for HealthConfig {
    /// Linux's: 3 misses, 2 s.
    fn default() -> HealthConfig {
        HealthConfig {
            max_misses: MAX_MISSES,
            interval: POLL_INTERVAL,
        }
    }
}

/// A health syndrome with its name in the spec (`health_syndrome`) and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Syndrome {
    /// The raw byte; 0 while healthy.
    pub raw: u8,
    /// The spec's name for it (`hw_fatal_err`), if it has one.
    pub name: Option<&'static str>,
    /// What it means, in the words of Linux's health report (paraphrased).
    pub description: &'static str,
}

impl Syndrome {
    /// `raw` decoded.
    pub fn decode(raw: u8) -> Syndrome {
        let known = HealthSyndrome::from_raw(raw.into());
        Syndrome {
            raw,
            name: known.map(HealthSyndrome::spec_name),
            description: match known {
                None if raw == 0 => "no error",
                None => "a syndrome Linux does not know",
                Some(s) => describe(s),
            },
        }
    }

    /// True for a non-zero syndrome.
    pub fn is_error(&self) -> bool {
        self.raw != 0
    }
}

impl fmt::Display for Syndrome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "0x{:02x} {name}: {}", self.raw, self.description),
            None => write!(f, "0x{:02x}: {}", self.raw, self.description),
        }
    }
}

/// What each syndrome means, after Linux's `hsynd_str()` (our words).
fn describe(s: HealthSyndrome) -> &'static str {
    match s {
        HealthSyndrome::FwInternalErr => "the firmware hit an internal error",
        HealthSyndrome::DeadIrisc => "an embedded processor (IRISC) stopped responding",
        HealthSyndrome::HwFatalErr => "the hardware hit an error it cannot recover from",
        HealthSyndrome::FwCrcErr => "the firmware image failed its CRC check",
        HealthSyndrome::IcmFetchPciErr => {
            "a PCI error hit the device's fetch of its host memory (ICM)"
        }
        // Linux words this one as a plain fatal hardware error.
        HealthSyndrome::IcmPageErr => "fatal hardware error (an ICM page error)",
        HealthSyndrome::AsynchronousEqBufOverrun => {
            "the asynchronous event queue's buffer overflowed"
        }
        HealthSyndrome::EqInErr => "an event queue went into error",
        HealthSyndrome::EqInv => "an event queue that does not exist was referenced",
        HealthSyndrome::FfserErr => "the firmware reported an FFSER error",
        HealthSyndrome::HighTempErr => "the device is too hot",
        HealthSyndrome::IcmPciPoisonedErr => "data fetched over PCI for ICM arrived poisoned",
        HealthSyndrome::TrustLockdownErr => "the firmware went into trust lockdown",
    }
}

/// A firmware version, `major.minor.subminor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FwVersion {
    /// Major revision.
    pub major: u16,
    /// Minor revision.
    pub minor: u16,
    /// Sub-minor revision.
    pub subminor: u16,
}

impl fmt::Display for FwVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.subminor)
    }
}

/// The syslog name of a health severity (Linux prints the level with the buffer).
pub fn severity_name(level: u8) -> &'static str {
    match level {
        0 => "emergency",
        1 => "alert",
        2 => "critical",
        3 => "error",
        4 => "warning",
        5 => "notice",
        6 => "info",
        7 => "debug",
        _ => "unknown",
    }
}

/// The health buffer (initialization segment 0x200), decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HealthBufferReport {
    /// Firmware assertion words (device.h's `assert_var`; reserved in the spec's layout).
    pub assert_var: [u32; ASSERT_VARS],
    /// Address of the assertion that fired (`assert_existptr`; Linux's `assert_exit_ptr`).
    pub assert_exit_ptr: u32,
    /// Return address of its caller.
    pub assert_callra: u32,
    /// Firmware time stamp of the failure.
    pub time: u32,
    /// The raw firmware version word; all ones when PCI reads fail.
    pub fw_version_raw: u32,
    /// Hardware id.
    pub hw_id: u32,
    /// Reset flow required.
    pub rfr: bool,
    /// The severity field holds a value.
    pub severity_valid: bool,
    /// Severity as a syslog level: the field when valid, else 3 (error), as Linux reads it.
    pub severity: u8,
    /// Its name.
    pub severity_name: &'static str,
    /// The embedded processor that reported the failure.
    pub irisc_index: u8,
    /// The buffer's syndrome.
    pub synd: Syndrome,
    /// Vendor detail for it.
    pub ext_synd: u16,
}

/// A snapshot of the device's health ([`Hca::health`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HealthReport {
    /// Firmware version of the initialization segment (now, not at bring-up).
    pub fw_version: FwVersion,
    /// The heartbeat counter (24 bits).
    pub health_counter: u32,
    /// The syndrome byte next to it.
    pub health_syndrome: Syndrome,
    /// The health buffer.
    pub buffer: HealthBufferReport,
}

impl HealthReport {
    /// No syndrome in either place, and PCI reads reach the device. (A stopped counter needs
    /// several samples: [`HealthMonitor`].)
    pub fn healthy(&self) -> bool {
        self.fatal().is_none()
    }

    /// What of this snapshot alone is fatal.
    fn fatal(&self) -> Option<Fatal> {
        if self.buffer.fw_version_raw == u32::MAX {
            return Some(Fatal::PciUnreachable);
        }
        let syndrome = if self.health_syndrome.is_error() {
            self.health_syndrome
        } else {
            self.buffer.synd
        };
        syndrome.is_error().then_some(Fatal::Syndrome {
            syndrome,
            reset_required: self.buffer.rfr,
        })
    }
}

/// Why the device is considered dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "cause", rename_all = "snake_case"))]
pub enum Fatal {
    /// Firmware reported a syndrome.
    Syndrome {
        /// The syndrome (the segment's byte, else the buffer's).
        syndrome: Syndrome,
        /// The buffer's rfr bit: firmware asks for a reset (Linux 6.x's fatal condition).
        reset_required: bool,
    },
    /// The counter did not move for `misses` polls in a row.
    MissedHeartbeats {
        /// Unchanged samples in a row.
        misses: u32,
        /// The value it is stuck at.
        counter: u32,
    },
    /// The health buffer's firmware version reads all ones: the device no longer answers on
    /// PCI.
    PciUnreachable,
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fatal::Syndrome {
                syndrome,
                reset_required,
            } => write!(
                f,
                "health syndrome {syndrome}{}",
                if *reset_required {
                    " (reset required)"
                } else {
                    ""
                }
            ),
            Fatal::MissedHeartbeats { misses, counter } => write!(
                f,
                "health counter stuck at {counter} for {misses} polls (firmware not responding)"
            ),
            Fatal::PciUnreachable => write!(f, "PCI reads no longer reach the device"),
        }
    }
}

/// A poll's judgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Verdict {
    /// Counter moving (or not stuck long enough yet), no syndrome.
    Healthy,
    /// The device is dead.
    Fatal(Fatal),
}

/// What one poll saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HealthStatus {
    /// The judgement.
    pub verdict: Verdict,
    /// The counter read.
    pub counter: u32,
    /// Unchanged samples in a row so far.
    pub misses: u32,
    /// Polls so far (this one included).
    pub polls: u64,
    /// The syndrome read (segment byte, else buffer).
    pub syndrome: Syndrome,
}

impl HealthStatus {
    /// True unless the verdict is fatal.
    pub fn healthy(&self) -> bool {
        self.verdict == Verdict::Healthy
    }
}

/// The initialization segment of `hca`, read live through its backend.
fn seg<B: Backend>(hca: &Hca<B>) -> InitialSeg<MmioBytes<Regs<'_, B::Mmio>>> {
    // SAFETY: callers only read it.
    let regs = unsafe { Regs::new(hca.backend().mmio()) };
    InitialSeg::new_unchecked(MmioBytes::new(regs, InitialSeg::SIZE))
}

/// Byte offset of the health buffer in the segment.
fn buffer_offset() -> usize {
    InitialSeg::HEALTH_BUFFER.bit_offset / 8
}

impl<B: Backend> Hca<B> {
    /// The device's health now: firmware version, counter, syndrome and health buffer, read
    /// from the initialization segment (no command; works on a device whose firmware is dead).
    pub fn health(&self) -> HealthReport {
        let s = seg(self);
        let h = s.health_buffer();
        let mmio = self.backend().mmio();
        let base = buffer_offset();
        let assert_var = std::array::from_fn(|i| mmio.read32(base + 4 * i));
        let valid = h.valid();
        let severity = if valid { h.severity() } else { 3 };
        let buffer = HealthBufferReport {
            assert_var,
            assert_exit_ptr: h.assert_existptr(),
            assert_callra: h.assert_callra(),
            time: h.time(),
            fw_version_raw: h.fw_version(),
            hw_id: h.hw_id(),
            rfr: h.rfr(),
            severity_valid: valid,
            severity,
            severity_name: severity_name(severity),
            irisc_index: h.irisc_index(),
            synd: Syndrome::decode(h.synd_raw()),
            ext_synd: h.ext_synd(),
        };
        HealthReport {
            fw_version: FwVersion {
                major: s.fw_rev_major(),
                minor: s.fw_rev_minor(),
                subminor: s.fw_rev_subminor(),
            },
            health_counter: s.health_counter(),
            health_syndrome: Syndrome::decode(s.health_syndrome_raw()),
            buffer,
        }
    }

    /// A [`HealthMonitor`] of this HCA; the counter as it reads now is its baseline.
    pub fn health_monitor(&self, config: HealthConfig) -> HealthMonitor<'_, B> {
        HealthMonitor::new(self, config)
    }
}

/// Linux's health poll, driven by the caller: each [`poll`](Self::poll) samples the counter
/// and the syndrome once. The counter read when the monitor is made is the first sample, so a
/// counter that never moves is fatal at exactly the [`HealthConfig::max_misses`]-th poll.
/// The verdict is recomputed on every poll: a device that heals (its counter moves again and
/// its syndrome clears) polls healthy again.
pub struct HealthMonitor<'h, B: Backend> {
    hca: &'h Hca<B>,
    config: HealthConfig,
    prev: u32,
    misses: u32,
    polls: u64,
}

impl<'h, B: Backend> HealthMonitor<'h, B> {
    /// A monitor of `hca` judging by `config` (`max_misses` of 0 is taken as 1).
    pub fn new(hca: &'h Hca<B>, config: HealthConfig) -> HealthMonitor<'h, B> {
        HealthMonitor {
            hca,
            config: HealthConfig {
                max_misses: config.max_misses.max(1),
                ..config
            },
            prev: seg(hca).health_counter(),
            misses: 0,
            polls: 0,
        }
    }

    /// How the monitor judges.
    pub fn config(&self) -> &HealthConfig {
        &self.config
    }

    /// One sample: the counter against the last one, the syndrome, the buffer's firmware
    /// version. Reads registers only, so it works when commands no longer complete; it never
    /// fails today, and returns a `Result` so a backend whose reads can fail may report it.
    pub fn poll(&mut self) -> Result<HealthStatus> {
        let report = self.hca.health();
        let counter = report.health_counter;
        if counter == self.prev {
            self.misses = self.misses.saturating_add(1);
        } else {
            self.misses = 0;
        }
        self.prev = counter;
        self.polls += 1;
        let syndrome = if report.health_syndrome.is_error() {
            report.health_syndrome
        } else {
            report.buffer.synd
        };
        let verdict = match report.fatal() {
            Some(f) => Verdict::Fatal(f),
            None if self.misses >= self.config.max_misses => {
                Verdict::Fatal(Fatal::MissedHeartbeats {
                    misses: self.misses,
                    counter,
                })
            }
            None => Verdict::Healthy,
        };
        if let Verdict::Fatal(f) = verdict {
            log::error!("device health: {f}");
        }
        Ok(HealthStatus {
            verdict,
            counter,
            misses: self.misses,
            polls: self.polls,
            syndrome,
        })
    }

    /// Polls `polls` times, [`HealthConfig::interval`] apart, and stops at the first fatal
    /// verdict; returns the last status (`None` for 0 polls). Blocks the calling thread.
    pub fn run(&mut self, polls: usize) -> Result<Option<HealthStatus>> {
        let mut last = None;
        for i in 0..polls {
            if i > 0 {
                std::thread::sleep(self.config.interval);
            }
            let status = self.poll()?;
            last = Some(status);
            if !status.healthy() {
                break;
            }
        }
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_syndrome_has_words() {
        for s in HealthSyndrome::ALL {
            let d = Syndrome::decode(s.raw());
            assert_eq!(d.name, Some(s.spec_name()));
            assert!(!d.description.is_empty() && d.is_error());
        }
        assert_eq!(Syndrome::decode(0).description, "no error");
        assert_eq!(Syndrome::decode(0x42).name, None);
        assert_eq!(
            Syndrome::decode(0x8).to_string(),
            "0x08 hw_fatal_err: the hardware hit an error it cannot recover from"
        );
    }

    /// The JSON shape tools read: the verdict tagged, the cause inside it.
    #[cfg(feature = "serde")]
    #[test]
    fn verdicts_serialize_tagged() {
        let json = |v: Verdict| serde_json::to_value(v).unwrap();
        assert_eq!(json(Verdict::Healthy), "healthy");
        let stuck = Verdict::Fatal(Fatal::MissedHeartbeats {
            misses: 3,
            counter: 7,
        });
        assert_eq!(
            json(stuck),
            serde_json::json!({"fatal": {"cause": "missed_heartbeats", "misses": 3, "counter": 7}})
        );
        let synd = json(Verdict::Fatal(Fatal::Syndrome {
            syndrome: Syndrome::decode(0x10),
            reset_required: true,
        }));
        assert_eq!(synd["fatal"]["cause"], "syndrome");
        assert_eq!(synd["fatal"]["syndrome"]["name"], "high_temp_err");
        let pci = json(Verdict::Fatal(Fatal::PciUnreachable));
        assert_eq!(
            pci,
            serde_json::json!({"fatal": {"cause": "pci_unreachable"}})
        );
    }

    #[test]
    fn versions_and_severities_print() {
        let v = FwVersion {
            major: 16,
            minor: 35,
            subminor: 1000,
        };
        assert_eq!(v.to_string(), "16.35.1000");
        assert_eq!(severity_name(2), "critical");
        assert_eq!(severity_name(9), "unknown");
    }
}
