//! Nanoseconds from a free-running counter, the way Linux's `cyclecounter` and `timecounter`
//! (`include/linux/timecounter.h`) do it, with the constants `lib/clock.c` of mlx5 chooses.
//!
//! A [`CycleCounter`] converts cycles to nanoseconds as `cycles × mult >> shift`: `mult` and
//! `shift` come from the counter's frequency, `shift` as large as keeps the nominal `mult`
//! below 2^32 and a frequency adjustment of one scaled ppm (2^-16 ppm) a change of `mult` by
//! at least one. Only the low `mask_bits` bits of the counter are used (41 for mlx5, about
//! four hours at 156.25 MHz), so the product stays far from overflow between two reads.
//!
//! A [`Timecounter`] extends that counter to 64-bit nanoseconds: each [`Timecounter::read`]
//! adds the time of the cycles since the previous read (their difference modulo the mask) to
//! its count, and keeps the fraction of a nanosecond the shift drops, so the sum is exact: `n`
//! reads give `start + ⌊Σ cycles × mult / 2^shift⌋`, whatever the gaps. A gap longer than the
//! mask's wrap is counted modulo the wrap: the counter must be read at least once per wrap
//! (Linux reads it at a third of it, [`CycleCounter::refresh_period`]). Readings are taken
//! from a [`CycleSource`]: the adapter's internal timer, or any function in tests.
//!
//! The product `cycles × mult` is computed in 128 bits, so any gap up to the mask converts
//! without overflow; nanosecond counts are modulo 2^64 (584 years).

use crate::error::{Error, Result};
use std::time::Duration;

/// Nanoseconds per millisecond: frequencies are in kHz, cycles per millisecond.
const NS_PER_MS: u64 = 1_000_000;
/// One ppm in scaled ppm (ppm with a 16-bit binary fraction).
const SCALED_PPM_PER_PPM: i128 = 1 << 16;

/// Where a [`Timecounter`] reads its cycles.
pub trait CycleSource {
    /// The counter now (all of it; the timecounter masks it).
    fn cycles(&self) -> u64;
}

impl<F: Fn() -> u64> CycleSource for F {
    fn cycles(&self) -> u64 {
        self()
    }
}

/// The conversion of cycles of a masked counter to nanoseconds (Linux's `struct
/// cyclecounter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CycleCounter {
    /// The counter's frequency in kHz.
    khz: u32,
    /// Bits of the counter used.
    mask_bits: u32,
    /// Nanoseconds per cycle × 2^shift, now (after frequency adjustments).
    mult: u32,
    /// The same at the nominal frequency.
    nominal_mult: u32,
    shift: u32,
}

impl CycleCounter {
    /// The conversion for a counter of `khz` kHz of which `mask_bits` bits are used (1..=64):
    /// `shift` is the smaller of log2(khz) + 16 (a scaled-ppm adjustment moves `mult` by one
    /// or more) and log2(4294 × khz) (the nominal `mult` stays below 2^32); `mult` is
    /// 10^6 × 2^shift / khz, rounded (Linux's `mlx5_ptp_shift_constant` and
    /// `clocksource_khz2mult`).
    pub fn new(khz: u32, mask_bits: u32) -> Result<CycleCounter> {
        if khz == 0 || !(1..=64).contains(&mask_bits) {
            return Err(Error::InvalidArgument {
                what: "cycle counter",
                why: format!("{khz} kHz, {mask_bits} bits (need a frequency and 1..=64 bits)"),
            });
        }
        let log2 = |v: u64| 63 - v.leading_zeros();
        let max_ns_per_cycle = u64::from(u32::MAX) / NS_PER_MS;
        let mut shift = (log2(u64::from(khz)) + 16).min(log2(max_ns_per_cycle * u64::from(khz)));
        // The bound above keeps mult below 2^32; stepping down covers the rounding.
        let mult = loop {
            let m = ((u128::from(NS_PER_MS) << shift) + u128::from(khz / 2)) / u128::from(khz);
            match u32::try_from(m) {
                Ok(m) if m > 0 => break m,
                _ if shift > 0 => shift -= 1,
                _ => {
                    return Err(Error::InvalidArgument {
                        what: "cycle counter",
                        why: format!("{khz} kHz has no 32-bit multiplier"),
                    })
                }
            }
        };
        Ok(CycleCounter {
            khz,
            mask_bits,
            mult,
            nominal_mult: mult,
            shift,
        })
    }

    /// The counter's frequency in kHz.
    pub fn khz(&self) -> u32 {
        self.khz
    }

    /// Bits of the counter used.
    pub fn mask_bits(&self) -> u32 {
        self.mask_bits
    }

    /// The mask of the bits used.
    pub fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.mask_bits)
    }

    /// Nanoseconds per cycle × 2^shift, with the frequency adjustment.
    pub fn mult(&self) -> u32 {
        self.mult
    }

    /// The same at the nominal frequency.
    pub fn nominal_mult(&self) -> u32 {
        self.nominal_mult
    }

    /// The shift of `mult`.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// Nanoseconds of `cycles` (at the current `mult`) plus the carried fraction `frac` (in
    /// 2^-shift ns), which is replaced by the new remainder. In 128 bits: no overflow for any
    /// `cycles`; the result is modulo 2^64.
    pub fn cyc2ns(&self, cycles: u64, frac: &mut u64) -> u64 {
        let total = u128::from(cycles) * u128::from(self.mult) + u128::from(*frac);
        *frac = (total & ((1u128 << self.shift) - 1)) as u64;
        (total >> self.shift) as u64
    }

    /// Nanoseconds of `cycles` before a point whose carried fraction is `frac` (Linux's
    /// `cc_cyc2ns_backwards`).
    fn cyc2ns_backwards(&self, cycles: u64, frac: u64) -> u64 {
        let total = u128::from(cycles) * u128::from(self.mult);
        (total.saturating_sub(u128::from(frac)) >> self.shift) as u64
    }

    /// How long the counter takes to wrap the mask, at the nominal frequency.
    pub fn wrap_period(&self) -> Duration {
        let cycles = u128::from(self.mask()) + 1;
        duration_ns(cycles * u128::from(NS_PER_MS) / u128::from(self.khz))
    }

    /// How often a timecounter on this counter must at least be read: Linux's overflow
    /// period, the smaller of a third of the wrap and the cycles whose product with `mult`
    /// stays below 2^63.
    pub fn refresh_period(&self) -> Duration {
        let cycles = (u64::MAX >> 1) / u64::from(self.mult.max(1));
        let cycles = cycles.min(self.mask() / 3);
        duration_ns(u128::from(cycles) * u128::from(NS_PER_MS) / u128::from(self.khz))
    }

    /// `mult` for a frequency `scaled_ppm` off nominal (Linux's `adjust_by_scaled_ppm` of the
    /// nominal `mult`): refused when it does not fit 32 bits (Linux would truncate it; the
    /// nominal `mult` may be close to 2^32) or is 0.
    pub fn adjusted_mult(&self, scaled_ppm: i64) -> Result<u32> {
        let base = i128::from(self.nominal_mult);
        let diff = base * i128::from(scaled_ppm).abs() / (1_000_000 * SCALED_PPM_PER_PPM);
        let m = if scaled_ppm < 0 {
            base - diff
        } else {
            base + diff
        };
        u32::try_from(m)
            .ok()
            .filter(|&m| m > 0)
            .ok_or_else(|| Error::InvalidArgument {
                what: "frequency adjustment",
                why: format!("{scaled_ppm} scaled ppm takes the multiplier out of 32 bits"),
            })
    }
}

/// `ns` nanoseconds as a duration (saturating).
fn duration_ns(ns: u128) -> Duration {
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// A 64-bit nanosecond time kept from a masked counter (Linux's `struct timecounter`).
#[derive(Debug, Clone)]
pub struct Timecounter<S> {
    source: S,
    cc: CycleCounter,
    /// The masked counter at the last read.
    cycle_last: u64,
    /// The time then.
    nsec: u64,
    /// The fraction of a nanosecond carried, in 2^-shift ns.
    frac: u64,
}

impl<S: CycleSource> Timecounter<S> {
    /// A timecounter reading `source` through `cc`, at `start_ns` now.
    pub fn new(source: S, cc: CycleCounter, start_ns: u64) -> Timecounter<S> {
        let cycle_last = source.cycles() & cc.mask();
        Timecounter {
            source,
            cc,
            cycle_last,
            nsec: start_ns,
            frac: 0,
        }
    }

    /// Reads the counter and returns the time now. Monotonic as long as it is called at least
    /// once per [`CycleCounter::wrap_period`].
    pub fn read(&mut self) -> u64 {
        let now = self.source.cycles();
        self.advance(now)
    }

    /// [`Timecounter::read`] with a reading taken elsewhere (the counter's value now).
    pub fn advance(&mut self, cycles: u64) -> u64 {
        let now = cycles & self.cc.mask();
        let delta = now.wrapping_sub(self.cycle_last) & self.cc.mask();
        let ns = self.cc.cyc2ns(delta, &mut self.frac);
        self.cycle_last = now;
        self.nsec = self.nsec.wrapping_add(ns);
        self.nsec
    }

    /// The time of a counter value (a CQE timestamp) near the last read: after it if less than
    /// half a wrap ahead, else before it (Linux's `timecounter_cyc2time`). Does not read the
    /// counter; a value taken after the last read converts exactly as a read would.
    pub fn cyc2time(&self, cycles: u64) -> u64 {
        let mask = self.cc.mask();
        let delta = (cycles & mask).wrapping_sub(self.cycle_last) & mask;
        if delta > mask / 2 {
            let back = self.cycle_last.wrapping_sub(cycles) & mask;
            self.nsec
                .wrapping_sub(self.cc.cyc2ns_backwards(back, self.frac))
        } else {
            let mut frac = self.frac;
            self.nsec.wrapping_add(self.cc.cyc2ns(delta, &mut frac))
        }
    }

    /// Moves the time by `delta` ns (Linux's `timecounter_adjtime`).
    pub fn adjtime(&mut self, delta: i64) {
        self.nsec = self.nsec.wrapping_add_signed(delta);
    }

    /// Sets the time to `ns` now (Linux's `timecounter_init` on the same counter).
    pub fn set_time(&mut self, ns: u64) {
        self.cycle_last = self.source.cycles() & self.cc.mask();
        self.nsec = ns;
        self.frac = 0;
    }

    /// Runs the clock `scaled_ppm` (ppm × 2^16) off its nominal frequency from now on: the
    /// time so far is taken at the old rate first (Linux's adjfine of mlx5).
    pub fn adjfine(&mut self, scaled_ppm: i64) -> Result<()> {
        let mult = self.cc.adjusted_mult(scaled_ppm)?;
        self.read();
        self.cc.mult = mult;
        Ok(())
    }

    /// The conversion in use.
    pub fn cycle_counter(&self) -> &CycleCounter {
        &self.cc
    }

    /// The source of cycles.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The masked counter at the last read, and the time then.
    pub fn last(&self) -> (u64, u64) {
        (self.cycle_last, self.nsec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn the_constants_are_linuxs_for_the_model_and_for_round_frequencies() {
        // 156.25 MHz (ConnectX-5, the model): shift min(17 + 16, log2(4294 × 156250) = 29).
        let cc = CycleCounter::new(156_250, 41).unwrap();
        assert_eq!((cc.shift(), cc.mult()), (29, 3_435_973_837));
        assert_eq!(cc.mask(), (1 << 41) - 1);
        // 2^41 cycles at 156.25 MHz: 14073.748835532 s.
        assert_eq!(cc.wrap_period().as_nanos(), 14_073_748_835_532);
        // The product bound: 2^63 / mult cycles, 17.18 s (a third of the wrap is far longer).
        assert_eq!(cc.refresh_period().as_nanos(), 17_179_869_177);
        let one_ghz = CycleCounter::new(1_000_000, 64).unwrap();
        assert_eq!(one_ghz.mult(), 1 << one_ghz.shift());
        assert!(CycleCounter::new(0, 41).is_err());
        assert!(CycleCounter::new(1000, 0).is_err());
        assert!(CycleCounter::new(1000, 65).is_err());
        for khz in [1, 2, 999, 1000, 54_000, 156_250, 1_000_000, u32::MAX] {
            let cc = CycleCounter::new(khz, 41).unwrap();
            let exact = 1e6 * 2f64.powi(cc.shift() as i32) / f64::from(khz);
            assert!((f64::from(cc.mult()) - exact).abs() <= 0.5 + 1e-6, "{khz}");
        }
    }

    #[test]
    fn reads_across_the_mask_wrap_go_on() {
        let now = Cell::new((1u64 << 41) - 1000);
        let cc = CycleCounter::new(1_000_000, 41).unwrap();
        let mut tc = Timecounter::new(|| now.get(), cc, 5);
        now.set((1 << 41) + 500);
        assert_eq!(tc.read(), 5 + 1500);
        // The upper bits the mask drops do not matter.
        now.set(u64::MAX - 7);
        let t = tc.read();
        assert!(t > 1505);
        // A timestamp taken just before the last read converts to a time before it.
        assert_eq!(tc.cyc2time(u64::MAX - 17), t - 10);
        assert_eq!(tc.cyc2time(u64::MAX - 7 + 3), t + 3);
    }

    #[test]
    fn adjustments_move_the_time_and_the_rate() {
        let now = Cell::new(0u64);
        let cc = CycleCounter::new(1_000_000, 41).unwrap();
        let mut tc = Timecounter::new(|| now.get(), cc, 1_000);
        tc.adjtime(-400);
        assert_eq!(tc.read(), 600);
        // +1000 ppm: 1 000 000 cycles are 1 001 000 ns, less what the multiplier's floor
        // drops (2^31 / 1000 is 2147483.648: 999.9997 of the 1000 ns added).
        tc.adjfine(1000 << 16).unwrap();
        now.set(1_000_000);
        assert_eq!(tc.read(), 600 + 1_000_999);
        tc.set_time(7);
        assert_eq!(tc.read(), 7);
        assert!(tc.adjfine(i64::MAX / 2).is_err());
        assert!(tc.adjfine(-(1_000_000 << 16)).is_err(), "a zero multiplier");
    }
}
