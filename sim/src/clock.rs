//! The device's free-running clock: the internal timer of the initialization segment (0x1000)
//! and the timestamp of every CQE count the same ticks, at the profile's device_frequency_khz,
//! from power-on (the creation of the segment, or the last firmware reset).
//!
//! One clock, shared by the segment and the data path, so that a driver converting CQE
//! timestamps with the timer it reads (Linux's free-running timecounter, `lib/clock.c`) sees
//! one time base. Ticks are computed from the monotonic clock at the moment of the read; no
//! thread keeps them.

use std::time::{Duration, Instant};

/// A free-running counter of `khz` thousand ticks per second, zero at `origin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Clock {
    origin: Instant,
    khz: u64,
}

impl Clock {
    /// A clock that starts now, counting `khz` thousand ticks per second (at least 1).
    pub fn start(khz: u32) -> Clock {
        Clock {
            origin: Instant::now(),
            khz: u64::from(khz.max(1)),
        }
    }

    /// Time since the clock started.
    pub fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Ticks counted by now.
    pub fn ticks(&self) -> u64 {
        ticks(self.elapsed(), self.khz)
    }
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
}
