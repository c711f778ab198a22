//! PPS events: whether a pin's pulses raise events (MTPPSE, per pin), and the events
//! themselves, which reach the driver like every asynchronous event, through
//! [`Hca::poll_events`](crate::Hca::poll_events) or
//! [`Hca::wait_events`](crate::Hca::wait_events), as [`Event::Pps`] (the HCA's event queue
//! subscribes to them when the device reports pps).
//!
//! As in Linux's `lib/clock.c`: an event of an input pin is an external time stamp, the time
//! the pulse arrived; an event of an output pin says a pulse left (Linux then schedules the
//! next). The event's time is in the device's clock format, real time when the device offers
//! it to its queues, else internal timer ticks; [`Clock::pps_event`] converts it to ns.

use super::{Clock, TimestampFormat};
use crate::backend::Backend;
use crate::eq::Event;
use crate::error::Result;
use mlx5_prm::reg::Mtppse;
use mlx5_prm::{MtppseEventMode, MtppseReg};

/// Which pulses of a pin raise events (MTPPSE event_generation_mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum PpsEventMode {
    /// None.
    Off,
    /// Every pulse (what Linux asks for when it enables a pin).
    EveryPulse,
    /// The first pulse after the pin is armed; the event disarms it.
    OnceTillArmed,
    /// A value the spec does not name.
    Unknown(u8),
}

impl PpsEventMode {
    fn of(r: &MtppseReg<Vec<u8>>) -> PpsEventMode {
        match r.event_generation_mode() {
            Ok(MtppseEventMode::Disable) => PpsEventMode::Off,
            Ok(MtppseEventMode::Repetitive) => PpsEventMode::EveryPulse,
            Ok(MtppseEventMode::OnceTillArm) => PpsEventMode::OnceTillArmed,
            Err(_) => PpsEventMode::Unknown(r.event_generation_mode_raw()),
        }
    }
}

/// A pin's event configuration, as the device reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PpsEvents {
    /// The pin.
    pub pin: u8,
    /// Which pulses raise events.
    pub mode: PpsEventMode,
    /// Armed for one event ([`PpsEventMode::OnceTillArmed`]).
    pub armed: bool,
}

/// A PPS event, converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PpsEvent {
    /// The pin that saw or emitted the pulse.
    pub pin: u8,
    /// The event's time stamp as the device wrote it.
    pub raw: u64,
    /// When the pulse happened, in ns (through [`Clock::cqe_time_in`] in the device's clock
    /// format).
    pub time_ns: u64,
}

fn events_of(r: &MtppseReg<Vec<u8>>) -> PpsEvents {
    PpsEvents {
        pin: r.pin(),
        mode: PpsEventMode::of(r),
        armed: r.event_arm(),
    }
}

impl<B: Backend> Clock<'_, B> {
    /// Pin `pin`'s event configuration (MTPPSE read).
    pub fn pps_events(&self, pin: u8) -> Result<PpsEvents> {
        let r = self.hca.read_reg::<Mtppse>(|r| r.set_pin(pin))?;
        Ok(events_of(&r))
    }

    /// Sets which pulses of pin `pin` raise events, and (`arm`) arms it for one event in
    /// [`PpsEventMode::OnceTillArmed`] (MTPPSE write); returns the configuration the device
    /// then reports. A pin the device lacks is the device's to refuse
    /// ([`Error::Register`](crate::Error::Register)); [`PpsEventMode::Unknown`] is written
    /// as its value, for the device to judge.
    pub fn set_pps_events(&self, pin: u8, mode: PpsEventMode, arm: bool) -> Result<PpsEvents> {
        let r = self.hca.write_reg::<Mtppse>(|r| {
            r.set_pin(pin);
            match mode {
                PpsEventMode::Off => r.set_event_generation_mode(MtppseEventMode::Disable),
                PpsEventMode::EveryPulse => {
                    r.set_event_generation_mode(MtppseEventMode::Repetitive)
                }
                PpsEventMode::OnceTillArmed => {
                    r.set_event_generation_mode(MtppseEventMode::OnceTillArm)
                }
                // The field is 4 bits wide: larger values are cut to it by the setter's
                // checked form; the device judges what is left.
                PpsEventMode::Unknown(v) => {
                    let _ = r.try_set_event_generation_mode_raw(v);
                }
            }
            r.set_event_arm(arm);
        })?;
        Ok(events_of(&r))
    }

    /// The PPS event `event` is, converted: the time stamp in the device's clock format (real
    /// time when the device offers it to its queues, as Linux's `mlx5_real_time_mode`), in
    /// ns. `None` for any other event.
    pub fn pps_event(&self, event: &Event) -> Option<PpsEvent> {
        let Event::Pps { pin, time_stamp } = *event else {
            return None;
        };
        let format = if self.caps.real_time_queues {
            TimestampFormat::RealTime
        } else {
            TimestampFormat::FreeRunning
        };
        Some(PpsEvent {
            pin,
            raw: time_stamp,
            time_ns: self.cqe_time_in(format, time_stamp),
        })
    }
}
