//! The RC part: SENDs between two model devices on a wire over RoCE v2, with both ports
//! losing one frame in [`LOSS`] each way (seeded), page requests and returns, failing
//! commands, and CQ overruns. RC promises every message once and in order, so the receiver
//! must see sequence numbers 0, 1, 2, … with no gap, duplicate or reordering, every send must
//! complete without error, and the ports must actually have lost frames (the transport
//! recovered them).
//!
//! A CQ overrun is not something RC recovers from by itself: the CQ goes to error, its
//! completions stop, and the device raises a CQ_ERROR event. The soak recovers as an
//! application over RDMA does: on the event it destroys both ends' QPs and CQs, creates and
//! connects new ones, and resumes sending from the first message the receiver has not
//! delivered (the receiver's count stands for the sequence numbers a real application
//! exchanges when it reconnects). Messages sent before the overrun whose delivery was not
//! seen are sent again and counted as re-sent; the receiver must still see every sequence
//! number exactly once and in order.

use super::rc_link::{connect, create, err, ALL, ENDS};
use super::{command_fault, rss, Args, Rng, IDLE_LIMIT, RSS_SLACK};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend as _, Events as _};
use mlx5_driver::cq::Cq;
use mlx5_driver::eq::Event;
use mlx5_driver::mr::Region;
use mlx5_driver::qp::{Qp, Rts, SendOp, SendRequest};
use mlx5_driver::roce::RoceAddress;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::rt::{Bytes as _, BytesMut as _};
use mlx5_sim::{Config, Device, RcTransport, Wire};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// One frame in this many is lost, each way, on each port.
const LOSS: u32 = 500;
/// Messages in flight.
const DEPTH: usize = 16;
/// Bytes per message: the sequence number and some payload.
const SIZE: usize = 256;
/// One loop turn in this many (while sending) overruns one of the two CQs.
const OVERRUN: u64 = 4_000;

type Sim = SimBackend;

/// Both ends' CQs and connected QPs: A sends, B receives.
struct Pair<'h> {
    cqa: Cq<'h, Sim>,
    cqb: Cq<'h, Sim>,
    qa: Qp<'h, Sim, Rts>,
    qb: Qp<'h, Sim, Rts>,
}

impl<'h> Pair<'h> {
    /// New CQs and QPs at both ends, connected to each other, with B's receives posted.
    fn connect([ha, hb]: [&'h Hca<Sim>; 2]) -> Result<Self, String> {
        let (cqa, cqb) = (
            Cq::create(ha, 12).map_err(err("CQ"))?,
            Cq::create(hb, 12).map_err(err("CQ"))?,
        );
        let (qa, qb) = (create(ha, &cqa, DEPTH)?, create(hb, &cqb, DEPTH)?);
        let (na, nb) = (qa.qpn(), qb.qpn());
        let qa = connect(ha, qa, nb, 1)?;
        let mut qb = connect(hb, qb, na, 0)?;
        for _ in 0..2 * DEPTH {
            let r = Region::register(hb, SIZE, ALL).map_err(err("receive region"))?;
            qb.post_recv(1, r)
                .map_err(|(e, _)| format!("post_recv: {e}"))?;
        }
        Ok(Pair { cqa, cqb, qa, qb })
    }

    /// Destroys the QPs (and the regions still posted on them), then the CQs.
    fn destroy(self) -> Result<(), String> {
        self.qa.destroy().map_err(err("DESTROY_QP"))?;
        self.qb.destroy().map_err(err("DESTROY_QP"))?;
        self.cqa.destroy().map_err(err("DESTROY_CQ"))?;
        self.cqb.destroy().map_err(err("DESTROY_CQ"))
    }

    /// Whether `cqn` is one of this pair's CQs.
    fn owns(&self, cqn: u32) -> bool {
        cqn == self.cqa.cqn() || cqn == self.cqb.cqn()
    }
}

/// Runs the RC part for `args.packets / 32` messages or `seconds`.
pub fn run(args: &Args, seconds: Option<f64>) -> Result<(), String> {
    let config = Config {
        rc_transport: RcTransport::Roce,
        ..Config::default()
    };
    let (ba, da) = SimBackend::new(config.clone());
    let (bb, db) = SimBackend::new(config);
    let _wire = Wire::connect(&da, &db);
    for (i, d) in [&da, &db].into_iter().enumerate() {
        d.faults()
            .port_loss_seeded(LOSS, args.seed.wrapping_add(i as u64 + 1));
    }
    let ha = Hca::bring_up(ba, &HcaConfig::default()).map_err(err("bring-up"))?;
    let hb = Hca::bring_up(bb, &HcaConfig::default()).map_err(err("bring-up"))?;
    for (hca, (mac, ip)) in [(&ha, ENDS[0]), (&hb, ENDS[1])] {
        hca.set_roce_address(0, &RoceAddress::v2(IpAddr::V4(ip), mac))
            .map_err(err("SET_ROCE_ADDRESS"))?;
    }
    let result = messages(args, seconds, [&ha, &hb], [&da, &db]);
    ha.teardown().map_err(err("teardown"))?;
    hb.teardown().map_err(err("teardown"))?;
    for d in [&da, &db] {
        if d.pages_held() != 0 {
            return Err(format!("{} pages held after teardown", d.pages_held()));
        }
    }
    result
}

fn messages(
    args: &Args,
    seconds: Option<f64>,
    [ha, hb]: [&Hca<SimBackend>; 2],
    [da, db]: [&Device; 2],
) -> Result<(), String> {
    let count = (args.packets / 32).max(1);
    let mut pair = Pair::connect([ha, hb])?;
    let mut free: Vec<Region<'_, SimBackend>> = (0..DEPTH)
        .map(|_| Region::register(ha, SIZE, ALL))
        .collect::<Result<_, _>>()
        .map_err(err("send regions"))?;
    let mut rng = Rng(args.seed.max(1) ^ 0x5243);
    let start = Instant::now();
    let deadline = seconds.map(|s| start + Duration::from_secs_f64(s));
    let (mut posted, mut completed, mut received) = (0u64, 0u64, 0u64);
    let (mut page_requests, mut command_faults) = (0u64, 0u64);
    let (mut overruns, mut cq_errors, mut reconnects, mut resent) = (0u64, 0u64, 0u64, 0u64);
    let pages0 = [da.pages_held(), db.pages_held()];
    let mut out = Vec::new();
    let mut progress = Instant::now();
    let mut warm = None;
    let sending = |posted: u64| match deadline {
        Some(d) => Instant::now() < d,
        None => posted < count,
    };
    while sending(posted) || received < posted || completed < posted {
        // Faults, on either device.
        let side = (rng.draw() % 2) as usize;
        let (hca, dev) = [(ha, da), (hb, db)][side];
        if rng.one_in(2_000) {
            let n = 1 + (rng.draw() % 8) as i32;
            let extra = dev.pages_held().saturating_sub(pages0[side]) as i32;
            dev.request_pages(if rng.one_in(2) || extra < n { n } else { -n });
            page_requests += 1;
        }
        if rng.one_in(4_000) {
            command_fault(hca, dev, &mut rng)?;
            command_faults += 1;
        }
        // One overrun at a time: the next only once the last one's CQ error was seen (and the
        // link reconnected), so that no overrun waits on a CQ a reconnect destroyed.
        if sending(posted) && overruns == cq_errors && rng.one_in(OVERRUN) {
            let cq = if side == 0 { &pair.cqa } else { &pair.cqb };
            dev.faults().overrun_cq(cq.cqn());
            overruns += 1;
        }
        if rng.one_in(256) {
            let mut broken = false;
            for h in [ha, hb] {
                for e in h.poll_events().map_err(err("events"))? {
                    if let Event::CqError { cqn, syndrome } = e {
                        if !pair.owns(cqn) {
                            return Err(format!(
                                "CQ error (syndrome {syndrome}) for CQ {cqn:#x}, not the link's"
                            ));
                        }
                        broken = true;
                        cq_errors += 1;
                    }
                }
            }
            if broken {
                // Reconnect, and go on from the first message B has not delivered.
                pair.destroy()?;
                pair = Pair::connect([ha, hb])?;
                resent += posted - received;
                (posted, completed) = (received, received);
                while free.len() < DEPTH {
                    free.push(Region::register(ha, SIZE, ALL).map_err(err("send region"))?);
                }
                reconnects += 1;
                progress = Instant::now();
                continue;
            }
        }
        // Post what the depth allows.
        while sending(posted) {
            let Some(region) = free.pop() else { break };
            let mut b = region.bytes();
            b.write_be64(0, posted);
            b.write_be64(SIZE - 8, !posted);
            let req = SendRequest {
                id: posted,
                op: SendOp::Send,
                region: Some(region),
                len: None,
                signaled: true,
                inline: None,
            };
            pair.qa
                .post_send(req)
                .map_err(|(e, _)| format!("post_send: {e}"))?;
            posted += 1;
        }
        let mut moved = false;
        out.clear();
        pair.cqa.poll(16, &mut out);
        for c in out.drain(..) {
            c.status
                .map_err(|e| format!("send {completed} completed with {e}"))?;
            for d in pair.qa.complete(c).map_err(err("complete"))? {
                free.extend(d.region);
                completed += 1;
                moved = true;
            }
        }
        pair.cqb.poll(16, &mut out);
        for c in out.drain(..) {
            c.status
                .map_err(|e| format!("receive {received} completed with {e}"))?;
            for d in pair.qb.complete(c).map_err(err("complete"))? {
                let r = d.region.ok_or("a receive came back without its buffer")?;
                let b = r.bytes();
                let (seq, check) = (b.read_be64(0), b.read_be64(SIZE - 8));
                if seq != received || check != !seq {
                    return Err(format!(
                        "message {received} expected, got {seq} (check 0x{check:x}): RC lost, \
                         repeated or reordered a message"
                    ));
                }
                received += 1;
                moved = true;
                pair.qb
                    .post_recv(1, r)
                    .map_err(|(e, _)| format!("post_recv: {e}"))?;
            }
        }
        if moved {
            progress = Instant::now();
        } else {
            if progress.elapsed() > IDLE_LIMIT {
                return Err(format!(
                    "RC: {posted} posted, {completed} completed, {received} received, nothing for {IDLE_LIMIT:?}"
                ));
            }
            // The transports' retransmit timers run on the model's tick.
            ha.backend().events().wait(Instant::now());
        }
        if warm.is_none() && completed >= count.min(100_000) / 10 {
            warm = Some(rss());
        }
    }
    let (lost_a, lost_b) = (da.faults().frames_lost(), db.faults().frames_lost());
    let lost = lost_a.0 + lost_a.1 + lost_b.0 + lost_b.1;
    let (warm, end) = (warm.unwrap_or(0), rss());
    println!(
        "soak rc: {received} SENDs of {SIZE} B delivered once and in order, {lost} frames lost on the ports \
         (1 in {LOSS} each way) and recovered, {page_requests} page requests, {command_faults} command faults, \
         {overruns} CQ overruns ({cq_errors} CQ errors, {reconnects} reconnects, {resent} messages sent again); \
         {:.1} s; RSS {} KiB after warm-up, {} KiB at the end",
        start.elapsed().as_secs_f64(),
        warm / 1024,
        end / 1024
    );
    if received > 10 * u64::from(LOSS) && lost == 0 {
        return Err("the ports lost no frame: the loss fault did not act".into());
    }
    if end > warm + RSS_SLACK {
        return Err(format!(
            "resident memory grew from {} KiB to {} KiB",
            warm / 1024,
            end / 1024
        ));
    }
    // The last overrun may not have come (no completion went to its CQ after it); every
    // other one must have raised exactly one CQ error.
    let pending = u64::from(da.faults().cq_overruns_pending() + db.faults().cq_overruns_pending());
    if cq_errors + pending != overruns {
        return Err(format!(
            "{overruns} CQ overruns asked for, {cq_errors} CQ errors seen, {pending} still pending"
        ));
    }
    pair.destroy()
}
