//! CQE timestamp formats: what a queue's completions carry in their timestamp, which formats
//! a device offers, which one the driver picks, and the conversion of either to nanoseconds.
//!
//! A queue chooses at creation (its context's ts_format): the **free-running** internal
//! timer (ticks, converted through the [`Timecounter`](super::Timecounter)) or the
//! **real-time** UTC clock (seconds in the high word, nanoseconds in the low one: ns =
//! seconds × 10^9 + nanoseconds, no state needed). The device advertises per queue kind what
//! it can do (sq_ts_format, rq_ts_format: free running only, real time only, or both). Like
//! Linux's mlx5e (`mlx5e_create_sq`, `mlx5e_create_rq` with `mlx5_is_real_time_sq/rq`), the
//! driver picks real time whenever the device offers it ([`TimestampFormat::preferred`]);
//! queue constructors that take a format let a caller decide otherwise, and a format the
//! device does not offer is the device's to refuse.

use mlx5_prm::{CmdHcaCap, HcaTsFormatCap, TsFormat};

/// Nanoseconds per second.
const NS_PER_SEC: u64 = 1_000_000_000;

/// What a queue's CQE timestamps carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum TimestampFormat {
    /// The internal timer's ticks (convert with the clock's timecounter).
    FreeRunning,
    /// The UTC clock: seconds in the high 32 bits, nanoseconds in the low 32.
    RealTime,
}

/// What a device offers one kind of queue (a `hca_ts_format_cap` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum OfferedFormats {
    /// The free-running format only.
    FreeRunning,
    /// The real-time format only.
    RealTime,
    /// Either; each queue picks.
    Both,
    /// A value the spec does not name.
    Unknown(u8),
}

impl OfferedFormats {
    /// The capability field's value (raw).
    pub fn from_raw(raw: u8) -> OfferedFormats {
        match HcaTsFormatCap::from_raw(raw.into()) {
            Some(HcaTsFormatCap::FreeRunning) => OfferedFormats::FreeRunning,
            Some(HcaTsFormatCap::RealTime) => OfferedFormats::RealTime,
            Some(HcaTsFormatCap::FreeRunningAndRealTime) => OfferedFormats::Both,
            None => OfferedFormats::Unknown(raw),
        }
    }

    /// Whether queues of this kind can stamp in `format`.
    pub fn offers(self, format: TimestampFormat) -> bool {
        matches!(
            (self, format),
            (OfferedFormats::Both, _)
                | (OfferedFormats::FreeRunning, TimestampFormat::FreeRunning)
                | (OfferedFormats::RealTime, TimestampFormat::RealTime)
        )
    }

    /// For reports: "free running", "real time", "free running, real time".
    pub fn describe(self) -> String {
        match self {
            OfferedFormats::FreeRunning => "free running".into(),
            OfferedFormats::RealTime => "real time".into(),
            OfferedFormats::Both => "free running, real time".into(),
            OfferedFormats::Unknown(v) => format!("unknown ({v:#x})"),
        }
    }
}

impl TimestampFormat {
    /// The format the driver gives its queues on a device with general capabilities `caps`:
    /// real time when both SQs and RQs offer it (Linux then runs its clock in real-time
    /// mode), else free running. RC QPs follow the same choice (the model and the devices
    /// Linux knows offer QPs what they offer SQs: `mlx5_get_qp_default_ts` reads
    /// sq_ts_format when RoCE's page is not in use).
    pub fn preferred(caps: &CmdHcaCap<&[u8]>) -> TimestampFormat {
        let sq = OfferedFormats::from_raw(caps.sq_ts_format_raw());
        let rq = OfferedFormats::from_raw(caps.rq_ts_format_raw());
        if sq.offers(TimestampFormat::RealTime) && rq.offers(TimestampFormat::RealTime) {
            TimestampFormat::RealTime
        } else {
            TimestampFormat::FreeRunning
        }
    }

    /// The queue context's ts_format asking for this format.
    pub fn ts_format(self) -> TsFormat {
        match self {
            TimestampFormat::FreeRunning => TsFormat::FreeRunning,
            TimestampFormat::RealTime => TsFormat::RealTime,
        }
    }

    /// For reports: "free running" or "real time".
    pub fn name(self) -> &'static str {
        match self {
            TimestampFormat::FreeRunning => "free running",
            TimestampFormat::RealTime => "real time",
        }
    }
}

/// Nanoseconds of a real-time value (seconds in the high word, nanoseconds in the low): the
/// UTC clock's words, or a CQE or PPS event timestamp in the real-time format. Exact, and
/// never overflows (at most (2^32 − 1) × 10^9 + 2^32 − 1 < 2^63).
pub fn real_time_to_ns(raw: u64) -> u64 {
    (raw >> 32) * NS_PER_SEC + (raw & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_and_preference() {
        use OfferedFormats::*;
        use TimestampFormat::{FreeRunning as F, RealTime as R};
        assert!(FreeRunning.offers(F) && !FreeRunning.offers(R));
        assert!(!RealTime.offers(F) && RealTime.offers(R));
        assert!(Both.offers(F) && Both.offers(R));
        assert!(!Unknown(3).offers(F) && !Unknown(3).offers(R));
        let mut caps = CmdHcaCap::zeroed();
        let pick =
            |c: &CmdHcaCap| TimestampFormat::preferred(&CmdHcaCap::new_unchecked(&c.storage()[..]));
        assert_eq!(pick(&caps), F);
        caps.set_sq_ts_format(HcaTsFormatCap::FreeRunningAndRealTime);
        assert_eq!(pick(&caps), F, "RQs cannot");
        caps.set_rq_ts_format(HcaTsFormatCap::RealTime);
        assert_eq!(pick(&caps), R);
        assert_eq!(R.ts_format(), TsFormat::RealTime);
        assert_eq!(real_time_to_ns(3 << 32 | 5), 3_000_000_005);
    }
}
