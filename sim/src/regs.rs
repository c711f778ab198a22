//! The initialization segment (BAR 0 offset 0): revisions, the command queue address and
//! geometry, the NIC interface state, the command doorbell, the initializing flag, the
//! timeouts, the health area and the health counter, kept as an image of the generated
//! `InitialSeg` register block.
//!
//! Registers the driver only reads are written here through the generated field positions;
//! registers it writes are decoded here. Reads have the side effects firmware gives them: the
//! initializing flag follows [`FwReady`], and the internal timer and the health counter run on
//! the monotonic clock from power-on (the creation of this segment, or the last firmware
//! reset), so they advance without any thread. The health counter stops when firmware fails
//! ([`HealthError`]) or hangs.

use crate::clock::Clock;
use crate::config::{FwReady, Timeouts};
use mlx5_prm::rt::{self, Bytes as _, BytesMut as _, Field};
use mlx5_prm::{HealthBuffer, InitialSeg, NicInterfaceMode};
use std::time::{Duration, Instant};

/// Firmware revision the model reports (major.minor.subminor), in the range of ConnectX-5
/// firmware.
pub const FW_REV: (u16, u16, u16) = (16, 35, 1000);
/// log2 of the number of command queue entries (32, the most drivers support).
pub const LOG_CMDQ_SIZE: u8 = 5;
/// log2 of the command queue stride (64-byte entries).
pub const LOG_CMDQ_STRIDE: u8 = 6;
/// Hardware id in the health buffer: the PCI device id of a ConnectX-5.
pub const HW_ID: u32 = 0x1017;
/// How often the health counter advances while firmware is alive. Linux polls it every two
/// seconds (plus up to one) and after a reset every 50 ms; any period well below both works.
pub const HEALTH_COUNTER_PERIOD: Duration = Duration::from_millis(10);
/// The NIC interface value a driver writes into 0x14 bits 10:8 to have firmware reset
/// itself (the kernel's MLX5_INITIAL_SEG_NIC_INTERFACE_SW_RESET).
pub const NIC_INTERFACE_SW_RESET: u32 = 7;

/// Byte offsets of the registers the model decodes.
mod off {
    pub const CMDQ_ADDR_H: usize = 0x10;
    pub const CMDQ_ADDR_L_SZ: usize = 0x14;
    pub const CMD_DBELL: usize = 0x18;
    pub const INITIALIZING: usize = 0x1fc;
    pub const TIMER_H: usize = 0x1000;
    pub const TIMER_L: usize = 0x1004;
    pub const HEALTH_COUNTER: usize = 0x1010;
    pub const REAL_TIME_H: usize = 0x1040;
    pub const REAL_TIME_L: usize = 0x1044;
}

/// Where the command queue is and how it is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdqGeometry {
    /// IOVA of entry 0.
    pub base: u64,
    /// Number of entries.
    pub entries: u32,
    /// Distance between entries in bytes.
    pub stride: u64,
}

/// What a register write asks of the rest of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegWrite {
    /// Nothing beyond updating the register.
    None,
    /// The command doorbell was rung with this vector.
    Doorbell(u32),
    /// The driver asked firmware to reset itself (NIC interface software reset, when
    /// fw_reset_supported is set): the whole device returns to its power-on state, and the
    /// NIC interface then reads disabled until the driver programs the command queue again.
    SoftwareReset,
    /// The driver set the NIC interface to disabled (the second step of a fast teardown).
    NicInterfaceDisabled,
}

/// A firmware failure as the health buffer reports it.
///
/// Linux declares the device dead when the syndrome is non-zero *and* `reset_required` (rfr)
/// is set, prints the buffer at the given severity, and runs its recovery; a syndrome without
/// rfr is only reported (devlink health "fw" reporter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthError {
    /// health_buffer.synd (and the health_syndrome byte of 0x1010): non-zero.
    pub syndrome: u8,
    /// health_buffer.ext_synd, vendor detail.
    pub ext_synd: u16,
    /// health_buffer.irisc_index: the embedded processor that reported it.
    pub irisc_index: u8,
    /// Severity as a syslog level (0 emergency .. 7 debug), reported with its valid bit.
    pub severity: u8,
    /// health_buffer.rfr: the driver must run its reset flow.
    pub reset_required: bool,
}

impl HealthError {
    /// A fatal error: `syndrome` with reset required, severity 2 (critical).
    pub fn fatal(syndrome: u8) -> HealthError {
        HealthError {
            syndrome,
            ext_synd: 0,
            irisc_index: 0,
            severity: 2,
            reset_required: true,
        }
    }
}

/// The health counter: running, or stopped at a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heartbeat {
    Running,
    Stopped(u32),
}

/// The initialization segment's state.
pub struct Regs {
    seg: Box<InitialSeg>,
    fw_ready: FwReady,
    polls: u32,
    /// The internal timer, started at power-on; CQE timestamps read the same clock.
    clock: Clock,
    /// The instant the health counter read 1 (power-on, moved when it restarts).
    beat_origin: Instant,
    heartbeat: Heartbeat,
    health: Option<HealthError>,
}

fn put(seg: &mut InitialSeg, field: Field, value: u64) {
    rt::set_bits(seg.storage_mut(), field.bit_offset, field.width, value)
}

/// A field of the health buffer at its place in the segment.
fn hb(f: Field) -> Field {
    Field::new(
        f.name,
        InitialSeg::HEALTH_BUFFER.bit_offset + f.bit_offset,
        f.width,
    )
}

impl Regs {
    /// The segment of a freshly reset device; the internal timer counts at `timer_khz`, and
    /// `timeouts` (if any) are reported at 0xff8 and 0xffc.
    pub fn new(fw_ready: FwReady, timer_khz: u32, timeouts: Option<&Timeouts>) -> Regs {
        let mut seg = Box::new(InitialSeg::zeroed());
        let (major, minor, subminor) = FW_REV;
        put(&mut seg, InitialSeg::FW_REV_MAJOR, major.into());
        put(&mut seg, InitialSeg::FW_REV_MINOR, minor.into());
        put(&mut seg, InitialSeg::FW_REV_SUBMINOR, subminor.into());
        put(
            &mut seg,
            InitialSeg::CMD_INTERFACE_REV,
            mlx5_prm::CMD_IF_REV,
        );
        put(&mut seg, InitialSeg::LOG_CMDQ_SIZE, LOG_CMDQ_SIZE.into());
        put(
            &mut seg,
            InitialSeg::LOG_CMDQ_STRIDE,
            LOG_CMDQ_STRIDE.into(),
        );
        put(&mut seg, InitialSeg::FW_RESET_SUPPORTED, 1);
        if let Some(t) = timeouts {
            put(
                &mut seg,
                InitialSeg::CMD_EXEC_TO,
                t.cmd_exec.encode().into(),
            );
            put(
                &mut seg,
                InitialSeg::CMD_Q_INIT_TO,
                t.cmd_q_init.encode().into(),
            );
        }
        let fw_word = (u64::from(minor) << 16) | u64::from(major);
        put(&mut seg, hb(HealthBuffer::FW_VERSION), fw_word);
        put(&mut seg, hb(HealthBuffer::HW_ID), HW_ID.into());
        let clock = Clock::start(timer_khz);
        let mut regs = Regs {
            seg,
            fw_ready,
            polls: 0,
            clock,
            beat_origin: Instant::now(),
            heartbeat: Heartbeat::Running,
            health: None,
        };
        regs.refresh_initializing(false);
        regs
    }

    /// The segment right after a firmware reset the driver asked for: as at power-on, except
    /// that the NIC interface reads disabled until the command queue is programmed again.
    pub fn after_software_reset(fw_ready: FwReady, timer_khz: u32, t: Option<&Timeouts>) -> Regs {
        let mut regs = Regs::new(fw_ready, timer_khz, t);
        let disabled = NicInterfaceMode::Disabled.raw();
        let l = regs.seg.storage().read_be32(off::CMDQ_ADDR_L_SZ);
        let l = (l & !0x700) | (u32::from(disabled) << 8);
        regs.seg.storage_mut().write_be32(off::CMDQ_ADDR_L_SZ, l);
        regs
    }

    /// Recomputes the initializing flag; `polled` counts one read of 0x1fc.
    fn refresh_initializing(&mut self, polled: bool) -> bool {
        let initializing = match self.fw_ready {
            FwReady::Immediately => false,
            FwReady::AfterPolls(n) => {
                let busy = self.polls < n;
                if polled && busy {
                    self.polls += 1;
                }
                busy
            }
            FwReady::After(d) => self.clock.elapsed() < d,
            FwReady::Never => true,
        };
        put(&mut self.seg, InitialSeg::INITIALIZING, initializing.into());
        initializing
    }

    /// The clock of the internal timer, for the data path's CQE timestamps.
    pub(crate) fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// This segment with its internal timer starting at `ticks` (the configuration's
    /// `timer_start`) instead of 0.
    pub(crate) fn with_timer_start(mut self, ticks: u64) -> Regs {
        self.clock = self.clock.starting_at(ticks);
        self
    }

    /// True while firmware accepts no commands (still initializing).
    pub fn initializing(&mut self) -> bool {
        self.refresh_initializing(false)
    }

    /// True while firmware is alive: no health error reported and the counter running.
    pub fn healthy(&self) -> bool {
        self.health.is_none() && self.heartbeat == Heartbeat::Running
    }

    /// The health counter's value now: 1 plus the periods elapsed since power-on, in 24
    /// bits and never 0 (Linux's post-reset check takes 0 for "not alive yet").
    fn heartbeat_now(&self) -> u32 {
        match self.heartbeat {
            Heartbeat::Stopped(v) => v,
            Heartbeat::Running => {
                let periods =
                    self.beat_origin.elapsed().as_nanos() / HEALTH_COUNTER_PERIOD.as_nanos().max(1);
                1 + (periods % 0xff_ffff) as u32
            }
        }
    }

    /// The register at `offset` (a multiple of 4 inside the segment), with read side effects.
    pub fn read(&mut self, offset: usize) -> u32 {
        match offset {
            off::INITIALIZING => {
                self.refresh_initializing(true);
            }
            off::HEALTH_COUNTER => {
                let now = self.heartbeat_now();
                put(&mut self.seg, InitialSeg::HEALTH_COUNTER, now.into());
            }
            off::REAL_TIME_H | off::REAL_TIME_L => {
                let (sec, nsec) = self.clock.real_time();
                put(&mut self.seg, InitialSeg::REAL_TIME_H, sec.into());
                put(&mut self.seg, InitialSeg::REAL_TIME_L, nsec.into());
            }
            off::TIMER_H | off::TIMER_L => {
                let ticks = self.clock.ticks();
                put(&mut self.seg, InitialSeg::INTERNAL_TIMER_H, ticks >> 32);
                put(
                    &mut self.seg,
                    InitialSeg::INTERNAL_TIMER_L,
                    ticks & 0xffff_ffff,
                );
            }
            _ => {}
        }
        self.seg.storage().read_be32(offset)
    }

    /// Writes the register at `offset`. Read-only bits keep their values; the doorbell is not
    /// stored (it reads as 0, being write-only).
    pub fn write(&mut self, offset: usize, value: u32) -> RegWrite {
        match offset {
            off::CMDQ_ADDR_H => put(&mut self.seg, InitialSeg::CMDQ_PHY_ADDR_63_32, value.into()),
            off::CMDQ_ADDR_L_SZ => {
                // Bits 31:12 are the address; bits 10:8 the NIC interface mode (3 bits, as
                // drivers write it, though the layout names only 9:8); bits 7:0 are read-only.
                let old = self.seg.storage().read_be32(offset);
                let new = (value & 0xffff_f700) | (old & 0xff);
                self.seg.storage_mut().write_be32(offset, new);
                match (value >> 8) & 7 {
                    NIC_INTERFACE_SW_RESET => return RegWrite::SoftwareReset,
                    n if n == u32::from(NicInterfaceMode::Disabled.raw()) => {
                        return RegWrite::NicInterfaceDisabled
                    }
                    _ => {}
                }
            }
            off::CMD_DBELL => return RegWrite::Doorbell(value),
            _ => {}
        }
        RegWrite::None
    }

    /// The command queue as last programmed.
    pub fn cmdq(&self) -> CmdqGeometry {
        let seg = &self.seg;
        CmdqGeometry {
            base: (u64::from(seg.cmdq_phy_addr_63_32()) << 32)
                | (u64::from(seg.cmdq_phy_addr_31_12()) << 12),
            entries: 1 << seg.log_cmdq_size(),
            stride: 1 << seg.log_cmdq_stride(),
        }
    }

    /// Reports a firmware error in the health buffer (synd, ext_synd, irisc_index, rfr and a
    /// valid severity) and the health_syndrome byte; the health counter stops. `None` makes
    /// the device healthy again (the counter runs on from where it stopped).
    pub fn set_health(&mut self, error: Option<HealthError>) {
        let e = error.unwrap_or(HealthError {
            syndrome: 0,
            ext_synd: 0,
            irisc_index: 0,
            severity: 0,
            reset_required: false,
        });
        let failed = error.is_some();
        put(&mut self.seg, hb(HealthBuffer::SYND), e.syndrome.into());
        put(&mut self.seg, hb(HealthBuffer::EXT_SYND), e.ext_synd.into());
        put(
            &mut self.seg,
            hb(HealthBuffer::IRISC_INDEX),
            e.irisc_index.into(),
        );
        put(
            &mut self.seg,
            hb(HealthBuffer::RFR),
            e.reset_required.into(),
        );
        put(&mut self.seg, hb(HealthBuffer::VALID), failed.into());
        put(
            &mut self.seg,
            hb(HealthBuffer::SEVERITY),
            (e.severity & 7).into(),
        );
        put(
            &mut self.seg,
            InitialSeg::HEALTH_SYNDROME,
            e.syndrome.into(),
        );
        self.health = error;
        if failed {
            self.stop_heartbeat();
        } else {
            self.restart_heartbeat();
        }
    }

    /// Firmware hangs without a word: the health counter stops, the health buffer stays
    /// clean (Linux's "reached miss count" path).
    pub fn stop_heartbeat(&mut self) {
        if self.heartbeat == Heartbeat::Running {
            self.heartbeat = Heartbeat::Stopped(self.heartbeat_now());
        }
    }

    /// The counter runs again, on from its value when it stopped.
    fn restart_heartbeat(&mut self) {
        if let Heartbeat::Stopped(v) = self.heartbeat {
            let back = HEALTH_COUNTER_PERIOD * v.saturating_sub(1);
            self.beat_origin = Instant::now()
                .checked_sub(back)
                .unwrap_or_else(Instant::now);
            self.heartbeat = Heartbeat::Running;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_values() {
        let mut r = Regs::new(FwReady::Immediately, 1000, None);
        assert_eq!(r.read(0x04) >> 16, 5);
        assert_eq!(r.read(0x14) & 0xff, 0x56);
        assert_eq!(r.read(0x1fc) >> 31, 0);
        assert_eq!(r.read(0x1fc) >> 30 & 1, 1, "firmware reset supported");
        assert_eq!((r.read(0xff8), r.read(0xffc)), (0, 0), "no timeouts");
        let a = r.read(0x1010);
        assert_ne!(a, 0);
        std::thread::sleep(HEALTH_COUNTER_PERIOD * 3);
        let b = r.read(0x1010);
        assert!(b > a, "the counter runs on the clock: {a} then {b}");
        r.set_health(Some(HealthError::fatal(0x8)));
        let c = r.read(0x1010);
        assert_eq!(c >> 24, 0x8);
        std::thread::sleep(HEALTH_COUNTER_PERIOD * 3);
        assert_eq!(r.read(0x1010), c, "stopped");
        assert_eq!(r.read(0x23c) >> 16 & 0xff, 0x8);
        assert_eq!(
            r.read(0x238) >> 24,
            0x80 | 0x08 | 2,
            "rfr, valid, severity 2"
        );
        r.set_health(None);
        std::thread::sleep(HEALTH_COUNTER_PERIOD * 3);
        assert!(r.read(0x1010) > c & 0xff_ffff, "runs again");
    }

    #[test]
    fn timeouts_are_encoded() {
        let t = Timeouts::default();
        let mut r = Regs::new(FwReady::Immediately, 1000, Some(&t));
        assert_eq!(r.read(0xff8), 1 << 29 | 60);
        assert_eq!(r.read(0xffc), 1 << 29 | 2);
    }

    #[test]
    fn after_polls() {
        let mut r = Regs::new(FwReady::AfterPolls(2), 1000, None);
        assert!(r.initializing());
        assert_eq!(r.read(0x1fc) >> 31, 1);
        assert_eq!(r.read(0x1fc) >> 31, 1);
        assert_eq!(r.read(0x1fc) >> 31, 0);
        assert!(!r.initializing());
    }

    #[test]
    fn cmdq_address() {
        let mut r = Regs::new(FwReady::Immediately, 1000, None);
        r.write(0x10, 0x1);
        r.write(0x14, 0x2345_6fff);
        let g = r.cmdq();
        assert_eq!(g.base, 0x1_2345_6000);
        assert_eq!((g.entries, g.stride), (32, 64));
        assert_eq!(r.read(0x14) & 0xff, 0x56, "read-only geometry kept");
    }

    #[test]
    fn software_reset_request() {
        let mut r = Regs::new(FwReady::Immediately, 1000, None);
        r.write(0x14, 0x2345_6000);
        assert_eq!(
            r.write(0x14, 0x2345_6000 | 1 << 8),
            RegWrite::NicInterfaceDisabled
        );
        assert_eq!(r.write(0x14, 0x2345_6000), RegWrite::None);
        assert_eq!(r.write(0x14, 0x2345_6000 | 7 << 8), RegWrite::SoftwareReset);
        let mut after = Regs::after_software_reset(FwReady::Immediately, 1000, None);
        assert_eq!(after.read(0x14) >> 8 & 7, 1, "disabled after the reset");
        after.write(0x14, 0x3000);
        assert_eq!(
            after.read(0x14) >> 8 & 7,
            0,
            "full driver once reprogrammed"
        );
    }
}
