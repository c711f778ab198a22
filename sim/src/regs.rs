//! The initialization segment (BAR 0 offset 0): revisions, the command queue address and
//! geometry, the command doorbell, the initializing flag, the health area and the health
//! counter, kept as an image of the generated `InitialSeg` register block.
//!
//! Registers the driver only reads are written here through the generated field positions;
//! registers it writes are decoded here. Reads have the side effects firmware gives them: the
//! initializing flag follows [`FwReady`], the health counter advances on every read while the
//! device is healthy, and the internal timer runs.

use crate::config::FwReady;
use mlx5_prm::rt::{self, Bytes as _, BytesMut as _, Field};
use mlx5_prm::{HealthBuffer, InitialSeg};
use std::time::Instant;

/// Firmware revision the model reports (major.minor.subminor), in the range of ConnectX-5
/// firmware.
pub const FW_REV: (u16, u16, u16) = (16, 35, 1000);
/// log2 of the number of command queue entries (32, the most drivers support).
pub const LOG_CMDQ_SIZE: u8 = 5;
/// log2 of the command queue stride (64-byte entries).
pub const LOG_CMDQ_STRIDE: u8 = 6;
/// Hardware id in the health buffer: the PCI device id of a ConnectX-5.
pub const HW_ID: u32 = 0x1017;

/// Byte offsets of the registers the model decodes.
mod off {
    pub const CMDQ_ADDR_H: usize = 0x10;
    pub const CMDQ_ADDR_L_SZ: usize = 0x14;
    pub const CMD_DBELL: usize = 0x18;
    pub const INITIALIZING: usize = 0x1fc;
    pub const TIMER_H: usize = 0x1000;
    pub const TIMER_L: usize = 0x1004;
    pub const HEALTH_COUNTER: usize = 0x1010;
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
}

/// The initialization segment's state.
pub struct Regs {
    seg: Box<InitialSeg>,
    fw_ready: FwReady,
    polls: u32,
    created: Instant,
    timer_khz: u64,
    health_syndrome: u8,
}

fn put(seg: &mut InitialSeg, field: Field, value: u64) {
    rt::set_bits(seg.storage_mut(), field.bit_offset, field.width, value)
}

impl Regs {
    /// The segment of a freshly reset device; the internal timer counts at `timer_khz`.
    pub fn new(fw_ready: FwReady, timer_khz: u32) -> Regs {
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
        let health = InitialSeg::HEALTH_BUFFER.bit_offset;
        let fw_word = (u64::from(minor) << 16) | u64::from(major);
        let hb = |f: Field| Field::new(f.name, health + f.bit_offset, f.width);
        put(&mut seg, hb(HealthBuffer::FW_VERSION), fw_word);
        put(&mut seg, hb(HealthBuffer::HW_ID), HW_ID.into());
        let mut regs = Regs {
            seg,
            fw_ready,
            polls: 0,
            created: Instant::now(),
            timer_khz: timer_khz.into(),
            health_syndrome: 0,
        };
        regs.refresh_initializing(false);
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
            FwReady::After(d) => self.created.elapsed() < d,
            FwReady::Never => true,
        };
        put(&mut self.seg, InitialSeg::INITIALIZING, initializing.into());
        initializing
    }

    /// True while firmware accepts no commands (still initializing).
    pub fn initializing(&mut self) -> bool {
        self.refresh_initializing(false)
    }

    /// True when no health syndrome is set.
    pub fn healthy(&self) -> bool {
        self.health_syndrome == 0
    }

    /// The register at `offset` (a multiple of 4 inside the segment), with read side effects.
    pub fn read(&mut self, offset: usize) -> u32 {
        match offset {
            off::INITIALIZING => {
                self.refresh_initializing(true);
            }
            off::HEALTH_COUNTER if self.healthy() => {
                let next = (self.seg.health_counter() + 1) & 0xff_ffff;
                put(&mut self.seg, InitialSeg::HEALTH_COUNTER, next.into());
            }
            off::TIMER_H | off::TIMER_L => {
                let nanos = self.created.elapsed().as_nanos();
                let ticks = (nanos * u128::from(self.timer_khz) / 1_000_000) as u64;
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

    /// Reports a firmware error: the health buffer's synd and the health_syndrome byte show
    /// `syndrome`, with the reset-flow-required flag and a valid severity, and the health
    /// counter stops. 0 makes the device healthy again.
    pub fn set_health_syndrome(&mut self, syndrome: u8) {
        self.health_syndrome = syndrome;
        let health = InitialSeg::HEALTH_BUFFER.bit_offset;
        let hb = |f: Field| Field::new(f.name, health + f.bit_offset, f.width);
        let failed = syndrome != 0;
        put(&mut self.seg, hb(HealthBuffer::SYND), syndrome.into());
        put(&mut self.seg, hb(HealthBuffer::RFR), failed.into());
        put(&mut self.seg, hb(HealthBuffer::VALID), failed.into());
        // Severity 2 ("critical" in the syslog-style scale firmware uses).
        put(
            &mut self.seg,
            hb(HealthBuffer::SEVERITY),
            if failed { 2 } else { 0 },
        );
        put(&mut self.seg, InitialSeg::HEALTH_SYNDROME, syndrome.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_values() {
        let mut r = Regs::new(FwReady::Immediately, 1000);
        assert_eq!(r.read(0x04) >> 16, 5);
        assert_eq!(r.read(0x14) & 0xff, 0x56);
        assert_eq!(r.read(0x1fc) >> 31, 0);
        let a = r.read(0x1010);
        assert_eq!(r.read(0x1010), a + 1);
        r.set_health_syndrome(0x8);
        let b = r.read(0x1010);
        assert_eq!(b >> 24, 0x8);
        assert_eq!(r.read(0x1010), b);
        assert_eq!(r.read(0x23c) >> 16 & 0xff, 0x8);
    }

    #[test]
    fn after_polls() {
        let mut r = Regs::new(FwReady::AfterPolls(2), 1000);
        assert!(r.initializing());
        assert_eq!(r.read(0x1fc) >> 31, 1);
        assert_eq!(r.read(0x1fc) >> 31, 1);
        assert_eq!(r.read(0x1fc) >> 31, 0);
        assert!(!r.initializing());
    }

    #[test]
    fn cmdq_address() {
        let mut r = Regs::new(FwReady::Immediately, 1000);
        r.write(0x10, 0x1);
        r.write(0x14, 0x2345_6fff);
        let g = r.cmdq();
        assert_eq!(g.base, 0x1_2345_6000);
        assert_eq!((g.entries, g.stride), (32, 64));
        assert_eq!(r.read(0x14) & 0xff, 0x56, "read-only geometry kept");
    }
}
