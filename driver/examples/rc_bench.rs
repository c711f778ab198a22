//! RC throughput, latency and cost on the model: two devices joined by a wire, one RC QP each,
//! connected over RoCE v2 (frames, ICRC, ACKs) or the in-memory fabric, and `N` RDMA WRITEs,
//! READs, SENDs or atomics of `SIZE` bytes from the first to the second with `DEPTH` of them
//! outstanding. It prints operations and packets per second, the mean time per operation
//! (at depth 1 that is the round-trip latency), and the RoCE packets each way, which
//! `scripts/bench-roce` divides callgrind's instruction counts by.
//!
//! ```text
//! rc_bench write 1024 100000 16          # 1 KiB writes, 16 outstanding, RoCE
//! rc_bench read 65536 2000 1 --fabric    # 64 KiB reads one at a time, in-memory fabric
//! rc_bench write 64 32000 32 --fabric --signal-every 32 --count
//!                                        # the driver's own cost, for callgrind
//! rc_bench write 64 20000 1 --fabric --latency   # each round trip timed: median, p99
//! ```
//!
//! `--count` is for `scripts/bench-rc`: the requester's doorbells are held by
//! [`Deferred`] while the driver posts and released to the model before it polls (as
//! `eth_bench count` does), so callgrind, collecting only inside the driver's `post_sends`,
//! `Cq::poll` and `Qp::complete_with` (`--toggle-collect`), counts the driver's work and none
//! of the model's. It prints the calls made, which the script divides the counts by.
//! `--per-request` measures the old path instead: a `post_send` (and a doorbell) per
//! request, and `Qp::complete`'s `Vec` of finished requests.
//!
//! `--latency` times each request alone (post, then poll until its completion) and prints the
//! median and the 99th percentile of those round trips: criterion's figures are means over
//! many iterations and say nothing of the tail.

#[path = "common/rc_link.rs"]
mod rc_link;

use clap::{Parser, ValueEnum};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend, Deferred};
use mlx5_driver::roce::RoceAddress;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::{Config, Device, Mode, RcTransport, Wire};
use rc_link::{err, Link, Op, Path, Workload, ENDS};
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The operations, as the command line names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OpArg {
    Write,
    Read,
    Send,
    FetchAdd,
    CompareSwap,
}

impl From<OpArg> for Op {
    fn from(op: OpArg) -> Op {
        match op {
            OpArg::Write => Op::Write,
            OpArg::Read => Op::Read,
            OpArg::Send => Op::Send,
            OpArg::FetchAdd => Op::FetchAdd,
            OpArg::CompareSwap => Op::CompareSwap,
        }
    }
}

/// RC operations between two model devices.
#[derive(Parser, Debug)]
struct Args {
    /// What each work request does.
    #[arg(value_enum)]
    op: OpArg,
    /// Bytes per operation (split into packets at the path MTU, 1024; 8 for the atomics).
    size: usize,
    /// Operations.
    count: u32,
    /// Operations outstanding at once (1: each waits for the previous one's completion).
    #[arg(default_value_t = 1)]
    depth: usize,
    /// The in-memory RC fabric instead of RoCE v2 frames.
    #[arg(long)]
    fabric: bool,
    /// One request in this many asks for a completion (and any that fills the window).
    #[arg(long, default_value_t = 1)]
    signal_every: usize,
    /// Carry the bytes in the WQE (SEND up to 44, WRITE up to 28).
    #[arg(long)]
    inline: bool,
    /// The model on threads of its own (`Mode::Threaded`) instead of inside each doorbell.
    #[arg(long)]
    threaded: bool,
    /// Hold the requester's doorbells while the driver posts (for callgrind; see the docs).
    #[arg(long = "count", conflicts_with_all = ["threaded", "latency"])]
    count_mode: bool,
    /// Time each request alone and print the median and p99 round trip (depth 1).
    #[arg(long)]
    latency: bool,
    /// Post each request with its own `post_send` and reap through `Qp::complete`'s `Vec`
    /// (the old path) instead of a `Qp::batch` per batch and `Qp::complete_with`.
    #[arg(long, conflicts_with = "vec")]
    per_request: bool,
    /// Post each batch as a `Vec` of `SendRequest`s with `Qp::post_batch` instead of the
    /// typed calls of `Qp::batch`.
    #[arg(long)]
    vec: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rc_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if args.size == 0 || args.depth == 0 || args.count == 0 || args.signal_every == 0 {
        return Err("size, count, depth and --signal-every must be at least 1".into());
    }
    if args.latency && args.depth != 1 {
        return Err("--latency times requests one at a time: depth 1".into());
    }
    let config = Config {
        rc_transport: if args.fabric {
            RcTransport::Fabric
        } else {
            RcTransport::Roce
        },
        mode: if args.threaded {
            Mode::Threaded
        } else {
            Mode::Inline
        },
        ..Config::default()
    };
    let (ba, da) = SimBackend::new(config.clone());
    let (bb, db) = SimBackend::new(config);
    let _wire = Wire::connect(&da, &db);
    let hb = Hca::bring_up(bb, &HcaConfig::default()).map_err(err("bring-up"))?;
    let result = if args.count_mode {
        let ha =
            Hca::bring_up(Deferred::new(ba), &HcaConfig::default()).map_err(err("bring-up"))?;
        let hooks = Hooks {
            hold: &|| ha.backend().hold(),
            // SAFETY: `Link::run` kicks right after each post, while the link's QPs (whose
            // doorbells are held) live.
            kick: &|| unsafe { ha.backend().release() },
        };
        let r = bench(args, &ha, &hb, [&da, &db], &hooks);
        // SAFETY: the last kick followed the last post, and only polls came after it (no
        // doorbell): nothing held belongs to the QPs gone since.
        unsafe { ha.backend().stop() };
        ha.teardown().map_err(err("teardown")).and(r)
    } else {
        let ha = Hca::bring_up(ba, &HcaConfig::default()).map_err(err("bring-up"))?;
        let hooks = Hooks {
            hold: &|| (),
            kick: &|| (),
        };
        let r = bench(args, &ha, &hb, [&da, &db], &hooks);
        ha.teardown().map_err(err("teardown")).and(r)
    };
    hb.teardown().map_err(err("teardown"))?;
    result
}

/// What the count mode does around the run: hold doorbells from its start, release them after
/// each posting phase.
struct Hooks<'a> {
    hold: &'a dyn Fn(),
    kick: &'a dyn Fn(),
}

fn bench<A: Backend>(
    args: &Args,
    ha: &Hca<A>,
    hb: &Hca<SimBackend>,
    devs: [&Device; 2],
    hooks: &Hooks<'_>,
) -> Result<(), String> {
    ha.set_roce_address(0, &RoceAddress::v2(IpAddr::V4(ENDS[0].1), ENDS[0].0))
        .map_err(err("SET_ROCE_ADDRESS"))?;
    hb.set_roce_address(0, &RoceAddress::v2(IpAddr::V4(ENDS[1].1), ENDS[1].0))
        .map_err(err("SET_ROCE_ADDRESS"))?;
    let work = Workload {
        op: args.op.into(),
        size: args.size,
        inline: args.inline,
        depth: args.depth,
        signal_every: args.signal_every,
    };
    let mut link = Link::new(ha, hb, work)?;
    link.path = if args.per_request {
        Path::PerRequest
    } else if args.vec {
        Path::Vec
    } else {
        Path::Batch
    };
    let before = devs.map(Device::roce_stats);
    (hooks.hold)();
    let start = Instant::now();
    let mut rounds = Vec::new();
    if args.latency {
        rounds.reserve(args.count as usize);
        for _ in 0..args.count {
            let t = Instant::now();
            link.run(1, hooks.kick)?;
            rounds.push(t.elapsed());
        }
    } else {
        link.run(u64::from(args.count), hooks.kick)?;
    }
    let elapsed = start.elapsed();
    let after = devs.map(Device::roce_stats);
    let sent = [
        after[0].tx_packets - before[0].tx_packets,
        after[1].tx_packets - before[1].tx_packets,
    ];
    let secs = elapsed.as_secs_f64();
    let n = f64::from(args.count);
    println!(
        "{:?} {} B x {} depth {} (signalled every {}{}{}) over {}{}: {:.3} s, {:.0} ops/s, \
         {:.1} MB/s, {:.2} us per op",
        work.op,
        args.size,
        args.count,
        args.depth,
        args.signal_every,
        if args.inline { ", inline" } else { "" },
        match (args.per_request, args.vec) {
            (true, _) => ", one post_send each",
            (_, true) => ", post_batch",
            _ => "",
        },
        if args.fabric { "the fabric" } else { "RoCE v2" },
        if args.threaded {
            ", threaded model"
        } else {
            ""
        },
        secs,
        n / secs,
        n * args.size as f64 / secs / 1e6,
        secs * 1e6 / n
    );
    println!(
        "packets: {} requester -> responder, {} back",
        sent[0], sent[1]
    );
    if args.latency {
        print_latency(&mut rounds);
    }
    let c = link.calls;
    println!(
        "calls: posts {} batches {} poll {} cqes {} complete {} post_recv {} recv_poll {} \
         recv_cqes {} recv_complete {}",
        c.posts,
        c.batches,
        c.polls,
        c.cqes,
        c.completes,
        c.recv_posts,
        c.recv_polls,
        c.recv_cqes,
        c.recv_completes
    );
    Ok(())
}

/// Prints the distribution of the round trips (nearest-rank percentiles).
fn print_latency(rounds: &mut [Duration]) {
    rounds.sort_unstable();
    let at = |p: f64| {
        let rank = ((p * rounds.len() as f64).ceil() as usize).clamp(1, rounds.len());
        rounds[rank - 1].as_secs_f64() * 1e6
    };
    let mean = rounds.iter().map(Duration::as_secs_f64).sum::<f64>() / rounds.len() as f64 * 1e6;
    println!(
        "latency: {} round trips (post to completion reaped), median {:.2} us, p99 {:.2} us, \
         mean {:.2} us, max {:.2} us",
        rounds.len(),
        at(0.5),
        at(0.99),
        mean,
        at(1.0)
    );
}
