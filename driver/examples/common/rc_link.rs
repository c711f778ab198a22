//! Two model devices' RC QPs connected over RoCE v2 (or the in-memory fabric), as the examples
//! that measure or soak RC traffic set them up: the ends' addresses, a QP sized for a depth,
//! and the RST → INIT → RTR → RTS path toward the other end; and [`Link`], the request loop
//! that `rc_bench` and the criterion benchmark (`benches/rc.rs`) both run, so that the figures
//! of the two measure the same driver calls.

// Each example that includes this file uses a part of it (the soak only the set-up).
#![allow(dead_code)]

use mlx5_driver::backend::{Backend, Events as _};
use mlx5_driver::cq::{Completion, Cq};
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::{
    Qp, QpConfig, RemoteAddr, Rst, Rst2init, Rtr2rts, Rtr2rtsOptional, Rts, SendOp, SendRequest,
    Transitions as _, MAX_INLINE, MAX_INLINE_RDMA,
};
use mlx5_driver::roce::{RoceAddress, RocePath};
use mlx5_driver::Hca;
use mlx5_prm::{QpMtu, QpPmState};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

/// A driver error as a message naming what failed.
pub fn err(what: &'static str) -> impl Fn(mlx5_driver::Error) -> String {
    move |e| format!("{what}: {e}")
}

/// The two ends' MAC and IPv4 addresses (their RoCE address at GID index 0).
pub const ENDS: [([u8; 6], Ipv4Addr); 2] = [
    ([2, 0, 0, 0x52, 0, 1], Ipv4Addr::new(10, 82, 0, 1)),
    ([2, 0, 0, 0x52, 0, 2], Ipv4Addr::new(10, 82, 0, 2)),
];

/// Every access right.
pub const ALL: Access = Access {
    local_write: true,
    remote_read: true,
    remote_write: true,
    remote_atomic: true,
};

/// A QP of `hca` with room for `depth` outstanding requests, in RST.
pub fn create<'h, B: Backend>(
    hca: &'h Hca<B>,
    cq: &Cq<'h, B>,
    depth: usize,
) -> Result<Qp<'h, B, Rst>, String> {
    let log = depth.max(2).next_power_of_two().trailing_zeros() as u8;
    let config = QpConfig {
        log_sq_size: log + 1,
        log_rq_size: log + 1,
        log_rq_stride: 1,
    };
    Qp::create(hca, cq, cq, &config).map_err(err("creating a QP"))
}

/// `qp` to RTS toward QP `remote` of end `to` (its RoCE address, GID index 0 of both).
pub fn connect<'h, B: Backend>(
    hca: &'h Hca<B>,
    qp: Qp<'h, B, Rst>,
    remote: u32,
    to: usize,
) -> Result<Qp<'h, B, Rts>, String> {
    let init = Rst2init {
        pkey_index: 0,
        vhca_port_num: 1,
        rre: true,
        rwe: true,
        rae: true,
        pm_state: QpPmState::Migrated,
        counter_set_id: 0,
    };
    let qpn = qp.qpn();
    let qp = qp.rst2init(init).map_err(|(e, _)| format!("INIT: {e}"))?;
    let (mac, ip) = ENDS[to];
    let gid = RoceAddress::v2(IpAddr::V4(ip), mac).gid();
    let log_msg_max = hca.info().caps().log_max_msg();
    let rtr = RocePath::new(gid, mac, 0).init2rtr(qpn, remote, 0, QpMtu::Mtu1k, log_msg_max);
    let qp = qp.init2rtr(rtr).map_err(|(e, _)| format!("RTR: {e}"))?;
    let rts = Rtr2rts {
        next_send_psn: 0,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 4,
        ack_timeout: 14,
        optional: Rtr2rtsOptional::default(),
    };
    qp.rtr2rts(rts).map_err(|(e, _)| format!("RTS: {e}"))
}

/// What each request of a [`Workload`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Send,
    Write,
    Read,
    FetchAdd,
    CompareSwap,
}

impl Op {
    /// Whether the operation is one of the 8-byte atomics.
    pub fn atomic(self) -> bool {
        matches!(self, Op::FetchAdd | Op::CompareSwap)
    }
}

/// A stream of RC requests from the first end to the second.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub op: Op,
    /// Bytes per request (8 for the atomics).
    pub size: usize,
    /// The bytes travel in the WQE instead of a region (SEND up to `MAX_INLINE`, WRITE up to
    /// `MAX_INLINE_RDMA`).
    pub inline: bool,
    /// Requests outstanding at most.
    pub depth: usize,
    /// One request in this many asks for a completion; so does one that fills the window
    /// (`depth`) or ends the run, or nothing would ever come back to free the window.
    pub signal_every: usize,
}

/// The driver calls a run made, to divide instruction counts by.
#[derive(Clone, Copy, Debug, Default)]
pub struct Calls {
    /// Requests posted (by `Qp::post_batch` a batch at a time, or by `post_send` one at a
    /// time), and the `post_batch` calls.
    pub posts: u64,
    pub batches: u64,
    /// `Cq::poll` on the requester's CQ, the completions it returned, and `Qp::complete_with`
    /// (or `Qp::complete`).
    pub polls: u64,
    pub cqes: u64,
    pub completes: u64,
    /// `post_recv`, `Cq::poll` on the responder's CQ, the completions it returned, and
    /// `Qp::complete` on the responder.
    pub recv_posts: u64,
    pub recv_polls: u64,
    pub recv_cqes: u64,
    pub recv_completes: u64,
}

/// How long a run may go without a completion before it is called stalled.
const STALL: Duration = Duration::from_secs(10);

/// Two HCAs' RC QPs connected to each other, with the regions a [`Workload`] needs: the
/// requester `qa` (backend `A`) and the responder `qb` (backend `B`; the benchmarks' count mode
/// gives the requester a backend that holds doorbells, which the responder does not need).
pub struct Link<'h, A: Backend, B: Backend> {
    pub qa: Qp<'h, A, Rts>,
    pub qb: Qp<'h, B, Rts>,
    pub cqa: Cq<'h, A>,
    pub cqb: Cq<'h, B>,
    remote: RemoteAddr,
    /// The responder's memory that WRITEs, READs and atomics name.
    _target: Region<'h, B>,
    /// Local regions not posted (none for inline requests).
    free: Vec<Region<'h, A>>,
    outstanding: usize,
    work: Workload,
    /// The inline payload, copied into each request (the driver takes a `Vec` and drops it).
    payload: Vec<u8>,
    out: Vec<Completion>,
    rx: Vec<Completion>,
    /// The requests of the next batch, built before the driver is called.
    batch: Vec<SendRequest<'h, A>>,
    seq: u64,
    pub calls: Calls,
    /// How requests are posted and reaped.
    pub path: Path,
    /// Whether each request of the next batch asks for a completion (the batch path's plan,
    /// made before the driver is called, as the other paths build their requests).
    signals: Vec<bool>,
}

/// How a [`Link`] posts its requests and takes finished ones back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Path {
    /// `Qp::batch`: each request written straight into the send queue by a typed call
    /// (`SendBatch::write`, ...), the region taken off the free list there; one doorbell per
    /// batch; reaped by `Qp::complete_with`. (Inline requests, which the typed calls do not
    /// make, go as [`Path::Vec`].)
    #[default]
    Batch,
    /// `Qp::post_batch` on a `Vec` of `SendRequest`s built beforehand; one doorbell per
    /// batch; reaped by `Qp::complete_with`.
    Vec,
    /// A `post_send` (and a doorbell) per request, the finished ones taken back from the
    /// `Vec` that `Qp::complete` returns, as callers did before the batch post and the
    /// allocation-free reap.
    PerRequest,
}

impl<'h, A: Backend, B: Backend> Link<'h, A, B> {
    /// QPs on `ha` and `hb` in RTS toward each other (GID index 0 of both must hold [`ENDS`]
    /// for RoCE), regions registered and, for SENDs, two windows of receives posted.
    pub fn new(ha: &'h Hca<A>, hb: &'h Hca<B>, work: Workload) -> Result<Self, String> {
        let max = match (work.inline, work.op) {
            (true, Op::Send) => MAX_INLINE,
            (true, Op::Write) => MAX_INLINE_RDMA,
            (true, _) => return Err("only SEND and WRITE carry data inline".into()),
            (false, op) if op.atomic() => 8,
            (false, _) => usize::MAX,
        };
        if work.size == 0 || work.size > max || (work.op.atomic() && work.size != 8) {
            return Err(format!(
                "{:?} of {} bytes{}: the driver takes 1 to {max} (atomics exactly 8)",
                work.op,
                work.size,
                if work.inline { " inline" } else { "" }
            ));
        }
        if work.depth == 0 || work.signal_every == 0 {
            return Err("depth and signal interval must be at least 1".into());
        }
        let (cqa, cqb) = (
            Cq::create(ha, 12).map_err(err("CQ"))?,
            Cq::create(hb, 12).map_err(err("CQ"))?,
        );
        let (qa, qb) = (create(ha, &cqa, work.depth)?, create(hb, &cqb, work.depth)?);
        let (na, nb) = (qa.qpn(), qb.qpn());
        let qa = connect(ha, qa, nb, 1)?;
        let mut qb = connect(hb, qb, na, 0)?;
        let target = Region::register(hb, work.size, ALL).map_err(err("target region"))?;
        let remote = RemoteAddr::of(&target);
        let free = if work.inline {
            Vec::new()
        } else {
            (0..work.depth)
                .map(|_| Region::register(ha, work.size, ALL))
                .collect::<Result<_, _>>()
                .map_err(err("source regions"))?
        };
        if work.op == Op::Send {
            for _ in 0..2 * work.depth {
                let r = Region::register(hb, work.size, ALL).map_err(err("receive region"))?;
                qb.post_recv(1, r)
                    .map_err(|(e, _)| format!("post_recv: {e}"))?;
            }
        }
        Ok(Link {
            qa,
            qb,
            cqa,
            cqb,
            remote,
            _target: target,
            free,
            outstanding: 0,
            work,
            payload: (0..work.size).map(|i| i as u8).collect(),
            out: Vec::with_capacity(work.depth),
            rx: Vec::with_capacity(2 * work.depth),
            batch: Vec::with_capacity(work.depth),
            seq: 0,
            calls: Calls::default(),
            path: Path::default(),
            signals: Vec::with_capacity(work.depth),
        })
    }

    /// Runs `count` requests to their completions, at most `depth` outstanding. `kick` runs
    /// after each posting phase, before the polls (the count mode releases the doorbells its
    /// backend held there, so that the model runs outside the driver's functions).
    pub fn run(&mut self, count: u64, kick: &dyn Fn()) -> Result<(), String> {
        let (mut posted, mut done) = (0u64, 0u64);
        let mut last = None::<Instant>;
        while done < count {
            // Everything the window has room for, as one batch (one doorbell).
            while posted < count && self.outstanding + self.planned() < self.work.depth {
                let fills = self.outstanding + self.planned() + 1 == self.work.depth;
                let signaled = fills
                    || posted + 1 == count
                    || (self.seq + 1) % self.work.signal_every as u64 == 0;
                if self.path == Path::Batch && !self.work.inline {
                    self.signals.push(signaled);
                } else {
                    let req = self.request(signaled)?;
                    self.batch.push(req);
                }
                self.seq += 1;
                posted += 1;
            }
            self.post()?;
            kick();
            let n = self.reap()?;
            if n == 0 {
                let since = *last.get_or_insert_with(Instant::now);
                if since.elapsed() > STALL {
                    return Err(format!("stalled: {done} of {count} done"));
                }
                // The transports' timers run on the model's tick.
                self.qa.hca().backend().events().wait(Instant::now());
                continue;
            }
            last = None;
            done += n;
        }
        Ok(())
    }

    /// The next request.
    fn request(&mut self, signaled: bool) -> Result<SendRequest<'h, A>, String> {
        let remote = self.remote;
        let op = match self.work.op {
            Op::Send => SendOp::Send,
            Op::Write => SendOp::Write(remote),
            Op::Read => SendOp::Read(remote),
            Op::FetchAdd => SendOp::FetchAdd { remote, add: 1 },
            Op::CompareSwap => SendOp::CompareSwap {
                remote,
                compare: self.seq,
                swap: self.seq + 1,
            },
        };
        let (region, inline) = if self.work.inline {
            (None, Some(self.payload.clone()))
        } else {
            let r = self.free.pop().ok_or("no free region")?;
            (Some(r), None)
        };
        Ok(SendRequest {
            id: self.seq,
            op,
            region,
            len: None,
            signaled,
            inline,
        })
    }

    /// Requests planned for the next batch.
    fn planned(&self) -> usize {
        self.batch.len() + self.signals.len()
    }

    /// Posts the batch planned, as [`Link::path`] says.
    fn post(&mut self) -> Result<(), String> {
        let n = self.planned();
        if n == 0 {
            return Ok(());
        }
        match self.path {
            Path::PerRequest => {
                for req in self.batch.drain(..) {
                    calls::post_send(&mut self.qa, req, &mut self.calls)
                        .map_err(|(e, _)| format!("post_send: {e}"))?;
                }
            }
            Path::Batch if !self.signals.is_empty() => {
                let first = self.seq - n as u64;
                let (op, remote) = (self.work.op, self.remote);
                calls::post_typed(
                    &mut self.qa,
                    op,
                    remote,
                    first,
                    &self.signals,
                    &mut self.free,
                    &mut self.calls,
                )
                .map_err(err("SendBatch"))?;
                self.signals.clear();
            }
            // Inline data travels in requests built beforehand: `post_batch` takes them.
            Path::Batch | Path::Vec => {
                calls::post_sends(&mut self.qa, &mut self.batch, &mut self.calls)
                    .map_err(|(_, e)| format!("post_batch: {e}"))?;
            }
        }
        self.outstanding += n;
        Ok(())
    }

    /// Polls both CQs once: requests finished come off the window (their regions back on the
    /// free list), receives go straight back to the responder's queue. Returns the requests
    /// finished.
    fn reap(&mut self) -> Result<u64, String> {
        let mut finished = 0;
        self.out.clear();
        calls::poll_requester(
            &mut self.cqa,
            self.work.depth,
            &mut self.out,
            &mut self.calls,
        );
        for c in self.out.drain(..) {
            if let Err(e) = c.status {
                return Err(format!("completion error {e}"));
            }
            finished += if self.path == Path::PerRequest {
                let done = calls::complete_requester_vec(&mut self.qa, c, &mut self.calls)
                    .map_err(err("complete"))?;
                calls::take_back(done, &mut self.free)
            } else {
                calls::complete_requester(&mut self.qa, c, &mut self.free, &mut self.calls)
                    .map_err(err("complete_with"))?
            };
        }
        self.outstanding -= finished as usize;
        if self.work.op == Op::Send {
            self.rx.clear();
            let max = 2 * self.work.depth;
            calls::poll_responder(&mut self.cqb, max, &mut self.rx, &mut self.calls);
            for c in self.rx.drain(..) {
                if let Err(e) = c.status {
                    return Err(format!("receive completion error {e}"));
                }
                let done = calls::complete_responder(&mut self.qb, c, &mut self.calls)
                    .map_err(err("complete"))?;
                for d in done {
                    let r = d.region.ok_or("a receive came back without its buffer")?;
                    calls::post_recv(&mut self.qb, r, &mut self.calls)
                        .map_err(|(e, _)| format!("post_recv: {e}"))?;
                }
            }
        }
        Ok(finished)
    }
}

/// The driver calls whose instructions `scripts/bench-rc` counts, each in a function of its
/// own that callgrind collects inside of (`--toggle-collect='*rc_link::calls::*'`): the
/// driver's `Cq::poll` is inlined into its callers and has no symbol to toggle on, and a
/// SEND's requester and responder sides must be told apart. Each wraps one driver call and
/// counts it in [`Calls`] (a field of its own each, which also keeps the compiler from
/// merging the requester's and the responder's wrappers into one symbol): 2 to 4
/// instructions a call beyond the driver's own.
pub mod calls {
    use super::{Calls, Op};
    use mlx5_driver::backend::Backend;
    use mlx5_driver::cq::{Completion, Cq};
    use mlx5_driver::mr::Region;
    use mlx5_driver::qp::post::Refused;
    use mlx5_driver::qp::{Done, Qp, RemoteAddr, Rts, SendBatch, SendRequest};
    use mlx5_driver::{Error, Result};

    /// `Qp::post_batch`: the whole batch, taken from the front of `batch` (the requests were
    /// built before, outside the count), one doorbell.
    #[inline(never)]
    pub fn post_sends<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        batch: &mut Vec<SendRequest<'h, B>>,
        calls: &mut Calls,
    ) -> std::result::Result<usize, (usize, Error)> {
        calls.batches += 1;
        let r = qp.post_batch(batch);
        calls.posts += *r.as_ref().unwrap_or_else(|(n, _)| n) as u64;
        r
    }

    /// `Qp::batch`: a typed call per request (`SendBatch::write`, `read`, `send`,
    /// `fetch_add`, `compare_swap`; one loop per operation, so the choice is made once per
    /// batch), each region taken off the free list here (the caller's share, as the reap's
    /// putting back is), identifiers from `first` on, one doorbell when the batch drops.
    #[inline(never)]
    pub fn post_typed<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        op: Op,
        remote: RemoteAddr,
        first: u64,
        signals: &[bool],
        free: &mut Vec<Region<'h, B>>,
        calls: &mut Calls,
    ) -> Result<()> {
        calls.batches += 1;
        calls.posts += signals.len() as u64;
        let mut batch = qp.batch();
        let mut id = first;
        // A free list shorter than the batch is the caller's bug, reported as one.
        let short = || Error::InvalidArgument {
            what: "rc_link",
            why: "no free region".into(),
        };
        macro_rules! each {
            ($post:expr) => {
                for &signaled in signals {
                    let region = free.pop().ok_or_else(short)?;
                    #[allow(clippy::redundant_closure_call)]
                    $post(&mut batch, id, region, signaled).map_err(|(e, _)| e)?;
                    id += 1;
                }
            };
        }
        match op {
            Op::Write => each!(|b: &mut SendBatch<'_, 'h, B>, id, r, s| b.write(id, r, remote, s)),
            Op::Read => each!(|b: &mut SendBatch<'_, 'h, B>, id, r, s| b.read(id, r, remote, s)),
            Op::Send => each!(|b: &mut SendBatch<'_, 'h, B>, id, r, s| b.send(id, r, s)),
            Op::FetchAdd => {
                each!(|b: &mut SendBatch<'_, 'h, B>, id, r, s| b.fetch_add(id, r, remote, 1, s))
            }
            Op::CompareSwap => each!(|b: &mut SendBatch<'_, 'h, B>, id, r, s| {
                b.compare_swap(id, r, remote, id, id + 1, s)
            }),
        }
        Ok(())
    }

    #[inline(never)]
    pub fn post_send<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        req: SendRequest<'h, B>,
        calls: &mut Calls,
    ) -> std::result::Result<(), Refused<'h, B>> {
        calls.posts += 1;
        qp.post_send(req)
    }

    #[inline(never)]
    pub fn poll_requester<B: Backend>(
        cq: &mut Cq<'_, B>,
        max: usize,
        out: &mut Vec<Completion>,
        calls: &mut Calls,
    ) -> usize {
        let n = cq.poll(max, out);
        calls.polls += 1;
        calls.cqes += n as u64;
        n
    }

    /// The allocation-free reap: each finished request's region straight back on the free
    /// list (the caller's whole share, so counted here). Returns the requests finished.
    #[inline(never)]
    pub fn complete_requester<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        c: Completion,
        free: &mut Vec<Region<'h, B>>,
        calls: &mut Calls,
    ) -> Result<u64> {
        calls.completes += 1;
        let n = qp.complete_with(c, |d| {
            if let Some(r) = d.region {
                free.push(r);
            }
        })?;
        Ok(n as u64)
    }

    /// The old reap: `Qp::complete`'s `Vec` (see [`take_back`]).
    #[inline(never)]
    pub fn complete_requester_vec<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        c: Completion,
        calls: &mut Calls,
    ) -> Result<Vec<Done<'h, B>>> {
        calls.completes += 1;
        qp.complete(c)
    }

    /// What the caller must do with `Qp::complete`'s answer: take the regions back and drop
    /// the vector the driver allocated. Returns the requests finished. Counted apart from the
    /// driver's functions (the caller's share of the API's cost).
    #[inline(never)]
    pub fn take_back<'h, B: Backend>(done: Vec<Done<'h, B>>, free: &mut Vec<Region<'h, B>>) -> u64 {
        let n = done.len() as u64;
        free.extend(done.into_iter().filter_map(|d| d.region));
        n
    }

    #[inline(never)]
    pub fn poll_responder<B: Backend>(
        cq: &mut Cq<'_, B>,
        max: usize,
        out: &mut Vec<Completion>,
        calls: &mut Calls,
    ) -> usize {
        let n = cq.poll(max, out);
        calls.recv_polls += 1;
        calls.recv_cqes += n as u64;
        n
    }

    #[inline(never)]
    pub fn complete_responder<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        c: Completion,
        calls: &mut Calls,
    ) -> Result<Vec<Done<'h, B>>> {
        calls.recv_completes += 1;
        qp.complete(c)
    }

    #[inline(never)]
    pub fn post_recv<'h, B: Backend>(
        qp: &mut Qp<'h, B, Rts>,
        region: Region<'h, B>,
        calls: &mut Calls,
    ) -> std::result::Result<(), (Error, Region<'h, B>)> {
        calls.recv_posts += 1;
        qp.post_recv(1, region)
    }
}
