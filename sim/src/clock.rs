//! The device's clocks.
//!
//! **The free-running internal timer.** The internal timer of the initialization segment
//! (0x1000) and the timestamp of every CQE count the same ticks, at the profile's
//! device_frequency_khz, from power-on (the creation of the segment, or the last firmware
//! reset), starting at the configuration's `timer_start` (0 unless a test wants a wrap soon).
//! One counter, shared by the segment and the data path, so that a driver converting CQE
//! timestamps with the timer it reads (Linux's free-running timecounter, `lib/clock.c`) sees
//! one time base. Ticks are computed from the monotonic clock at the moment of the read; no
//! thread keeps them, and a read touches no lock or shared memory: the data path stamps CQEs
//! with it.
//!
//! Nothing adjusts this counter. A driver steers its own time in software on top of it (Linux
//! changes its cyclecounter's multiplier for adjfine and its timecounter's offset for
//! adjtime); a counter that jumped or changed rate under it would break every such
//! timecounter, which extends the counter by the difference between two reads.
//!
//! **The UTC (real-time) clock.** What MTUTC steers: a nanosecond time derived from the same
//! ticks, with a rate offset (ADJUST_FREQ_UTC), steps (ADJUST_TIME) and a set value
//! (SET_TIME_IMMEDIATE). It reads 0 at power-on and is shown in the initialization segment's
//! real_time words as seconds and nanoseconds, as device.h lays them out. Its state, and the
//! PPS pins' configuration (MTPPS, MTPPSE), live behind one `Arc` that the segment's copy of
//! the clock and the command interpreter's share; they change only on those register accesses
//! (and, for the pins, when a pulse comes: `datapath/pps.rs`).
//!
//! **Timestamp formats.** A queue whose context asks for the real-time format (ts_format
//! REAL_TIME, or DEFAULT on a device that offers real time only) gets the UTC clock in its
//! CQEs instead of the free-running ticks, as seconds in the high word and nanoseconds in the
//! low one ([`real_time_word`]), the value Linux's `mlx5_real_time_cyc2time` turns into
//! nanoseconds. Both come from one reading of the free-running counter ([`Clock::utc_at`]),
//! so the two formats of one session describe one instant.

use mlx5_prm::{HcaTsFormatCap, TsFormat};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Nanoseconds per second.
const NS_PER_SEC: u64 = 1_000_000_000;
/// The UTC clock's rate offset is kept in 2^-16 ppb: exact for both units MTUTC takes
/// (ppb × 2^16, scaled ppm × 1000).
pub(crate) const RATE_ONE_PPB: i64 = 1 << 16;

/// Number of PPS pins the model has (MTPPS cap_number_of_pps_pins).
pub(crate) const PPS_PINS: usize = 2;

/// What a queue's CQEs carry in their timestamp: the free-running ticks, or the UTC clock as
/// seconds and nanoseconds (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Stamp {
    #[default]
    FreeRunning,
    RealTime,
}

impl Stamp {
    /// The format a queue gets for the `ts_format` its context asks for (raw), given what the
    /// device offers for that kind of queue (`offered`, a capability field, raw); `None`
    /// when the device cannot do what is asked: REAL_TIME without real time, FREE_RUNNING
    /// with real time only, or a value the PRM does not define. DEFAULT is the free-running
    /// format unless the device offers real time only (Linux asks for DEFAULT exactly then,
    /// `mlx5_get_qp_default_ts`).
    pub fn for_queue(asked: u8, offered: u8) -> Option<Stamp> {
        let offered = HcaTsFormatCap::from_raw(offered.into());
        let (free, real) = match offered {
            Some(HcaTsFormatCap::RealTime) => (false, true),
            Some(HcaTsFormatCap::FreeRunningAndRealTime) => (true, true),
            // The model's own profiles hold only defined values.
            _ => (true, false),
        };
        match TsFormat::from_raw(asked.into())? {
            TsFormat::FreeRunning => free.then_some(Stamp::FreeRunning),
            TsFormat::RealTime => real.then_some(Stamp::RealTime),
            TsFormat::Default if free => Some(Stamp::FreeRunning),
            TsFormat::Default => Some(Stamp::RealTime),
        }
    }
}

/// A PPS pin's configuration, as MTPPS and MTPPSE write it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Pin {
    pub enable: bool,
    /// `pps_pin_mode` raw value (0 in, 1 out).
    pub mode: u8,
    pub pattern: u8,
    /// When the next output pulse is due.
    pub time_stamp: u64,
    pub out_pulse_duration: u16,
    pub enhanced_out_periodic_adjustment: u32,
    /// MTPPSE event_generation_mode, raw (0 disable, 1 repetitive, 2 once till armed).
    pub event_mode: u8,
    /// MTPPSE event_arm: the next pulse raises an event in once-till-armed mode.
    pub event_armed: bool,
    /// An output that emits one pulse (pattern 0) has emitted it; cleared when MTPPS
    /// schedules a new one.
    pub fired: bool,
}

impl Pin {
    /// An enabled output whose pulse is still to come: what makes the device watch the
    /// clock for it.
    pub fn output_pending(&self) -> bool {
        self.enable && self.mode == 1 && !self.fired
    }

    /// Whether a pulse on this pin raises an event, consuming the arm of a once-till-armed
    /// pin.
    pub fn take_event(&mut self) -> bool {
        match self.event_mode {
            1 => true,
            2 if self.event_armed => {
                self.event_armed = false;
                true
            }
            _ => false,
        }
    }
}

/// The UTC clock: `ns` at free-running tick `at`, running at the nominal rate plus `rate`
/// (2^-16 ppb) since.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Utc {
    at: u64,
    ns: u64,
    rate: i64,
}

/// What the copies of one clock share.
#[derive(Debug, Default)]
struct Shared {
    utc: Mutex<Utc>,
    pins: Mutex<[Pin; PPS_PINS]>,
    /// Some pin is an output with a pulse to come (kept by [`Clock::set_pins_changed`]), so
    /// the device's own work looks at the pins; read without the lock on every such look.
    outputs: AtomicBool,
}

/// The device's clocks: a free-running counter of `khz` thousand ticks per second, at `start`
/// at `origin`, and the UTC clock and PPS pins built on it.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    origin: Instant,
    khz: u64,
    start: u64,
    shared: Arc<Shared>,
}

/// A lock that a panic elsewhere cannot make unusable (the model never panics on purpose, and
/// the state guarded here is valid after any partial update).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Clock {
    /// A clock that starts now at 0, counting `khz` thousand ticks per second (at least 1).
    pub fn start(khz: u32) -> Clock {
        Clock {
            origin: Instant::now(),
            khz: u64::from(khz.max(1)),
            start: 0,
            shared: Arc::default(),
        }
    }

    /// This clock with the free-running counter at `ticks` at its origin instead of 0 (the
    /// configuration's `timer_start`).
    pub fn starting_at(self, ticks: u64) -> Clock {
        Clock {
            start: ticks,
            ..self
        }
    }

    /// Time since the clock started.
    pub fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The free-running counter now (modulo 2^64).
    pub fn ticks(&self) -> u64 {
        self.start.wrapping_add(ticks(self.elapsed(), self.khz))
    }

    /// The UTC clock at free-running tick `now`.
    fn utc_at(&self, u: &Utc, now: u64) -> u64 {
        let ns = nominal_ns(now.wrapping_sub(u.at), self.khz);
        let off = ns * i128::from(u.rate) / (i128::from(NS_PER_SEC) * i128::from(RATE_ONE_PPB));
        clamp(i128::from(u.ns) + ns + off)
    }

    /// The UTC clock now, in nanoseconds.
    pub fn utc_ns(&self) -> u64 {
        let u = lock(&self.shared.utc);
        self.utc_at(&u, self.ticks())
    }

    /// The UTC clock, in nanoseconds, at free-running tick `now` (a reading of
    /// [`Clock::ticks`] taken a moment ago; the clock's state as it is now).
    pub fn utc_at_ticks(&self, now: u64) -> u64 {
        let u = lock(&self.shared.utc);
        self.utc_at(&u, now)
    }

    /// Ticks of the free-running counter in one second.
    pub fn ticks_per_sec(&self) -> u64 {
        self.khz * 1000
    }

    /// The UTC clock now as the initialization segment shows it: whole seconds (modulo 2^32)
    /// and nanoseconds.
    pub fn real_time(&self) -> (u32, u32) {
        let ns = self.utc_ns();
        ((ns / NS_PER_SEC) as u32, (ns % NS_PER_SEC) as u32)
    }

    /// Changes the UTC clock with `f` (given its time now and its rate, returning the new
    /// ones), from now on.
    fn change_utc(&self, f: impl FnOnce(u64, i64) -> (u64, i64)) {
        let mut u = lock(&self.shared.utc);
        let now = self.ticks();
        let (ns, rate) = f(self.utc_at(&u, now), u.rate);
        *u = Utc { at: now, ns, rate };
    }

    /// SET_TIME_IMMEDIATE: the UTC clock reads `ns` now.
    pub fn set_utc(&self, ns: u64) {
        self.change_utc(|_, rate| (ns, rate));
    }

    /// ADJUST_TIME: the UTC clock steps by `delta` ns (not below 0).
    pub fn step_utc(&self, delta: i64) {
        self.change_utc(|ns, rate| (clamp(i128::from(ns) + i128::from(delta)), rate));
    }

    /// ADJUST_FREQ_UTC: the UTC clock runs `rate` (2^-16 ppb) off the nominal rate from now.
    pub fn set_utc_rate(&self, rate: i64) {
        self.change_utc(|ns, _| (ns, rate));
    }

    /// The UTC clock's rate offset (2^-16 ppb).
    #[cfg(test)]
    pub fn utc_rate(&self) -> i64 {
        lock(&self.shared.utc).rate
    }

    /// The PPS pins' configuration, locked. Whoever changes it calls
    /// [`Clock::set_pins_changed`] before unlocking.
    pub fn pins(&self) -> MutexGuard<'_, [Pin; PPS_PINS]> {
        lock(&self.shared.pins)
    }

    /// Notes what the pins (`pins`, just changed, still locked) now need: whether an output
    /// has a pulse to come.
    pub fn set_pins_changed(&self, pins: &[Pin; PPS_PINS]) {
        let any = pins.iter().any(Pin::output_pending);
        self.shared.outputs.store(any, Ordering::Relaxed);
    }

    /// True when some output pin has a pulse to come (the device's own work then looks at
    /// the pins).
    pub fn outputs_pending(&self) -> bool {
        self.shared.outputs.load(Ordering::Relaxed)
    }
}

/// The UTC time `ns` as a real-time timestamp: seconds (modulo 2^32) in the high word,
/// nanoseconds in the low one.
pub(crate) fn real_time_word(ns: u64) -> u64 {
    ((ns / NS_PER_SEC) << 32 & 0xffff_ffff_0000_0000) | (ns % NS_PER_SEC)
}

/// Nanoseconds of a real-time value (seconds in the high word, nanoseconds in the low, which
/// a guest may have written at 10^9 or more: taken as it is).
pub(crate) fn real_time_ns(word: u64) -> u64 {
    (word >> 32) * NS_PER_SEC + (word & 0xffff_ffff)
}

/// `v` in 0..=u64::MAX.
fn clamp(v: i128) -> u64 {
    v.clamp(0, i128::from(u64::MAX)) as u64
}

/// Nanoseconds that `ticks` last at `khz` (exact floor, in 128 bits: any 64-bit tick count).
fn nominal_ns(ticks: u64, khz: u64) -> i128 {
    (u128::from(ticks) * 1_000_000 / u128::from(khz.max(1))) as i128
}

/// Ticks in `d` at `khz`: whole seconds times the rate, plus the ticks of the fraction. Exact
/// (the floor of nanoseconds × kHz / 10⁶) without a 128-bit division: a second holds a whole
/// number of ticks, and the fraction's product stays below 2^62 for any 32-bit rate.
fn ticks(d: Duration, khz: u64) -> u64 {
    let whole = d.as_secs().wrapping_mul(khz).wrapping_mul(1000);
    whole.wrapping_add(u64::from(d.subsec_nanos()) * khz / 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nanoseconds_times_the_rate() {
        for (nanos, khz) in [
            (0u64, 156_250u64),
            (1, 156_250),
            (999_999_999, 156_250),
            (3_600_000_000_123, 156_250),
            (123_456_789_012, 1),
            (5_000_000_007, u64::from(u32::MAX)),
        ] {
            let d = Duration::from_nanos(nanos);
            let want = (u128::from(nanos) * u128::from(khz) / 1_000_000) as u64;
            assert_eq!(ticks(d, khz), want, "{nanos} ns at {khz} kHz");
        }
    }

    #[test]
    fn the_clock_runs() {
        let c = Clock::start(1_000_000);
        let a = c.ticks();
        std::thread::sleep(Duration::from_millis(2));
        assert!(c.ticks() >= a + 2_000_000);
    }

    #[test]
    fn a_clock_started_before_the_wrap_wraps() {
        // 1000 ticks before the wrap, at 10^9 ticks a second: wrapped a microsecond later.
        let c = Clock::start(1_000_000).starting_at(u64::MAX - 999);
        std::thread::sleep(Duration::from_millis(1));
        let t = c.ticks();
        assert!(
            (1_000_000..1 << 40).contains(&t),
            "wrapped to a small value: {t}"
        );
    }

    #[test]
    fn utc_steps_sets_and_runs_at_its_rate() {
        let c = Clock::start(1_000_000);
        let copy = c.clone();
        c.set_utc(5 * NS_PER_SEC);
        let t = copy.utc_ns();
        assert!(
            (5 * NS_PER_SEC..5 * NS_PER_SEC + 500_000_000).contains(&t),
            "{t}"
        );
        c.step_utc(-(6 * NS_PER_SEC as i64));
        assert!(copy.utc_ns() < 500_000_000, "clamped at 0, then running");
        // 1% fast: over a nominal interval, 1% more UTC nanoseconds.
        let u = Utc {
            at: 0,
            ns: 0,
            rate: 10_000_000 * RATE_ONE_PPB,
        };
        assert_eq!(c.utc_at(&u, 1_000_000_000), 1_010_000_000);
        let slow = Utc {
            rate: -10_000_000 * RATE_ONE_PPB,
            ..u
        };
        assert_eq!(c.utc_at(&slow, 1_000_000_000), 990_000_000);
        c.set_utc_rate(-3 * RATE_ONE_PPB);
        assert_eq!(copy.utc_rate(), -3 * RATE_ONE_PPB);
    }

    #[test]
    fn queues_get_the_formats_the_device_offers() {
        use Stamp::{FreeRunning as F, RealTime as R};
        let (fr, rt, both) = (0, 1, 2);
        // asked: 0 free running, 1 default, 2 real time, 3 undefined.
        let want = [
            (fr, [Some(F), Some(F), None, None]),
            (rt, [None, Some(R), Some(R), None]),
            (both, [Some(F), Some(F), Some(R), None]),
        ];
        for (offered, answers) in want {
            for (asked, answer) in answers.into_iter().enumerate() {
                assert_eq!(
                    Stamp::for_queue(asked as u8, offered),
                    answer,
                    "{asked} {offered}"
                );
            }
        }
    }

    #[test]
    fn real_time_words_round_trip() {
        for ns in [
            0,
            1,
            NS_PER_SEC - 1,
            NS_PER_SEC,
            1_700_000_000 * NS_PER_SEC + 5,
        ] {
            let w = real_time_word(ns);
            assert_eq!(w >> 32, ns / NS_PER_SEC);
            assert_eq!(w & 0xffff_ffff, ns % NS_PER_SEC);
            assert_eq!(real_time_ns(w), ns);
        }
        // Seconds wrap at 2^32, as the 32-bit field does.
        assert_eq!(real_time_word((1u64 << 32) * NS_PER_SEC + 7), 7);
        assert_eq!(
            real_time_ns(u64::MAX),
            u64::from(u32::MAX) * NS_PER_SEC + 0xffff_ffff
        );
    }

    #[test]
    fn a_pin_with_outputs_pending_is_noted() {
        let c = Clock::start(1_000);
        let mut pins = c.pins();
        assert!(!c.outputs_pending());
        pins[1] = Pin {
            enable: true,
            mode: 1,
            ..Pin::default()
        };
        c.set_pins_changed(&pins);
        assert!(c.outputs_pending());
        pins[1].fired = true;
        c.set_pins_changed(&pins);
        assert!(!c.outputs_pending());
        let mut once = Pin {
            event_mode: 2,
            event_armed: true,
            ..Pin::default()
        };
        assert!(once.take_event() && !once.take_event());
        let mut every = Pin {
            event_mode: 1,
            ..Pin::default()
        };
        assert!(every.take_event() && every.take_event());
        assert!(!Pin::default().take_event());
    }

    #[test]
    fn the_real_time_words_split_seconds_and_nanoseconds() {
        let c = Clock::start(1_000);
        c.set_utc(7 * NS_PER_SEC + 123);
        let (s, ns) = c.real_time();
        assert_eq!(s, 7);
        assert!((123..1_000_000_000).contains(&ns));
    }
}
