//! The adapter's clock, as Linux's `lib/clock.c` of mlx5 runs it.
//!
//! The device has a free-running 64-bit counter, the **internal timer** of the
//! initialization segment (0x1000), ticking at the general capability
//! `device_frequency_khz`; a CQE timestamp of a queue in the free-running format is a value
//! of it. Nothing adjusts that counter. Time is kept in software on
//! top of it: a [`Timecounter`] over its low 41 bits (Linux's mask) extends it to 64-bit
//! nanoseconds, converts CQE timestamps ([`Clock::cqe_time`]), and takes the PTP
//! adjustments: a frequency offset changes its multiplier, a phase step its offset.
//!
//! Some devices also have a **UTC (real-time) clock** (seconds and nanoseconds at 0x1040 of
//! the segment) that MTUTC steers; when MCAM reports `ptpcyc2realtime_modify`, Linux sends
//! every adjustment to it as well, before its own: ADJUST_FREQ_UTC (in scaled ppm when MCAM
//! reports `mtutc_freq_adj_units`, else in ppb), ADJUST_TIME for a step within the device's
//! range (±32767 ns, or ±200 µs with `mtutc_time_adjustment_extended_range`), otherwise
//! SET_TIME_IMMEDIATE to the UTC clock's time plus the step. [`Clock`] does the same, and a
//! refused MTUTC leaves the software time untouched.
//!
//! When the device offers the **real-time format** to its queues, the driver's queues use it
//! (as Linux's mlx5e does, [`format`](mod@format)): their CQEs carry the UTC clock, seconds and
//! nanoseconds, and the clock's time is that UTC clock (Linux's real-time mode: its PHC reads
//! the segment's real_time words). [`Clock::format`] says which format is in force,
//! [`Clock::cqe_time`] converts a timestamp of either. The pulse-per-second pins (MTPPS) are in
//! [`pps`](Clock::pps), their events (MTPPSE, PPS EQEs) in [`pps_events`](Clock::pps_event).
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mlx5_driver::backend::sim::SimBackend;
//! use mlx5_driver::clock::Clock;
//! use mlx5_driver::{Hca, HcaConfig};
//!
//! let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
//! let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
//! let clock = Clock::new(&hca).unwrap();
//! let (a, b) = (clock.now(), clock.now());
//! assert!(b >= a);
//! clock.adjust_freq_ppb(-250).unwrap();
//! # }
//! ```

pub mod format;
mod pps;
mod pps_events;
mod timecounter;

pub use format::{real_time_to_ns, OfferedFormats, TimestampFormat};
pub use pps::{PinMode, PpsConfig, PpsPin, PpsPins};
pub use pps_events::{PpsEvent, PpsEventMode, PpsEvents};
pub use timecounter::{CycleCounter, CycleSource, Timecounter};

use crate::backend::{Backend, Regs};
use crate::error::{Error, Result};
use crate::Hca;
use mlx5_prm::reg::{Mcam, Mtutc};
use mlx5_prm::rt::MmioBytes;
use mlx5_prm::{
    HcaTsFormatCap, InitialSeg, MtutcFreqAdjUnits, MtutcOperation, MTUTC_ADJUST_TIME_EXTENDED_MAX,
    MTUTC_ADJUST_TIME_MAX,
};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bits of the internal timer Linux's timecounter keeps (`CLOCKSOURCE_MASK(41)`).
pub const MASK_BITS: u32 = 41;
/// The largest frequency offset in ppb when the device reports none (Linux's `max_adj`).
pub const DEFAULT_MAX_ADJ_PPB: u32 = 50_000_000;
/// Nanoseconds per second.
const NS_PER_SEC: u64 = 1_000_000_000;

/// The internal timer as Linux reads it: high word, low word, high word again; if the high
/// word changed, the low one wrapped in between and is read again.
pub fn read_internal_timer<B: Backend>(hca: &Hca<B>) -> u64 {
    let seg = seg(hca);
    let h = seg.internal_timer_h();
    let mut l = seg.internal_timer_l();
    let h1 = seg.internal_timer_h();
    if h != h1 {
        l = seg.internal_timer_l();
    }
    (u64::from(h1) << 32) | u64::from(l)
}

/// The UTC clock in nanoseconds (seconds × 10^9 + nanoseconds of the segment's real_time
/// words, read as the internal timer is).
pub fn read_real_time<B: Backend>(hca: &Hca<B>) -> u64 {
    let seg = seg(hca);
    let h = seg.real_time_h();
    let mut l = seg.real_time_l();
    let h1 = seg.real_time_h();
    if h != h1 {
        l = seg.real_time_l();
    }
    real_time_to_ns((u64::from(h1) << 32) | u64::from(l))
}

fn seg<B: Backend>(hca: &Hca<B>) -> InitialSeg<MmioBytes<Regs<'_, B::Mmio>>> {
    // SAFETY: callers only read it (the clock's registers in the segment are read-only).
    let regs = unsafe { Regs::new(hca.backend().mmio()) };
    InitialSeg::new_unchecked(MmioBytes::new(regs, InitialSeg::SIZE))
}

/// The internal timer of an HCA as a [`CycleSource`].
pub struct InternalTimer<'h, B: Backend>(pub &'h Hca<B>);

impl<B: Backend> CycleSource for InternalTimer<'_, B> {
    fn cycles(&self) -> u64 {
        read_internal_timer(self.0)
    }
}

/// What the device offers for its clock (general capabilities, MCAM, MTUTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ClockCaps {
    /// The internal timer's frequency (device_frequency_khz).
    pub frequency_khz: u32,
    /// MCAM: the device has MTUTC.
    pub mtutc: bool,
    /// MCAM ptpcyc2realtime_modify: adjustments go to the UTC clock through MTUTC too.
    pub modify_real_time: bool,
    /// MCAM mtutc_freq_adj_units: MTUTC takes scaled ppm.
    pub scaled_ppm: bool,
    /// MCAM mtutc_time_adjustment_extended_range: ADJUST_TIME takes ±200 µs.
    pub extended_time_range: bool,
    /// The queues can stamp completions with the UTC clock (sq_ts_format or rq_ts_format
    /// offers real time: Linux's real-time mode, in which its PHC is the UTC clock).
    pub real_time_queues: bool,
    /// The formats SQs can stamp in (sq_ts_format).
    pub sq_formats: OfferedFormats,
    /// The formats RQs can stamp in (rq_ts_format).
    pub rq_formats: OfferedFormats,
    /// The largest frequency offset in ppb (2^log_max_freq_adjustment from MTUTC, else
    /// [`DEFAULT_MAX_ADJ_PPB`]).
    pub max_adj_ppb: u32,
    /// The PPS pins are usable (pps and pps_modify, MCAM mtpps_fs and mtpps_enh_out_per_adj:
    /// Linux's MLX5_PPS_CAP).
    pub pps: bool,
}

impl ClockCaps {
    /// The largest ADJUST_TIME step the device takes, in ns either way.
    pub fn max_phase_ns(&self) -> u32 {
        if self.extended_time_range {
            MTUTC_ADJUST_TIME_EXTENDED_MAX as u32
        } else {
            MTUTC_ADJUST_TIME_MAX as u32
        }
    }
}

/// How a time adjustment reached the UTC clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum TimeAdjust {
    /// Only the software time moved (the device does not let MTUTC modify its UTC clock).
    SoftwareOnly,
    /// MTUTC ADJUST_TIME, within the device's range.
    Phase,
    /// MTUTC SET_TIME_IMMEDIATE to the UTC clock's time plus the step (outside the range).
    Step,
}

/// How a frequency adjustment reached the UTC clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum FreqAdjust {
    /// Only the software multiplier changed.
    SoftwareOnly,
    /// MTUTC ADJUST_FREQ_UTC in scaled ppm.
    ScaledPpm(i32),
    /// MTUTC ADJUST_FREQ_UTC in ppb.
    Ppb(i32),
}

/// The clock now, for reports (`mlx5 clock`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ClockReport {
    /// What the device offers.
    pub caps: ClockCaps,
    /// The timestamp format in force (the driver's queues use it; [`Clock::format`]).
    pub format: TimestampFormat,
    /// The internal timer (all 64 bits).
    pub raw: u64,
    /// The timecounter's time, in ns (since the Unix epoch, as Linux starts it).
    pub time_ns: u64,
    /// Bits of the timer the timecounter keeps.
    pub mask_bits: u32,
    /// How long those bits take to wrap, in ns.
    pub wrap_period_ns: u64,
    /// How often the timecounter must at least be read, in ns.
    pub refresh_period_ns: u64,
    /// The conversion: ns = cycles × mult >> shift.
    pub mult: u32,
    /// See `mult`.
    pub shift: u32,
    /// The UTC clock, in ns (when the device lets MTUTC steer it, or runs queues on it).
    pub real_time_ns: Option<u64>,
    /// The PPS pins, when usable.
    pub pps: Option<PpsPins>,
}

/// The clock of an HCA: its capabilities and a [`Timecounter`] on its internal timer.
pub struct Clock<'h, B: Backend> {
    hca: &'h Hca<B>,
    caps: ClockCaps,
    format: TimestampFormat,
    tc: Mutex<Timecounter<InternalTimer<'h, B>>>,
}

impl<'h, B: Backend> Clock<'h, B> {
    /// Learns the clock's capabilities (general capabilities, MCAM when the device has it,
    /// MTUTC when MCAM lists it) and starts a timecounter at the host's wall-clock time, as
    /// Linux does. Refused when the device reports no frequency (Linux then has no clock).
    /// The timestamp format in force is the one the driver's queues take by default
    /// ([`TimestampFormat::preferred`]); [`Clock::with_format`] changes it.
    pub fn new(hca: &'h Hca<B>) -> Result<Clock<'h, B>> {
        let caps = clock_caps(hca)?;
        let cc = CycleCounter::new(caps.frequency_khz, MASK_BITS)?;
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let start = u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX);
        Ok(Clock {
            hca,
            caps,
            format: TimestampFormat::preferred(&hca.info().caps()),
            tc: Mutex::new(Timecounter::new(InternalTimer(hca), cc, start)),
        })
    }

    /// This clock with timestamp format `format` in force: for queues made with that format
    /// ([`EthQueues::create_with_format`](crate::eth::EthQueues::create_with_format),
    /// [`Qp::create_with_format`](crate::qp::Qp::create_with_format)).
    pub fn with_format(self, format: TimestampFormat) -> Clock<'h, B> {
        Clock { format, ..self }
    }

    /// The timestamp format in force: what [`Clock::cqe_time`] converts and what
    /// [`Clock::now`] reads.
    pub fn format(&self) -> TimestampFormat {
        self.format
    }

    /// The HCA.
    pub fn hca(&self) -> &'h Hca<B> {
        self.hca
    }

    /// What the device offers.
    pub fn caps(&self) -> &ClockCaps {
        &self.caps
    }

    /// The timecounter, locked (for its [`CycleCounter`], or to read it in a loop).
    pub fn timecounter(&self) -> MutexGuard<'_, Timecounter<InternalTimer<'h, B>>> {
        self.tc.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The time now, in ns: in the free-running format the timecounter's time (it reads the
    /// timer: call it at least once per wrap period, a few hours, for the time to stay
    /// monotonic); in the real-time format the UTC clock, as Linux's PHC reads it then.
    pub fn now(&self) -> u64 {
        match self.format {
            TimestampFormat::FreeRunning => self.timecounter().read(),
            TimestampFormat::RealTime => self.real_time(),
        }
    }

    /// The internal timer now (all 64 bits).
    pub fn raw(&self) -> u64 {
        read_internal_timer(self.hca)
    }

    /// The time of a CQE timestamp of a queue in the format in force, in ns: see
    /// [`Clock::cqe_time_in`].
    pub fn cqe_time(&self, timestamp: u64) -> u64 {
        self.cqe_time_in(self.format, timestamp)
    }

    /// The time of a CQE (or PPS event) timestamp in `format`, in ns: free running, a value
    /// of the internal timer taken within half a wrap of the timecounter's last reading,
    /// through the timecounter; real time, seconds × 10^9 + nanoseconds.
    pub fn cqe_time_in(&self, format: TimestampFormat, timestamp: u64) -> u64 {
        match format {
            TimestampFormat::FreeRunning => self.timecounter().cyc2time(timestamp),
            TimestampFormat::RealTime => real_time_to_ns(timestamp),
        }
    }

    /// The UTC clock in ns.
    pub fn real_time(&self) -> u64 {
        read_real_time(self.hca)
    }

    /// Whether adjustments go to the UTC clock through MTUTC.
    fn steers_utc(&self) -> bool {
        self.caps.mtutc && self.caps.modify_real_time
    }

    /// Runs the clock `scaled_ppm` (ppm × 2^16, what PTP's adjfine receives) off its nominal
    /// frequency: first the UTC clock (when the device allows), then the timecounter.
    /// Refused beyond [`ClockCaps::max_adj_ppb`].
    pub fn adjust_freq(&self, scaled_ppm: i64) -> Result<FreqAdjust> {
        let ppb = scaled_ppm_to_ppb(scaled_ppm);
        if ppb.unsigned_abs() > u64::from(self.caps.max_adj_ppb) {
            return Err(Error::InvalidArgument {
                what: "frequency adjustment",
                why: format!("{ppb} ppb (at most {} either way)", self.caps.max_adj_ppb),
            });
        }
        // Checked before anything reaches the device.
        self.timecounter()
            .cycle_counter()
            .adjusted_mult(scaled_ppm)?;
        let sent = if self.steers_utc() {
            let (units, value, sent) = match i32::try_from(scaled_ppm) {
                Ok(v) if self.caps.scaled_ppm => {
                    (MtutcFreqAdjUnits::ScaledPpm, v, FreqAdjust::ScaledPpm(v))
                }
                // Within max_adj_ppb, which fits 32 bits.
                _ => {
                    let v = ppb as i32;
                    (MtutcFreqAdjUnits::Ppb, v, FreqAdjust::Ppb(v))
                }
            };
            self.hca.write_reg::<Mtutc>(|r| {
                r.set_operation(MtutcOperation::AdjustFreqUtc);
                r.set_freq_adj_units(units);
                r.set_freq_adjustment(value as u32);
            })?;
            sent
        } else {
            FreqAdjust::SoftwareOnly
        };
        self.timecounter().adjfine(scaled_ppm)?;
        Ok(sent)
    }

    /// [`Clock::adjust_freq`] in ppb (converted to the nearest scaled ppm).
    pub fn adjust_freq_ppb(&self, ppb: i64) -> Result<FreqAdjust> {
        // ppb × 2^16 / 1000, to the nearest (halves away from zero).
        let n = i128::from(ppb) * 65536;
        let scaled = (n + n.signum() * 500) / 1000;
        let scaled = i64::try_from(scaled).map_err(|_| Error::InvalidArgument {
            what: "frequency adjustment",
            why: format!("{ppb} ppb"),
        })?;
        self.adjust_freq(scaled)
    }

    /// Moves the time by `delta` ns: first the UTC clock (when the device allows: ADJUST_TIME
    /// within its range, else SET_TIME_IMMEDIATE to its time plus `delta`), then the
    /// timecounter.
    pub fn adjust_time(&self, delta: i64) -> Result<TimeAdjust> {
        let how = if !self.steers_utc() {
            TimeAdjust::SoftwareOnly
        } else if delta.unsigned_abs() <= u64::from(self.caps.max_phase_ns()) {
            self.hca.write_reg::<Mtutc>(|r| {
                r.set_operation(MtutcOperation::AdjustTime);
                r.set_time_adjustment(delta as i32 as u32);
            })?;
            TimeAdjust::Phase
        } else {
            let now = i128::from(self.real_time());
            let to =
                u64::try_from(now + i128::from(delta)).map_err(|_| Error::InvalidArgument {
                    what: "time adjustment",
                    why: format!("{delta} ns takes the UTC clock before 0"),
                })?;
            self.set_utc(to)?;
            TimeAdjust::Step
        };
        self.timecounter().adjtime(delta);
        Ok(how)
    }

    /// Sets the time to `ns` (since the Unix epoch): the UTC clock first (when the device
    /// allows; it takes seconds up to 2^32 − 1), then the timecounter.
    pub fn set_time(&self, ns: u64) -> Result<()> {
        if self.steers_utc() {
            self.set_utc(ns)?;
        }
        self.timecounter().set_time(ns);
        Ok(())
    }

    /// MTUTC SET_TIME_IMMEDIATE.
    fn set_utc(&self, ns: u64) -> Result<()> {
        let sec = u32::try_from(ns / NS_PER_SEC).map_err(|_| Error::InvalidArgument {
            what: "time",
            why: format!("{ns} ns is past the UTC clock's 32-bit seconds"),
        })?;
        self.hca.write_reg::<Mtutc>(|r| {
            r.set_operation(MtutcOperation::SetTimeImmediate);
            r.set_utc_sec(sec);
            r.set_utc_nsec((ns % NS_PER_SEC) as u32);
        })?;
        Ok(())
    }

    /// The clock now: timer, time, conversion, UTC clock and PPS pins.
    pub fn report(&self) -> Result<ClockReport> {
        let (raw, time_ns, cc) = {
            let mut tc = self.timecounter();
            let raw = read_internal_timer(self.hca);
            let t = tc.advance(raw);
            (raw, t, *tc.cycle_counter())
        };
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let utc = self.steers_utc() || self.caps.real_time_queues;
        Ok(ClockReport {
            caps: self.caps,
            format: self.format,
            raw,
            time_ns,
            mask_bits: cc.mask_bits(),
            wrap_period_ns: ns(cc.wrap_period()),
            refresh_period_ns: ns(cc.refresh_period()),
            mult: cc.mult(),
            shift: cc.shift(),
            real_time_ns: utc.then(|| self.real_time()),
            pps: if self.caps.pps {
                Some(self.pps()?)
            } else {
                None
            },
        })
    }
}

/// ppb of a scaled-ppm value, as Linux's `scaled_ppm_to_ppb` rounds it.
pub fn scaled_ppm_to_ppb(scaled_ppm: i64) -> i64 {
    (((1 + i128::from(scaled_ppm)) * 125) >> 13) as i64
}

/// The clock's capabilities: general capabilities, then MCAM (group 0, feature group 0) if
/// the device has it, then MTUTC's frequency bound if MCAM lists MTUTC.
fn clock_caps<B: Backend>(hca: &Hca<B>) -> Result<ClockCaps> {
    let g = hca.info().caps();
    let frequency_khz = g.device_frequency_khz();
    if frequency_khz == 0 {
        return Err(Error::InvalidArgument {
            what: "clock",
            why: "the device reports no device_frequency_khz".into(),
        });
    }
    let real = |f: std::result::Result<HcaTsFormatCap, _>| {
        matches!(
            f,
            Ok(HcaTsFormatCap::RealTime | HcaTsFormatCap::FreeRunningAndRealTime)
        )
    };
    let mut caps = ClockCaps {
        sq_formats: OfferedFormats::from_raw(g.sq_ts_format_raw()),
        rq_formats: OfferedFormats::from_raw(g.rq_ts_format_raw()),
        frequency_khz,
        mtutc: false,
        modify_real_time: false,
        scaled_ppm: false,
        extended_time_range: false,
        real_time_queues: real(g.sq_ts_format()) || real(g.rq_ts_format()),
        max_adj_ppb: DEFAULT_MAX_ADJ_PPB,
        pps: false,
    };
    let (mut mtpps_fs, mut mtpps_enh) = (false, false);
    if g.mcam_reg() {
        let m = hca.read_reg::<Mcam>(|r| {
            r.set_feature_group(0);
            r.set_access_reg_group(0);
        })?;
        caps.mtutc = m.mng_access_reg_cap_mask().access_regs().mtutc();
        let f = m.mng_feature_cap_mask();
        let f = f.enhanced_features();
        caps.modify_real_time = f.ptpcyc2realtime_modify();
        caps.scaled_ppm = f.mtutc_freq_adj_units();
        caps.extended_time_range = f.mtutc_time_adjustment_extended_range();
        (mtpps_fs, mtpps_enh) = (f.mtpps_fs(), f.mtpps_enh_out_per_adj());
    }
    caps.pps = g.pps() && g.pps_modify() && mtpps_fs && mtpps_enh;
    if caps.mtutc {
        let log = hca.read_reg::<Mtutc>(|_| {})?.log_max_freq_adjustment();
        if log != 0 {
            caps.max_adj_ppb = 1u32
                .checked_shl(log.into())
                .unwrap_or(0)
                .min(i32::MAX as u32);
        }
    }
    Ok(caps)
}
