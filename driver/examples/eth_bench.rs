//! Workloads for the Ethernet data-path figures (run by `scripts/bench-eth`).
//!
//! ```text
//! eth_bench count tx|rx|fwd BATCH ROUNDS   one workload, for callgrind: only tx_batch and
//!                                          rx_batch are measured (--toggle-collect), the
//!                                          model's work runs outside them
//! eth_bench mpps BATCH PACKETS [--link-down-at N]
//!                                          loopback through the model, wall-clock; every
//!                                          packet must come back (no packet for 2 s fails
//!                                          the run with what was lost); --link-down-at
//!                                          takes the link down after N sent, to show it
//! ```
//!
//! In `count`, doorbells are held by [`Deferred`] while the driver runs and released to the
//! model between batches, so the instructions collected are the driver's own: writing WQEs,
//! the doorbell record and the doorbell, reaping send CQEs and returning their buffers,
//! polling receive CQEs, handing out packets and refilling the RQ.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::Deferred;
use mlx5_driver::eth::{EthConfig, EthQueues, Packet, Pool};
use mlx5_driver::{Hca, HcaConfig};
use std::time::{Duration, Instant};

fn usage() -> ! {
    eprintln!(
        "usage: eth_bench count tx|rx|fwd BATCH ROUNDS | eth_bench mpps BATCH PACKETS [--link-down-at N]"
    );
    std::process::exit(2)
}

fn arg(args: &[String], i: usize) -> usize {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| usage())
}

const CONFIG: EthConfig = EthConfig {
    log_sq_size: 9,
    log_rq_size: 9,
    signal_every: 32,
    inline_l2: false,
    macs: Vec::new(),
};
/// Packet buffers and their size.
const BUFFERS: u32 = 4096;
const BUF_SIZE: u32 = 2048;

/// A 60-byte frame (every frame is steered to the RQ: no MAC filter).
fn frame() -> [u8; 60] {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

fn count(direction: &str, batch: usize, rounds: usize) {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).expect("bring-up");
    let pool = Pool::new(&hca, BUFFERS, BUF_SIZE).expect("pool");
    let mut eth = EthQueues::create(&pool, &CONFIG).expect("eth queues");
    let be = hca.backend();
    be.hold();
    let f = frame();
    let (mut pkts, mut out): (Vec<Packet>, Vec<Packet>) =
        (Vec::with_capacity(batch), Vec::with_capacity(batch));
    let mut moved = 0usize;
    for _ in 0..rounds {
        match direction {
            "tx" => {
                pool.alloc_batch(&mut pkts, batch);
                pkts.iter_mut().for_each(|p| p.set_len(60));
                moved += eth.tx_batch(&mut pkts).expect("tx");
                be.release();
            }
            "rx" => {
                for _ in 0..batch {
                    dev.receive_frame(&f);
                }
                moved += eth.rx_batch(&mut out, batch).expect("rx");
                // The packets go back to the pool as they drop.
                out.clear();
            }
            "fwd" => {
                for _ in 0..batch {
                    dev.receive_frame(&f);
                }
                eth.rx_batch(&mut out, batch).expect("rx");
                moved += eth.tx_batch(&mut out).expect("tx");
                be.release();
            }
            _ => usage(),
        }
    }
    assert_eq!(moved, batch * rounds, "every packet moved");
    eprintln!("{direction}: {moved} packets");
}

/// How long `mpps` waits for a packet to come back before calling the rest lost.
const IDLE_LIMIT: Duration = Duration::from_secs(2);

fn mpps(batch: usize, packets: usize, link_down_at: Option<usize>) {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).expect("bring-up");
    let pool = Pool::new(&hca, BUFFERS, BUF_SIZE).expect("pool");
    let mut eth = EthQueues::create(&pool, &CONFIG).expect("eth queues");
    dev.loopback(true);
    let (mut pkts, mut out) = (Vec::with_capacity(batch), Vec::with_capacity(batch));
    let start = Instant::now();
    let (mut sent, mut received) = (0usize, 0usize);
    // A lost packet must fail the run, not hang it: no packet back for this long is a failure
    // that says what went missing.
    let mut progress = Instant::now();
    while received < packets {
        if link_down_at.is_some_and(|n| sent >= n) && dev.tx_discarded() == 0 {
            dev.raise_port_change(1, false);
        }
        if sent < packets {
            pool.alloc_batch(&mut pkts, batch.min(packets - sent));
            pkts.iter_mut().for_each(|p| p.set_len(60));
            sent += eth.tx_batch(&mut pkts).expect("tx");
            pkts.clear();
        }
        let got = eth.rx_batch(&mut out, batch).expect("rx");
        out.clear();
        received += got;
        if got > 0 {
            progress = Instant::now();
        } else if progress.elapsed() > IDLE_LIMIT {
            eprintln!(
                "eth_bench mpps: {received} of {sent} sent packets came back, none for {:?}: \
                 {} lost (model: rx_dropped {}, tx_discarded {})",
                IDLE_LIMIT,
                sent - received,
                dev.rx_dropped(),
                dev.tx_discarded()
            );
            std::process::exit(1);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "loopback batch {batch}: {received} packets in {secs:.3} s = {:.2} Mpps",
        received as f64 / secs / 1e6
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("count") => count(
            args.get(1).map_or_else(|| usage(), String::as_str),
            arg(&args, 2),
            arg(&args, 3),
        ),
        Some("mpps") => {
            let down = match args.get(3).map(String::as_str) {
                None => None,
                Some("--link-down-at") => Some(arg(&args, 4)),
                Some(_) => usage(),
            };
            mpps(arg(&args, 1), arg(&args, 2), down)
        }
        _ => usage(),
    }
}
