//! `mlx5`: the adapter's operations from the command line, on the device model (`--device
//! sim`, the default) or a ConnectX function through VFIO (`--device vfio:0000:01:00.0`).
//! Wording and layout follow `ethtool` and `mlxlink` where they have an equivalent; every
//! command takes `--json`. Errors name the register (or command), status and syndrome.
//!
//! The model lives as long as the process: with `--device sim` a change (`link down`) holds
//! for the rest of one invocation only.

mod caps;
mod clock;
mod config;
mod counters;
mod fields;
mod health;
mod link;
mod loopback;
mod module;
mod regs;

use clap::{Parser, Subcommand};
use mlx5_driver::{DeviceSpec, Hca, HcaConfig};
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "mlx5",
    version,
    about = "Operate an mlx5 (ConnectX) adapter: link, module, registers, capabilities"
)]
struct Args {
    /// The device: `sim`, `sim:threaded` or `vfio:DOMAIN:BUS:DEV.FN`.
    #[arg(long, short, global = true, default_value = "sim")]
    device: DeviceSpec,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// The port (1 for the first).
    #[arg(long, short, global = true, default_value_t = 1)]
    port: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Link state, modes and speed, MTU and pause (`ethtool DEV`); or change them.
    Link {
        #[command(subcommand)]
        change: Option<link::Change>,
    },
    /// The port's counters (PPCNT), as `ethtool -S DEV` names them.
    Counters(counters::Args),
    /// A self-test of the data path: frames through the looped-back port, checked, and the
    /// counters they moved (`ethtool -t DEV`).
    Loopback(loopback::Args),
    /// The transceiver module in the port's cage, decoded (`ethtool -m DEV`).
    Module(module::Args),
    /// The device's capabilities (QUERY_HCA_CAP, general, current).
    Caps(caps::Args),
    /// The clock: timer, time, timecounter, UTC clock, PPS pins; or adjust it.
    Clock(clock::Args),
    /// Any access register of the spec, by name.
    Reg {
        #[command(subcommand)]
        op: regs::Op,
    },
    /// Firmware health: version, health counter and syndrome, the health buffer; `--polls N`
    /// runs the health monitor and reports its verdict.
    Health(health::Args),
    /// Non-volatile configuration (`mlxconfig`): query it, or set values for the next reset.
    Config {
        #[command(subcommand)]
        op: config::Op,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mlx5: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What a command prints: text, or a JSON value.
pub enum Output {
    Text(String),
    Json(serde_json::Value),
}

fn run(args: &Args) -> Result<(), String> {
    let hca = Hca::open(&args.device, &HcaConfig::default()).map_err(|e| e.to_string())?;
    let out = match &args.command {
        Command::Link { change } => link::run(&hca, args.port, change.as_ref(), args.json),
        Command::Counters(c) => counters::run(&hca, args.port, c, args.json),
        Command::Loopback(l) => loopback::run(&hca, args.port, l, args.json),
        Command::Module(m) => module::run(&hca, args.port, m, args.json),
        Command::Caps(c) => caps::run(&hca, c, args.json),
        Command::Clock(c) => clock::run(&hca, c, args.json),
        Command::Reg { op } => regs::run(&hca, op, args.json),
        Command::Health(h) => health::run(&hca, h, args.json),
        Command::Config { op } => config::run(&hca, op, args.json),
    }?;
    let text = match out {
        Output::Text(t) => t,
        Output::Json(v) => serde_json::to_string_pretty(&v).map_err(|e| e.to_string())? + "\n",
    };
    hca.teardown().map_err(|e| e.to_string())?;
    // A reader that stops early (`| head`) is not an error of ours.
    match std::io::stdout().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}

/// `value` as JSON.
pub fn json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

/// Lines `label: value` with the labels padded to one column, each line indented by a tab,
/// as `ethtool` prints them.
pub fn table(rows: &[(String, String)]) -> String {
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (label, value) in rows {
        out.push_str(&format!("\t{label:<width$} : {value}\n"));
    }
    out
}
