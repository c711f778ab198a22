//! `mlx5 health`: the firmware's health as Linux's `mlx5_core` watches it: firmware version,
//! the health counter and syndrome of the initialization segment, and the health buffer
//! decoded (the fields Linux prints when it finds the device dead). With `--polls N` the
//! health monitor samples N times, `--interval` apart, and reports its verdict.

use crate::{json, table, Output};
use mlx5_driver::backend::Backend;
use mlx5_driver::health::{HealthConfig, HealthReport, HealthStatus, Verdict, MAX_MISSES};
use mlx5_driver::Hca;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Run the health monitor this many times and report its verdict.
    #[arg(long)]
    polls: Option<usize>,
    /// Milliseconds between the monitor's polls (Linux: 2000).
    #[arg(long, default_value_t = 2000)]
    interval: u64,
    /// Unchanged counter samples in a row that are fatal (Linux: 3).
    #[arg(long, default_value_t = MAX_MISSES)]
    max_misses: u32,
}

pub fn run<B: Backend>(hca: &Hca<B>, args: &Args, as_json: bool) -> Result<Output, String> {
    let report = hca.health();
    let config = HealthConfig {
        max_misses: args.max_misses,
        interval: Duration::from_millis(args.interval),
    };
    let status = match args.polls {
        Some(n) => hca
            .health_monitor(config)
            .run(n)
            .map_err(|e| e.to_string())?,
        None => None,
    };
    if as_json {
        let mut v = json(&report)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("healthy".into(), report.healthy().into());
            if let Some(s) = &status {
                obj.insert(
                    "monitor".into(),
                    serde_json::json!({
                        "config": {
                            "max_misses": config.max_misses,
                            "interval_ms": config.interval.as_millis(),
                        },
                        "status": json(s)?,
                    }),
                );
            }
        }
        return Ok(Output::Json(v));
    }
    let mut text = snapshot(&report);
    if let (Some(n), Some(s)) = (args.polls, &status) {
        text.push_str(&monitor(n, &config, s));
    }
    Ok(Output::Text(text))
}

/// The one-off report, as Linux prints the health buffer.
fn snapshot(r: &HealthReport) -> String {
    let b = &r.buffer;
    let hex = |v: u32| format!("0x{v:08x}");
    let rows = vec![
        ("Firmware version".to_string(), r.fw_version.to_string()),
        ("Health counter".to_string(), r.health_counter.to_string()),
        ("Health syndrome".to_string(), r.health_syndrome.to_string()),
        (
            "State".to_string(),
            if r.healthy() { "healthy" } else { "fatal" }.to_string(),
        ),
    ];
    let mut buffer = Vec::new();
    for (i, v) in b.assert_var.iter().enumerate() {
        buffer.push((format!("assert_var[{i}]"), hex(*v)));
    }
    buffer.extend([
        ("assert_exit_ptr".to_string(), hex(b.assert_exit_ptr)),
        ("assert_callra".to_string(), hex(b.assert_callra)),
        ("time".to_string(), b.time.to_string()),
        ("fw_ver (raw)".to_string(), hex(b.fw_version_raw)),
        ("hw_id".to_string(), hex(b.hw_id)),
        ("rfr".to_string(), u8::from(b.rfr).to_string()),
        (
            "severity".to_string(),
            format!(
                "{} ({}){}",
                b.severity,
                b.severity_name,
                if b.severity_valid {
                    ""
                } else {
                    ", not reported"
                }
            ),
        ),
        ("irisc_index".to_string(), b.irisc_index.to_string()),
        ("synd".to_string(), b.synd.to_string()),
        ("ext_synd".to_string(), format!("0x{:04x}", b.ext_synd)),
    ]);
    let mut s = String::from("Health:\n");
    s.push_str(&table(&rows));
    s.push_str("Health buffer:\n");
    s.push_str(&table(&buffer));
    s
}

/// The monitor's verdict after `polls` polls.
fn monitor(polls: usize, config: &HealthConfig, s: &HealthStatus) -> String {
    let verdict = match &s.verdict {
        Verdict::Healthy => "healthy".to_string(),
        Verdict::Fatal(f) => format!("fatal: {f}"),
    };
    let rows = vec![
        (
            "Polls".to_string(),
            format!(
                "{} of {polls}, {} ms apart",
                s.polls,
                config.interval.as_millis()
            ),
        ),
        (
            "Misses".to_string(),
            format!("{} in a row (fatal at {})", s.misses, config.max_misses),
        ),
        ("Verdict".to_string(), verdict),
    ];
    format!("Monitor:\n{}", table(&rows))
}
