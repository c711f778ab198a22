//! `mlx5 counters`: the port's PPCNT counters as `ethtool -S DEV` shows the `_phy` ones (by
//! their Linux names), or one group with every counter the spec defines; `--watch` prints
//! the change per second, `--clear` zeroes the groups read.

use crate::{json, table, Output};
use mlx5_driver::backend::Backend;
use mlx5_driver::port::{CounterGroup, Counters};
use mlx5_driver::Hca;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// One group, with every counter its layout has: ieee_802_3, rfc_2863, rfc_2819,
    /// rfc_3635, ethernet_extended, prio0..prio7, phy, phy_statistical.
    #[arg(long, short, value_parser = group)]
    group: Option<CounterGroup>,
    /// Leave out the counters that are zero (with --watch: that did not change).
    #[arg(long)]
    nonzero: bool,
    /// Zero the groups after reading them.
    #[arg(long)]
    clear: bool,
    /// Print the change per second every SECONDS.
    #[arg(long, value_name = "SECONDS")]
    watch: Option<f64>,
    /// With --watch: stop after this many intervals (default: run until interrupted).
    #[arg(long)]
    count: Option<u64>,
}

fn group(s: &str) -> Result<CounterGroup, String> {
    CounterGroup::parse(s).ok_or_else(|| {
        let names: Vec<String> = CounterGroup::all().iter().map(|g| g.name()).collect();
        format!("no counter group `{s}` (groups: {})", names.join(", "))
    })
}

/// `(label, value)` of the counters shown: with a group, every counter by the spec's name
/// (and the `ethtool` name beside it); without, the ones `ethtool -S` shows, by that name.
fn rows(sets: &[Counters], one_group: bool) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for set in sets {
        for c in &set.counters {
            let label = match (&c.ethtool, one_group) {
                (Some(e), true) => format!("{} ({e})", c.name),
                (None, true) => c.name.to_string(),
                (Some(e), false) => e.clone(),
                (None, false) => continue,
            };
            out.push((label, c.value));
        }
    }
    out
}

fn read_all<B: Backend>(
    hca: &Hca<B>,
    port: u8,
    groups: &[CounterGroup],
    clear: bool,
) -> Result<Vec<Counters>, String> {
    let p = hca.port(port);
    groups
        .iter()
        .map(|&g| p.counters(g, clear).map_err(|e| e.to_string()))
        .collect()
}

pub fn run<B: Backend>(
    hca: &Hca<B>,
    port: u8,
    args: &Args,
    as_json: bool,
) -> Result<Output, String> {
    let groups = match args.group {
        Some(g) => vec![g],
        None => CounterGroup::all(),
    };
    let one = args.group.is_some();
    let Some(seconds) = args.watch else {
        let sets = read_all(hca, port, &groups, args.clear)?;
        if as_json {
            return Ok(Output::Json(json(&sets)?));
        }
        let rows: Vec<(String, String)> = rows(&sets, one)
            .into_iter()
            .filter(|(_, v)| !args.nonzero || *v != 0)
            .map(|(l, v)| (l, v.to_string()))
            .collect();
        let mut rows = rows;
        if args.group == Some(CounterGroup::PhysicalLayerStatistical) {
            let ber = hca.port(port).bit_error_rate().map_err(|e| e.to_string())?;
            rows.push(("raw BER (before FEC)".into(), ber_text(ber.raw, ber.bound)));
            rows.push((
                "effective BER (after FEC)".into(),
                ber_text(ber.effective, ber.bound),
            ));
        }
        let head = match args.group {
            Some(g) => format!("Port {port} counters, group {}:\n", g.name()),
            None => format!("Port {port} statistics (PPCNT, as ethtool -S names them):\n"),
        };
        return Ok(Output::Text(head + &table(&rows)));
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!(
            "--watch takes a positive number of seconds, not {seconds}"
        ));
    }
    let interval = Duration::from_secs_f64(seconds);
    let mut last = read_all(hca, port, &groups, false)?;
    let mut at = Instant::now();
    let mut n = 0u64;
    let mut samples = Vec::new();
    while args.count.is_none_or(|c| n < c) {
        std::thread::sleep(interval);
        let now = read_all(hca, port, &groups, false)?;
        let dt = at.elapsed().as_secs_f64();
        at = Instant::now();
        let (old, new) = (rows(&last, one), rows(&now, one));
        let rates: Vec<(String, f64)> = new
            .iter()
            .zip(&old)
            .map(|((l, v), (_, o))| (l.clone(), v.wrapping_sub(*o) as f64 / dt))
            .filter(|(_, r)| !args.nonzero || *r != 0.0)
            .collect();
        if as_json {
            let per_second: serde_json::Map<String, serde_json::Value> = rates
                .iter()
                .map(|(l, r)| (l.clone(), serde_json::Value::from(*r)))
                .collect();
            samples.push(serde_json::json!({ "interval_s": dt, "per_second": per_second }));
        } else {
            let rows: Vec<(String, String)> = rates
                .iter()
                .map(|(l, r)| (l.clone(), format!("{r:.1}/s")))
                .collect();
            println!("Port {port}, change over {dt:.2} s:\n{}", table(&rows));
        }
        last = now;
        n += 1;
    }
    Ok(if as_json {
        Output::Json(serde_json::Value::Array(samples))
    } else {
        Output::Text(String::new())
    })
}

/// A bit error rate as `mlxlink` writes one (`1.5E-12`), with the bound a count of zero
/// errors gives (`0 (< 3.4E-09)`).
fn ber_text(rate: Option<f64>, bound: Option<f64>) -> String {
    let sci = |x: f64| {
        let s = format!("{x:.1E}");
        // Rust writes `3.4E-9`; two exponent digits read like mlxlink's.
        match s.split_once('E') {
            Some((m, e)) => match e.parse::<i32>() {
                Ok(e) => format!("{m}E{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()),
                Err(_) => s,
            },
            None => s,
        }
    };
    match (rate, bound) {
        (None, _) => "no bits received yet".into(),
        (Some(0.0), Some(b)) => format!("0 (< {})", sci(b)),
        (Some(r), _) => sci(r),
    }
}
