//! The pulse-per-second pins (MTPPS): what they can do, how each is configured, and changing
//! that, as Linux's `lib/clock.c` does for PTP external time stamps (a pin as input) and
//! periodic outputs. A read names its pin; the first pin's read also carries the capabilities
//! of all. A pin the device does not have, or a mode it cannot do, is the device's to refuse:
//! its error comes back as [`Error::Register`](crate::Error::Register).

use super::Clock;
use crate::backend::Backend;
use crate::error::{Error, Result};
use mlx5_prm::reg::Mtpps;
use mlx5_prm::{
    MtppsReg, PpsPinMode, MTPPS_CAP_PIN_PPS_IN, MTPPS_CAP_PIN_PPS_OUT, MTPPS_FS_ENABLE,
    MTPPS_FS_PATTERN, MTPPS_FS_PIN_MODE, MTPPS_FS_TIME_STAMP,
};

/// What a pin does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum PinMode {
    /// Input: the device time-stamps pulses (PTP external time stamps).
    In,
    /// Output: the device emits pulses (PTP periodic output).
    Out,
    /// A value the spec does not name.
    Unknown(u8),
}

/// One pin: what it can do and how it is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PpsPin {
    /// The pin's number.
    pub pin: u8,
    /// It can be an input.
    pub can_in: bool,
    /// It can be an output.
    pub can_out: bool,
    /// It is active in its mode.
    pub enabled: bool,
    /// Its mode.
    pub mode: PinMode,
    /// Inputs: 0 rising edge, 1 falling; outputs: 0 one pulse, 1 periodic.
    pub pattern: u8,
    /// Outputs: when the next pulse is due (internal timer ticks, or UTC seconds and
    /// nanoseconds in real-time mode).
    pub time_stamp: u64,
    /// Whether its pulses raise events (MTPPSE); `None` when the device does not answer
    /// MTPPSE.
    pub events: Option<super::PpsEvents>,
}

/// The pins of the device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PpsPins {
    /// How many pins may be inputs at once.
    pub max_in: u8,
    /// How many may be outputs at once.
    pub max_out: u8,
    /// Each pin (cap_number_of_pps_pins of them, at most 8).
    pub pins: Vec<PpsPin>,
}

/// A change of one pin: the fields given are written (their field_select bits set), the
/// others left as they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PpsConfig {
    /// Activate or deactivate the pin.
    pub enable: Option<bool>,
    /// Input or output.
    pub mode: Option<PpsPinMode>,
    /// See [`PpsPin::pattern`] (4 bits).
    pub pattern: Option<u8>,
    /// Outputs: when the next pulse is due.
    pub time_stamp: Option<u64>,
}

/// The pin's capability bits of an MTPPS image (`cap_pin_N_mode`), for pins 0..=7.
fn cap_of(r: &MtppsReg<Vec<u8>>, pin: u8) -> u8 {
    match pin {
        0 => r.cap_pin_0_mode(),
        1 => r.cap_pin_1_mode(),
        2 => r.cap_pin_2_mode(),
        3 => r.cap_pin_3_mode(),
        4 => r.cap_pin_4_mode(),
        5 => r.cap_pin_5_mode(),
        6 => r.cap_pin_6_mode(),
        7 => r.cap_pin_7_mode(),
        _ => 0,
    }
}

/// A pin as an MTPPS answer for it describes it.
fn pin_of(r: &MtppsReg<Vec<u8>>) -> PpsPin {
    let cap = u64::from(cap_of(r, r.pin()));
    PpsPin {
        pin: r.pin(),
        can_in: cap & MTPPS_CAP_PIN_PPS_IN != 0,
        can_out: cap & MTPPS_CAP_PIN_PPS_OUT != 0,
        enabled: r.enable(),
        mode: match r.pin_mode() {
            Ok(PpsPinMode::PpsIn) => PinMode::In,
            Ok(PpsPinMode::PpsOut) => PinMode::Out,
            Err(_) => PinMode::Unknown(r.pin_mode_raw()),
        },
        pattern: r.pattern(),
        time_stamp: r.time_stamp(),
        events: None,
    }
}

impl<B: Backend> Clock<'_, B> {
    /// One pin (MTPPS read for it, and MTPPSE for its events).
    pub fn pps_pin(&self, pin: u8) -> Result<PpsPin> {
        let r = self.hca.read_reg::<Mtpps>(|r| r.set_pin(pin))?;
        Ok(self.with_events(pin_of(&r)))
    }

    /// `p` with its event configuration, if the device answers MTPPSE for it.
    fn with_events(&self, p: PpsPin) -> PpsPin {
        PpsPin {
            events: self.pps_events(p.pin).ok(),
            ..p
        }
    }

    /// Every pin: the capabilities from pin 0's answer, then each pin's configuration.
    pub fn pps(&self) -> Result<PpsPins> {
        let first = self.hca.read_reg::<Mtpps>(|r| r.set_pin(0))?;
        // The layout has room for 8 pins' capabilities.
        let n = first.cap_number_of_pps_pins().min(8);
        let mut pins = Vec::with_capacity(n.into());
        for pin in 0..n {
            pins.push(if pin == 0 {
                self.with_events(pin_of(&first))
            } else {
                self.pps_pin(pin)?
            });
        }
        Ok(PpsPins {
            max_in: first.cap_max_num_of_pps_in_pins(),
            max_out: first.cap_max_num_of_pps_out_pins(),
            pins,
        })
    }

    /// Changes pin `pin` as `config` says (MTPPS write), and returns it as the device then
    /// reports it (with its events, MTPPSE, as [`Clock::pps_pin`] reads them).
    pub fn configure_pps_pin(&self, pin: u8, config: &PpsConfig) -> Result<PpsPin> {
        if let Some(p) = config.pattern.filter(|&p| p > 0xf) {
            return Err(Error::InvalidArgument {
                what: "pps pattern",
                why: format!("{p} does not fit the 4-bit pattern"),
            });
        }
        let mut select = 0u64;
        let r = self.hca.write_reg::<Mtpps>(|r| {
            r.set_pin(pin);
            if let Some(on) = config.enable {
                r.set_enable(on);
                select |= MTPPS_FS_ENABLE;
            }
            if let Some(mode) = config.mode {
                r.set_pin_mode(mode);
                select |= MTPPS_FS_PIN_MODE;
            }
            if let Some(p) = config.pattern {
                r.set_pattern(p);
                select |= MTPPS_FS_PATTERN;
            }
            if let Some(t) = config.time_stamp {
                r.set_time_stamp(t);
                select |= MTPPS_FS_TIME_STAMP;
            }
            r.set_field_select(select as u32);
        })?;
        Ok(self.with_events(pin_of(&r)))
    }
}
