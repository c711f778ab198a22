//! Pulses on the PPS pins and the PPS events they raise (event type pps_event, the EQE data
//! laid out as `pps_event`).
//!
//! A pin's pulses raise events as its MTPPSE configuration says (`Pin::take_event`):
//! never, every pulse (repetitive), or the first pulse after an arm (once till armed). An
//! event goes to the EQ subscribed to pps_event, like every asynchronous event
//! (`events::post`), with the pin and the pulse's time in the clock the queues use: the
//! internal timer's ticks, or, in real-time mode, the UTC clock's seconds and nanoseconds.
//! Real-time mode is the device's when its queues can stamp in real time (sq_ts_format or
//! rq_ts_format offers it), the rule Linux's `lib/clock.c` follows to read both the events'
//! time stamps and the output pins' next pulse.
//!
//! - **Inputs**: the host says a pulse arrived ([`input_pulse`], `Device::pps_pulse`); an
//!   enabled input pin time-stamps it now.
//! - **Outputs**: an enabled output pin pulses when the clock reaches its `time_stamp`
//!   ([`outputs`], from the device's own work, which runs while such a pulse is to come:
//!   `Clock::outputs_pending`). A periodic pin (pattern 1) then pulses every second after; a
//!   pin that emits one pulse (pattern 0) is done until MTPPS schedules another. Each look
//!   emits at most one pulse per pin: a clock that jumped past several periods (MTUTC) skips
//!   to the next period to come, so the work per look is bounded by the pin count.

use super::Side;
use crate::clock::{real_time_ns, real_time_word, Clock, PPS_PINS};
use crate::events::{self, Posted};
use crate::exec::clock_reg::{has_clock, real_time_mode};
use crate::model::Model;
use mlx5_prm::{EventType, PpsEvent, PpsPinMode};

/// Pattern of an output that pulses every second.
const PERIODIC: u8 = 1;
/// Nanoseconds per second.
const NS_PER_SEC: u64 = 1_000_000_000;

/// The clock now in the format of the queues and the pins: ticks, or in real-time mode the
/// UTC clock as seconds and nanoseconds.
fn now(m: &Model) -> u64 {
    let ticks = m.clock.ticks();
    if real_time_mode(&m.cur) {
        real_time_word(m.clock.utc_at_ticks(ticks))
    } else {
        ticks
    }
}

/// Writes a PPS event for `pin` at `time_stamp` to the EQ subscribed to it.
fn post(side: &mut Side<'_>, pin: u8, time_stamp: u64) -> Posted {
    let mut data = [0u8; 28];
    let mut ev = PpsEvent::new_unchecked(&mut data[..]);
    ev.set_pin(pin);
    ev.set_time_stamp(time_stamp);
    events::post(side.m, side.dma, EventType::PpsEvent.raw(), 0, &data)
}

/// A pulse arrives at pin `pin` (numbered from 0): if the pin is an enabled input and its
/// events are on, a PPS event with the time now. What became of the event; `NoEq` also when
/// no event was due (no such pin, no clock unit, not an enabled input, events off or not
/// armed).
pub(crate) fn input_pulse(side: &mut Side<'_>, pin: u8) -> Posted {
    if !has_clock(&side.m.cur) || usize::from(pin) >= PPS_PINS {
        return Posted::NoEq;
    }
    let time = now(side.m);
    let event = {
        let mut pins = side.m.clock.pins();
        let p = &mut pins[usize::from(pin)];
        p.enable && p.mode == PpsPinMode::PpsIn.raw() && p.take_event()
    };
    if event {
        post(side, pin, time)
    } else {
        Posted::NoEq
    }
}

/// Output pins whose pulse is due pulse now (see the module docs); each raises its event if
/// its events are on.
pub(crate) fn outputs(side: &mut Side<'_>) {
    if !side.m.clock.outputs_pending() || !has_clock(&side.m.cur) {
        return;
    }
    let rt = real_time_mode(&side.m.cur);
    let now = now(side.m);
    let mut events = [None; PPS_PINS];
    {
        let clock = &side.m.clock;
        let mut pins = clock.pins();
        for (i, p) in pins.iter_mut().enumerate() {
            if !p.output_pending() {
                continue;
            }
            // The pulse's time, for its event: when it was due.
            let due = p.time_stamp;
            let Some(next) = pulse(clock, rt, due, p.pattern, now) else {
                continue;
            };
            match next {
                Some(t) => p.time_stamp = t,
                None => p.fired = true,
            }
            if p.take_event() {
                events[i] = Some(due);
            }
        }
        clock.set_pins_changed(&pins);
    }
    for (pin, time) in events.into_iter().enumerate() {
        if let Some(t) = time {
            // PPS_PINS fits a byte (clock.rs).
            post(side, pin as u8, t);
        }
    }
}

/// Whether a pin due at `due` (in the pins' format) pulses at `now`: `None` if not yet;
/// else the next pulse of a periodic pin (`Some(Some(next))`, the first period boundary
/// after `now`), or `Some(None)` for a pin that emits one pulse.
fn pulse(clock: &Clock, rt: bool, due: u64, pattern: u8, now: u64) -> Option<Option<u64>> {
    // Compared as a line of ticks or of nanoseconds.
    let (due_n, now_n, period) = if rt {
        (real_time_ns(due), real_time_ns(now), NS_PER_SEC)
    } else {
        (due, now, clock.ticks_per_sec())
    };
    if now_n < due_n {
        return None;
    }
    if pattern != PERIODIC {
        return Some(None);
    }
    // At least one period, whole periods after `due`, past `now`.
    let periods = (now_n - due_n) / period.max(1) + 1;
    let next_n = due_n.saturating_add(periods.saturating_mul(period));
    Some(Some(if rt { real_time_word(next_n) } else { next_n }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_pins_skip_to_the_next_second_and_single_pulses_stop() {
        let c = Clock::start(1_000); // 10^6 ticks a second
        let sec = c.ticks_per_sec();
        assert_eq!(pulse(&c, false, 5 * sec, 1, 5 * sec - 1), None);
        assert_eq!(pulse(&c, false, 5 * sec, 1, 5 * sec), Some(Some(6 * sec)));
        // Ten seconds late: one pulse, then the next second to come.
        assert_eq!(
            pulse(&c, false, 5 * sec, 1, 15 * sec + 3),
            Some(Some(16 * sec))
        );
        assert_eq!(pulse(&c, false, 5 * sec, 0, 9 * sec), Some(None));
        // Real time: seconds in the high word.
        let at = |s: u64, ns: u64| s << 32 | ns;
        assert_eq!(pulse(&c, true, at(7, 0), 1, at(6, 999_999_999)), None);
        assert_eq!(pulse(&c, true, at(7, 0), 1, at(7, 1)), Some(Some(at(8, 0))));
        // Any value a guest writes, without overflow.
        assert_eq!(pulse(&c, false, 0, 1, u64::MAX), Some(Some(u64::MAX)));
        assert!(pulse(&c, true, u64::MAX, 1, u64::MAX).is_some());
    }
}
