//! The Ethernet part: loopback traffic through one model device.
//!
//! Every frame carries a sequence number. The model loops each frame the SQ sends back to
//! the RQ, so frames come back in order: a number at or below the last one seen is a
//! duplicate or a reordering (a failure), a gap is frames lost. At the end the frames lost
//! must be exactly what the model counted as discarded (frames sent while the link was down,
//! PPCNT's `if_out_discards`) or dropped on receipt (`rx_dropped`): nothing vanishes.
//!
//! Faults: the link goes down for a while and comes back (with the PORT_CHANGE events the
//! driver reads), the device asks for firmware pages or gives some back (the driver serves
//! both from the event queue), a command fails (see [`super::command_fault`]), and the send or
//! the receive CQ overruns (the model finds it full at its next completion): the driver reads the CQ_ERROR
//! event and recreates the queues ([`EthQueues::recover`]); the frames that arrived with no
//! completion are counted by the model as dropped.

use super::{command_fault, rss, Args, Rng, IDLE_LIMIT, RSS_SLACK};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::eq::Event;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::rt::Bytes as _;
use std::time::{Duration, Instant};

const CONFIG: EthConfig = EthConfig {
    log_sq_size: 9,
    log_rq_size: 9,
    signal_every: 32,
    inline_l2: false,
    macs: Vec::new(),
};
/// Where the sequence number sits in each frame: after the Ethernet header.
const SEQ_AT: usize = 14;

#[derive(Default, Debug)]
struct Tally {
    sent: u64,
    received: u64,
    gaps: u64,
    flaps: u64,
    page_requests: u64,
    command_faults: u64,
    port_events: u64,
    cq_overruns: u64,
    recoveries: u64,
}

/// Runs the Ethernet part for `args.packets` frames or `seconds`.
pub fn run(args: &Args, seconds: Option<f64>) -> Result<(), String> {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).map_err(|e| format!("bring-up: {e}"))?;
    traffic(args, seconds, &hca, &dev)?;
    let q = hca.teardown().map_err(|e| format!("teardown: {e}"))?;
    if dev.pages_held() != 0 {
        return Err(format!(
            "{} pages held after teardown ({q:?})",
            dev.pages_held()
        ));
    }
    Ok(())
}

/// The traffic and its faults, on queues that are gone when it returns.
fn traffic(
    args: &Args,
    seconds: Option<f64>,
    hca: &Hca<SimBackend>,
    dev: &mlx5_sim::Device,
) -> Result<(), String> {
    let pool = Pool::new(hca, 4096, 2048).map_err(|e| format!("pool: {e}"))?;
    let mut eth = EthQueues::create(&pool, &CONFIG).map_err(|e| format!("queues: {e}"))?;
    dev.loopback(true);
    let mut rng = Rng(args.seed.max(1));
    let mut t = Tally::default();
    let (mut pkts, mut out) = (Vec::new(), Vec::new());
    let mut frame = [0u8; 64];
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    let start = Instant::now();
    let deadline = seconds.map(|s| start + Duration::from_secs_f64(s));
    let mut last_seen: Option<u64> = None;
    let mut down_for = 0u32;
    let mut progress = Instant::now();
    let mut warm: Option<u64> = None;
    let (discarded0, dropped0) = (dev.tx_discarded(), dev.rx_dropped());
    let pages0 = dev.pages_held();
    let done = |t: &Tally| match deadline {
        Some(d) => Instant::now() >= d,
        None => t.sent >= args.packets,
    };
    let accounted =
        |dev: &mlx5_sim::Device| (dev.tx_discarded() - discarded0) + (dev.rx_dropped() - dropped0);
    loop {
        let sending = !done(&t);
        if !sending && t.received + accounted(dev) >= t.sent {
            break;
        }
        // Faults.
        if down_for > 0 {
            down_for -= 1;
            if down_for == 0 {
                dev.raise_port_change(1, true);
            }
        } else if sending && rng.one_in(2_000) {
            dev.raise_port_change(1, false);
            down_for = 1 + (rng.draw() % 200) as u32;
            t.flaps += 1;
        }
        if sending && rng.one_in(5_000) {
            // The device asks for pages or gives some back (never more than it was given
            // during the run), so what it holds stays bounded and memory can stay flat.
            let n = 1 + (rng.draw() % 8) as i32;
            let extra = dev.pages_held().saturating_sub(pages0) as i32;
            dev.request_pages(if rng.one_in(2) || extra < n { n } else { -n });
            t.page_requests += 1;
        }
        if sending && rng.one_in(10_000) {
            command_fault(hca, dev, &mut rng)?;
            t.command_faults += 1;
        }
        if sending && rng.one_in(20_000) {
            let (tx, rx) = eth.cqns();
            dev.faults().overrun_cq(if rng.one_in(2) { tx } else { rx });
            t.cq_overruns += 1;
        }
        if rng.one_in(64) {
            let mut broken = false;
            for e in hca.poll_events().map_err(|e| format!("events: {e}"))? {
                match e {
                    Event::PortChange { .. } => t.port_events += 1,
                    Event::CqError { cqn, syndrome } => {
                        let (tx, rx) = eth.cqns();
                        if cqn != tx && cqn != rx {
                            return Err(format!(
                                "CQ error (syndrome {syndrome}) for CQ {cqn:#x}, not the queues'"
                            ));
                        }
                        broken = true;
                    }
                    _ => {}
                }
            }
            if broken {
                eth = eth
                    .recover()
                    .map_err(|e| format!("recovering the queues: {e}"))?;
                t.recoveries += 1;
            }
        }
        // Traffic.
        if sending {
            pool.alloc_batch(&mut pkts, args.batch);
            for p in pkts.iter_mut() {
                frame[SEQ_AT..SEQ_AT + 8].copy_from_slice(&(t.sent).to_be_bytes());
                p.write(&frame).map_err(|e| format!("frame: {e}"))?;
                t.sent += 1;
            }
            let queued = pkts.len();
            let n = eth.tx_batch(&mut pkts).map_err(|e| format!("tx: {e}"))?;
            // The SQ took `n`; the rest are not sent after all.
            t.sent -= (queued - n) as u64;
            pkts.clear();
        }
        let got = eth
            .rx_batch(&mut out, args.batch)
            .map_err(|e| format!("rx: {e}"))?;
        for p in out.drain(..) {
            let mut seq = [0u8; 8];
            p.data().read_bytes(SEQ_AT, &mut seq);
            let seq = u64::from_be_bytes(seq);
            let expected = last_seen.map_or(0, |l| l + 1);
            if seq < expected || seq >= t.sent {
                return Err(format!(
                    "frame {seq} after {last_seen:?} ({} sent): a duplicate, a reordering or garbage",
                    t.sent
                ));
            }
            t.gaps += seq - expected;
            last_seen = Some(seq);
            t.received += 1;
        }
        if got > 0 {
            progress = Instant::now();
        } else if t.sent > t.received + accounted(dev) && progress.elapsed() > IDLE_LIMIT {
            // Frames neither back nor counted by the model, and nothing moving.
            return Err(format!(
                "{} of {} frames came back and none for {IDLE_LIMIT:?}: {} missing, {} counted by the model",
                t.received,
                t.sent,
                t.sent - t.received,
                accounted(dev)
            ));
        }
        if warm.is_none() && t.sent >= args.packets.min(1_000_000) / 10 {
            warm = Some(rss());
        }
    }
    // Frames lost after the last one that came back are not gaps between two seen ones.
    t.gaps += t.sent - last_seen.map_or(0, |l| l + 1);
    let discarded = dev.tx_discarded() - discarded0;
    let dropped = dev.rx_dropped() - dropped0;
    let secs = start.elapsed().as_secs_f64();
    let (warm, end) = (warm.unwrap_or(0), rss());
    println!(
        "soak eth: {} frames sent, {} received, {} lost = {discarded} discarded (link down) + {dropped} dropped; \
         {} link flaps ({} port events), {} page requests, {} command faults, \
         {} CQ overruns ({} recoveries); {secs:.1} s; \
         RSS {} KiB after warm-up, {} KiB at the end, peak {} KiB",
        t.sent,
        t.received,
        t.gaps,
        t.flaps,
        t.port_events,
        t.page_requests,
        t.command_faults,
        t.cq_overruns,
        t.recoveries,
        warm / 1024,
        end / 1024,
        super::peak_rss_kib()
    );
    if t.gaps != discarded + dropped {
        return Err(format!(
            "{} frames lost but the model counted {discarded} discarded and {dropped} dropped",
            t.gaps
        ));
    }
    if end > warm + RSS_SLACK {
        return Err(format!(
            "resident memory grew from {} KiB to {} KiB",
            warm / 1024,
            end / 1024
        ));
    }
    eth.destroy().map_err(|e| format!("queues: {e}"))
}
