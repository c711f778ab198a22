//! `mlx5 clock`: the adapter's clock as Linux's mlx5 PHC keeps it: the internal timer and its
//! frequency, the timecounter's time and conversion (41-bit mask, its wrap period), what the
//! device lets MTUTC steer (the UTC clock), the CQE timestamp formats the queues can use and
//! the one in force (real time when offered, as Linux), and the PPS pins (MTPPS) with their
//! events (MTPPSE); `mlx5 clock adjust`
//! adjusts its frequency (`--freq PPB`) or time (`--time NS`), as `phc_ctl freq` and
//! `phc_ctl adj` would.

use crate::{json, table, Output};
use mlx5_driver::backend::Backend;
use mlx5_driver::clock::{Clock, ClockReport, FreqAdjust, PinMode, PpsEventMode, TimeAdjust};
use mlx5_driver::Hca;
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    op: Option<Op>,
}

#[derive(clap::Subcommand)]
pub enum Op {
    /// Adjust the clock: its frequency or its time (one of the two).
    Adjust(Adjust),
}

#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub struct Adjust {
    /// Run the clock this many ppb off its nominal frequency (negative: slower).
    #[arg(long, allow_negative_numbers = true)]
    freq: Option<i64>,
    /// Move the clock by this many ns (negative: back).
    #[arg(long, allow_negative_numbers = true)]
    time: Option<i64>,
}

pub fn run<B: Backend>(hca: &Hca<B>, args: &Args, as_json: bool) -> Result<Output, String> {
    let e = |e: mlx5_driver::Error| e.to_string();
    let clock = Clock::new(hca).map_err(e)?;
    match &args.op {
        None => show(&clock.report().map_err(e)?, as_json),
        Some(Op::Adjust(a)) => match (a.freq, a.time) {
            (Some(ppb), _) => {
                let sent = clock.adjust_freq_ppb(ppb).map_err(e)?;
                let how = match sent {
                    FreqAdjust::SoftwareOnly => "the timecounter only".to_string(),
                    FreqAdjust::ScaledPpm(v) => {
                        format!("MTUTC ADJUST_FREQ_UTC, {v} scaled ppm, and the timecounter")
                    }
                    FreqAdjust::Ppb(v) => {
                        format!("MTUTC ADJUST_FREQ_UTC, {v} ppb, and the timecounter")
                    }
                };
                let mult = clock.timecounter().cycle_counter().mult();
                if as_json {
                    return Ok(Output::Json(json!({
                        "freq_ppb": ppb, "sent": json(&sent)?, "mult": mult,
                    })));
                }
                Ok(Output::Text(format!(
                    "Frequency set to {ppb:+} ppb: {how} (mult {mult}).\n"
                )))
            }
            (None, Some(ns)) => {
                let how = clock.adjust_time(ns).map_err(e)?;
                if as_json {
                    return Ok(Output::Json(json!({ "time_ns": ns, "sent": json(&how)? })));
                }
                let how = match how {
                    TimeAdjust::SoftwareOnly => "the timecounter only",
                    TimeAdjust::Phase => "MTUTC ADJUST_TIME, and the timecounter",
                    TimeAdjust::Step => {
                        "MTUTC SET_TIME_IMMEDIATE (beyond ADJUST_TIME's range), and the timecounter"
                    }
                };
                Ok(Output::Text(format!("Time moved by {ns:+} ns: {how}.\n")))
            }
            // clap requires one of the two.
            (None, None) => Err("give --freq PPB or --time NS".into()),
        },
    }
}

/// Nanoseconds as seconds with nine decimals.
fn secs(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn show(r: &ClockReport, as_json: bool) -> Result<Output, String> {
    if as_json {
        return Ok(Output::Json(json(r)?));
    }
    let c = &r.caps;
    let mut rows = vec![
        ("Frequency".to_string(), format!("{} kHz", c.frequency_khz)),
        ("Internal timer".to_string(), format!("{:#018x}", r.raw)),
        (
            "Time".to_string(),
            format!("{} s ({} ns)", secs(r.time_ns), r.time_ns),
        ),
        (
            "Timecounter".to_string(),
            format!(
                "{} bits, ns = cycles * {} >> {}",
                r.mask_bits, r.mult, r.shift
            ),
        ),
        (
            "Wrap period".to_string(),
            format!("{} s", secs(r.wrap_period_ns)),
        ),
        (
            "Read at least every".to_string(),
            format!("{} s", secs(r.refresh_period_ns)),
        ),
        (
            "Real-time queues".to_string(),
            yes(c.real_time_queues).to_string(),
        ),
        ("SQ timestamps".to_string(), c.sq_formats.describe()),
        ("RQ timestamps".to_string(), c.rq_formats.describe()),
        ("Timestamp format".to_string(), r.format.name().to_string()),
        ("MTUTC".to_string(), yes(c.mtutc).to_string()),
        (
            "UTC clock steered".to_string(),
            yes(c.mtutc && c.modify_real_time).to_string(),
        ),
        ("Scaled ppm".to_string(), yes(c.scaled_ppm).to_string()),
        (
            "ADJUST_TIME range".to_string(),
            format!("+/-{} ns", c.max_phase_ns()),
        ),
        (
            "Max frequency offset".to_string(),
            format!("{} ppb", c.max_adj_ppb),
        ),
    ];
    if let Some(ns) = r.real_time_ns {
        rows.push(("UTC clock".to_string(), format!("{} s", secs(ns))));
    }
    rows.push(("PPS".to_string(), yes(c.pps).to_string()));
    let mut s = format!("Clock:\n{}", table(&rows));
    if let Some(p) = &r.pps {
        s.push_str(&format!(
            "PPS pins: {} (at most {} in, {} out)\n",
            p.pins.len(),
            p.max_in,
            p.max_out
        ));
        for pin in &p.pins {
            let can = match (pin.can_in, pin.can_out) {
                (true, true) => "in/out",
                (true, false) => "in",
                (false, true) => "out",
                (false, false) => "none",
            };
            let mode = match pin.mode {
                PinMode::In => "in".to_string(),
                PinMode::Out => "out".to_string(),
                PinMode::Unknown(v) => format!("unknown ({v:#x})"),
            };
            let events = match pin.events.map(|e| (e.mode, e.armed)) {
                None => "unknown".to_string(),
                Some((PpsEventMode::Off, _)) => "off".to_string(),
                Some((PpsEventMode::EveryPulse, _)) => "every pulse".to_string(),
                Some((PpsEventMode::OnceTillArmed, armed)) => {
                    format!(
                        "once till armed ({})",
                        if armed { "armed" } else { "not armed" }
                    )
                }
                Some((PpsEventMode::Unknown(v), _)) => format!("unknown ({v:#x})"),
            };
            s.push_str(&format!(
                "\tpin {}: can {can}, {}, mode {mode}, pattern {}, next pulse {:#x}, events {events}\n",
                pin.pin,
                if pin.enabled { "enabled" } else { "disabled" },
                pin.pattern,
                pin.time_stamp
            ));
        }
    }
    Ok(Output::Text(s))
}
