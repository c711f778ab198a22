//! A long run of traffic through the model with random faults, checking that every packet is
//! accounted for and memory stays flat (run by `scripts/soak`).
//!
//! ```text
//! soak [--packets N] [--seconds S] [--seed X] [--batch B]
//! ```
//!
//! Two parts, one after the other: Ethernet loopback on one device ([`eth`]: N frames, with
//! link flaps, page requests and returns, failing commands, CQ overruns the queues recover
//! from; every frame back in order or
//! counted by the model as discarded or dropped), then RC SENDs between two devices on a
//! lossy wire over RoCE v2 ([`rc`]: N/32 messages, every one delivered exactly once and in
//! order though frames are lost each way and CQ overruns force reconnects). Faults come from a seeded generator, so a run
//! repeats from its seed. In each part the process's resident memory after a warm-up and at
//! the end may not differ by more than [`RSS_SLACK`], and every wait has a deadline: nothing
//! moving for [`IDLE_LIMIT`] fails the run with what is missing.

mod eth;
mod rc;
#[path = "../common/rc_link.rs"]
mod rc_link;

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::{Error, Hca};
use mlx5_prm::cmd::{QueryVportState, QueryVportStateOpMod};
use std::process::ExitCode;
use std::time::Duration;

/// Resident memory a part may gain between the end of its warm-up and its end.
pub const RSS_SLACK: u64 = 16 << 20;
/// Nothing moving for this long, with work outstanding, fails the run.
pub const IDLE_LIMIT: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let run = |a: Args| {
        let half = a.seconds.map(|s| s / 2.0);
        eth::run(&a, half)?;
        rc::run(&a, half)
    };
    match parse().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The command line.
pub struct Args {
    /// Ethernet frames (and a 32nd of that in RC messages).
    pub packets: u64,
    /// Run for this long instead (half each part).
    pub seconds: Option<f64>,
    /// Seed of the fault generator.
    pub seed: u64,
    /// Frames per batch.
    pub batch: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        packets: 1_000_000,
        seconds: None,
        seed: 1,
        batch: 32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--packets" => a.packets = value()?.parse().map_err(|e| format!("--packets: {e}"))?,
            "--seconds" => {
                a.seconds = Some(value()?.parse().map_err(|e| format!("--seconds: {e}"))?)
            }
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--batch" => a.batch = value()?.parse().map_err(|e| format!("--batch: {e}"))?,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if a.batch == 0 || a.batch > 256 {
        return Err("--batch: 1 to 256".into());
    }
    Ok(a)
}

/// xorshift64*: a small, seeded generator (the run must be repeatable from its seed).
pub struct Rng(pub u64);

impl Rng {
    pub fn draw(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.draw() % n == 0
    }
}

/// The peak resident memory of this process in KiB (`VmHWM`; 0 where unknown).
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Resident memory of this process in bytes (Linux; 0 where unknown).
pub fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A command made to fail with a random status and syndrome: the driver must return exactly
/// that as a typed error, and the same command must work again once the fault is gone.
pub fn command_fault(
    hca: &Hca<SimBackend>,
    dev: &mlx5_sim::Device,
    rng: &mut Rng,
) -> Result<(), String> {
    const OPCODE: u16 = 0x750; // QUERY_VPORT_STATE
    const STATUSES: [u8; 4] = [0x3, 0x4, 0x5, 0x10];
    let status = STATUSES[(rng.draw() % 4) as usize];
    let syndrome = rng.draw() as u32;
    dev.faults().fail_command(OPCODE, status, syndrome);
    let got = hca.query::<QueryVportState>(QueryVportStateOpMod::VnicVport, |_| {});
    dev.faults().stop_failing(OPCODE);
    match got {
        Err(Error::Command {
            opcode: OPCODE,
            status: s,
            syndrome: y,
            ..
        }) if (s, y) == (status, syndrome) => {}
        other => {
            return Err(format!(
                "QUERY_VPORT_STATE failed with status 0x{status:x} syndrome 0x{syndrome:x} by the fault injector, the driver said {other:?}"
            ))
        }
    }
    hca.query::<QueryVportState>(QueryVportStateOpMod::VnicVport, |_| {})
        .map(drop)
        .map_err(|e| format!("QUERY_VPORT_STATE after the fault: {e}"))
}
