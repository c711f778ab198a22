//! Shows the device's events arriving as interrupts: command completions, then a receive
//! completion on an armed CQ, each waited for in [`Hca`]'s event wait. With VFIO (MSI-X
//! routed to eventfds) the thread sleeps until the interrupt, so a completion that raised
//! none would end in a timeout, and the vector's count must grow with the events; on the
//! model the same code polls.
//!
//! ```text
//! cargo run --example interrupts                       # the model (port looped back)
//! cargo run --example interrupts --features vfio -- --device vfio:0000:03:00.0
//! ```
//!
//! On a card the port must be looped back (a loopback plug; the vfio-user server's
//! `--loopback` for the model) for the receive completion.

use clap::Parser;
use mlx5_driver::backend::{AnyBackend, Events};
use mlx5_driver::eq::Event;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::{DeviceSpec, Hca, HcaConfig};
use mlx5_prm::cmd::QueryAdapter;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Command and receive completions delivered as events (MSI-X with VFIO)")]
struct Args {
    /// The device: sim, sim:threaded or vfio:DDDD:BB:DD.F.
    #[arg(long, default_value = "sim")]
    device: DeviceSpec,
    /// Commands to run.
    #[arg(long, default_value_t = 50)]
    commands: u32,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("interrupts: {e}");
            ExitCode::FAILURE
        }
    }
}

type Failure = Box<dyn std::error::Error>;

fn run(args: Args) -> Result<(), Failure> {
    let hca = Hca::open(&args.device, &HcaConfig::default())?;
    #[cfg(feature = "sim")]
    if let Some(dev) = hca.backend().sim_device() {
        dev.loopback(true);
    }
    let irqs = || hca.backend().interrupts();
    let driven = irqs().is_some_and(|v| !v.is_empty());
    println!(
        "device {}: events {}",
        args.device,
        if driven {
            "by MSI-X interrupt"
        } else {
            "polled"
        }
    );
    if !hca.event_mode() {
        return Err("commands do not complete by event (no async EQ)".into());
    }

    // Command completions: each one an EQE on the async EQ, and with MSI-X its interrupt. The
    // driver's command wait then has no polling step: after its first look it sleeps until an
    // interrupt (or the command's deadline, which would fail the command).
    let (before, woken) = (vector0(irqs()), hca.backend().wakeups().unwrap_or(0));
    let start = Instant::now();
    for _ in 0..args.commands {
        hca.query::<QueryAdapter>(0, |_| {})?;
    }
    let took = start.elapsed();
    let fired = vector0(irqs()) - before;
    let woken = hca.backend().wakeups().unwrap_or(0) - woken;
    println!(
        "commands: {} QUERY_ADAPTER completed by event in {:.1} ms; vector 0 fired {fired} \
         times, {woken} waits woken by it",
        args.commands,
        took.as_secs_f64() * 1e3
    );
    // The vector's count may be below the commands (MSI-X keeps one pending bit while the
    // vector is masked), but without interrupts no wait would have ended early.
    if driven && (fired == 0 || woken == 0) {
        return Err("commands completed without an interrupt waking a wait".into());
    }

    receive_completion(&hca, driven)?;
    let q = hca.teardown()?;
    println!("teardown: {} DMA buffers in quarantine", q.buffers);
    Ok(())
}

/// A receive completion on an armed CQ: a frame goes out and comes back (loopback).
fn receive_completion(hca: &Hca<AnyBackend>, driven: bool) -> Result<(), Failure> {
    let irqs = || hca.backend().interrupts();
    // Twice the receive ring: the RQ takes half.
    let pool = Pool::new(hca, 128, 2048)?;
    let config = EthConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        signal_every: 1,
        inline_l2: false,
        macs: Vec::new(),
    };
    let mut eth = EthQueues::create(&pool, &config)?;
    let (_, rx_cqn) = eth.cqns();
    hca.poll_events()?; // anything from the set-up, out of the way
    eth.arm_rx();
    let before = vector0(irqs());
    let mut pkts = vec![pool.alloc().ok_or("no free packet buffer")?];
    let mut frame = [0u8; 60];
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    pkts[0].write(&frame)?;
    let start = Instant::now();
    eth.tx_batch(&mut pkts)?;
    let deadline = start + Duration::from_secs(10);
    // With MSI-X: sleep in the backend's wait first, which only an interrupt ends before the
    // deadline; the completion event must then be in the EQ. Polled: look, pause, look.
    let mut seen = None;
    while seen.is_none() && Instant::now() < deadline {
        if driven {
            hca.backend().wait(deadline);
            if Instant::now() >= deadline {
                break;
            }
        }
        for e in hca.poll_events()? {
            if e == (Event::Completion { cqn: rx_cqn }) {
                seen = Some(start.elapsed());
            }
        }
        if !driven && seen.is_none() {
            hca.backend()
                .wait(Instant::now() + Duration::from_micros(50));
        }
    }
    let Some(after) = seen else {
        return Err(format!("no completion event for receive CQ {rx_cqn:#x} within 10 s").into());
    };
    let mut out = Vec::new();
    let got = eth.rx_batch(&mut out, 4)?;
    let fired = vector0(irqs()) - before;
    println!(
        "receive CQ {rx_cqn:#x}: completion event {:.1} ms after the send{}, {got} frame \
         received; vector 0 fired {fired} times",
        after.as_secs_f64() * 1e3,
        if driven {
            ", found after an interrupt ended the wait"
        } else {
            ""
        }
    );
    if got != 1 || out[0].len() != frame.len() {
        return Err(format!("expected the 60-byte frame back, got {got} frames").into());
    }
    if driven && fired == 0 {
        return Err("the completion event raised no interrupt".into());
    }
    drop(out);
    eth.destroy()?;
    Ok(())
}

/// Interrupts of vector 0 (the async EQ's) so far; 0 without MSI-X.
fn vector0(v: Option<Vec<u64>>) -> u64 {
    v.and_then(|v| v.first().copied()).unwrap_or(0)
}
