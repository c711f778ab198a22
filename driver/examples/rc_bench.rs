//! RC throughput, latency and cost on the model: two devices joined by a wire, one RC QP each,
//! connected over RoCE v2 (frames, ICRC, ACKs) or the in-memory fabric, and `N` RDMA WRITEs,
//! READs or SENDs of `SIZE` bytes from the first to the second with `DEPTH` of them
//! outstanding. It prints operations and packets per second, the mean time per operation
//! (at depth 1 that is the round-trip latency), and the RoCE packets each way, which
//! `scripts/bench-roce` divides callgrind's instruction counts by.
//!
//! ```text
//! rc_bench write 1024 100000 16          # 1 KiB writes, 16 outstanding, RoCE
//! rc_bench read 65536 2000 1 --fabric    # 64 KiB reads one at a time, in-memory fabric
//! ```

#[path = "common/rc_link.rs"]
mod rc_link;

use clap::{Parser, ValueEnum};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend as _, Events as _};
use mlx5_driver::cq::Cq;
use mlx5_driver::mr::Region;
use mlx5_driver::qp::{RemoteAddr, SendOp, SendRequest};
use mlx5_driver::roce::RoceAddress;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::{Config, Device, RcTransport, Wire};
use rc_link::{connect, create, err, ALL, ENDS};
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Op {
    Write,
    Read,
    Send,
}

/// RC operations between two model devices.
#[derive(Parser, Debug)]
struct Args {
    /// What each work request does.
    #[arg(value_enum)]
    op: Op,
    /// Bytes per operation (split into packets at the path MTU, 1024).
    size: usize,
    /// Operations.
    count: u32,
    /// Operations outstanding at once (1: each waits for the previous one's completion).
    #[arg(default_value_t = 1)]
    depth: usize,
    /// The in-memory RC fabric instead of RoCE v2 frames.
    #[arg(long)]
    fabric: bool,
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
    if args.size == 0 || args.depth == 0 || args.count == 0 {
        return Err("size, count and depth must be at least 1".into());
    }
    let config = Config {
        rc_transport: if args.fabric {
            RcTransport::Fabric
        } else {
            RcTransport::Roce
        },
        ..Config::default()
    };
    let (ba, da) = SimBackend::new(config.clone());
    let (bb, db) = SimBackend::new(config);
    let _wire = Wire::connect(&da, &db);
    let ha = Hca::bring_up(ba, &HcaConfig::default()).map_err(err("bring-up"))?;
    let hb = Hca::bring_up(bb, &HcaConfig::default()).map_err(err("bring-up"))?;
    for (hca, (mac, ip)) in [(&ha, ENDS[0]), (&hb, ENDS[1])] {
        hca.set_roce_address(0, &RoceAddress::v2(IpAddr::V4(ip), mac))
            .map_err(err("SET_ROCE_ADDRESS"))?;
    }
    let result = bench(args, &ha, &hb, [&da, &db]);
    ha.teardown().map_err(err("teardown"))?;
    hb.teardown().map_err(err("teardown"))?;
    result
}

fn bench(
    args: &Args,
    ha: &Hca<SimBackend>,
    hb: &Hca<SimBackend>,
    devs: [&Device; 2],
) -> Result<(), String> {
    let (mut cqa, mut cqb) = (
        Cq::create(ha, 12).map_err(err("CQ"))?,
        Cq::create(hb, 12).map_err(err("CQ"))?,
    );
    let (qa, qb) = (create(ha, &cqa, args.depth)?, create(hb, &cqb, args.depth)?);
    let (na, nb) = (qa.qpn(), qb.qpn());
    let mut qa = connect(ha, qa, nb, 1)?;
    let mut qb = connect(hb, qb, na, 0)?;
    let target = Region::register(hb, args.size, ALL).map_err(err("target region"))?;
    let remote = RemoteAddr {
        addr: target.addr(),
        rkey: target.rkey(),
    };
    let mut free: Vec<Region<'_, SimBackend>> = (0..args.depth)
        .map(|_| Region::register(ha, args.size, ALL))
        .collect::<Result<_, _>>()
        .map_err(err("source regions"))?;
    if args.op == Op::Send {
        for _ in 0..2 * args.depth {
            let r = Region::register(hb, args.size, ALL).map_err(err("receive region"))?;
            qb.post_recv(1, r)
                .map_err(|(e, _)| format!("post_recv: {e}"))?;
        }
    }
    let before = devs.map(Device::roce_stats);
    let start = Instant::now();
    let (mut posted, mut done) = (0u32, 0u32);
    let mut out = Vec::new();
    let mut last = Instant::now();
    while done < args.count {
        while posted < args.count {
            let Some(region) = free.pop() else { break };
            let op = match args.op {
                Op::Write => SendOp::Write(remote),
                Op::Read => SendOp::Read(remote),
                Op::Send => SendOp::Send,
            };
            let req = SendRequest {
                id: u64::from(posted),
                op,
                region: Some(region),
                len: None,
                signaled: true,
                inline: None,
            };
            qa.post_send(req)
                .map_err(|(e, _)| format!("post_send: {e}"))?;
            posted += 1;
        }
        out.clear();
        if cqa.poll(16, &mut out) == 0 {
            if last.elapsed() > Duration::from_secs(10) {
                return Err(format!("stalled: {done} of {} done", args.count));
            }
            // The transports' timers run on the model's tick.
            ha.backend().events().wait(Instant::now());
            continue;
        }
        last = Instant::now();
        for c in out.drain(..) {
            if let Err(e) = c.status {
                return Err(format!("completion error {e}"));
            }
            for d in qa.complete(c).map_err(err("complete"))? {
                free.extend(d.region);
                done += 1;
            }
        }
        if args.op == Op::Send {
            let mut rx = Vec::new();
            cqb.poll(64, &mut rx);
            for c in rx {
                for d in qb.complete(c).map_err(err("complete"))? {
                    // The buffer goes straight back to the receive queue.
                    let r = d.region.ok_or("a receive came back without its buffer")?;
                    qb.post_recv(1, r)
                        .map_err(|(e, _)| format!("post_recv: {e}"))?;
                }
            }
        }
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
        "{:?} {} B x {} depth {} over {}: {:.3} s, {:.0} ops/s, {:.1} MB/s, {:.2} us per op",
        args.op,
        args.size,
        args.count,
        args.depth,
        if args.fabric { "the fabric" } else { "RoCE v2" },
        secs,
        n / secs,
        n * args.size as f64 / secs / 1e6,
        secs * 1e6 / n
    );
    println!(
        "packets: {} requester -> responder, {} back",
        sent[0], sent[1]
    );
    drop(cqb);
    Ok(())
}
