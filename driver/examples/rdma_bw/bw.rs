//! The RDMA side of the bandwidth tests on the driver's RC QP: the perftest-shaped buffer,
//! the QP brought up as perftest brings its own, the client's loop of RDMA WRITEs, READs or
//! atomics, and the checks of the bytes each side can see.
//!
//! What is checked (the payload pattern known to both ends, see [`crate::layout`]):
//! - WRITE, this side the server: the target half starts as the complement of what the
//!   client will write there; afterwards every byte of every slot written holds the client's
//!   pattern byte, every other byte of the buffer is as it was.
//! - READ, server: the buffer is perftest's fill; afterwards it is unchanged (what the peer
//!   received cannot be seen here; perftest does not look).
//! - READ, client: every byte of every response equals the server's buffer at the offset
//!   read.
//! - FETCH_AND_ADD, server: each slot's word (big-endian, the model's atomic byte order) is
//!   its initial value plus the number of adds the iteration count sends to it; every other
//!   byte is unchanged. Client: the n-th add to a slot returns the initial value plus n, the
//!   initial value being the slot's bytes read in the peer's byte order (little-endian for
//!   soft-RoCE on x86, big-endian for the model).
//! - CMP_AND_SWAP: perftest compares with 0 and swaps in 0, so memory never changes: the
//!   server checks the buffer unchanged, the client that every response is the slot's
//!   initial value.
//! - WRITE, client: the data sent is the pattern; the peer's memory cannot be seen here.

use crate::layout::{Layout, Payload};
use crate::perftest::{Key, Report};
use mlx5_driver::backend::Backend;
use mlx5_driver::cq::Cq;
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::{
    Init, Qp, QpConfig, RemoteAddr, Rst2init, Rtr2rts, Rtr2rtsOptional, Rts, SendOp, SendRequest,
    Transitions as _,
};
use mlx5_driver::roce::RocePath;
use mlx5_driver::Hca;
use mlx5_prm::rt::{Bytes as _, BytesMut as _};
use mlx5_prm::{QpMtu, QpPmState};
use std::time::{Duration, Instant};

/// perftest's fetch-and-add operand.
pub const ADD_VALUE: u64 = 1;
/// perftest's compare-and-swap operands (compare, swap).
pub const CMP_SWAP: (u64, u64) = (0, 0);
/// Reads and atomics this side accepts at once (the model's log_max_ra_res_qp is 4).
pub const OUT_READS: u16 = 16;

/// Which test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ib_write_bw.
    Write,
    /// ib_read_bw.
    Read,
    /// ib_atomic_bw -A FETCH_AND_ADD.
    FetchAdd,
    /// ib_atomic_bw -A CMP_AND_SWAP.
    CompareSwap,
}

impl Kind {
    /// The perftest program.
    pub fn program(self) -> &'static str {
        match self {
            Kind::Write => "ib_write_bw",
            Kind::Read => "ib_read_bw",
            Kind::FetchAdd | Kind::CompareSwap => "ib_atomic_bw",
        }
    }

    /// Whether it is an atomic (8-byte messages).
    pub fn atomic(self) -> bool {
        matches!(self, Kind::FetchAdd | Kind::CompareSwap)
    }

    /// The remote access perftest registers its buffer with.
    fn access(self) -> Access {
        Access {
            local_write: true,
            remote_read: self == Kind::Read,
            remote_write: self == Kind::Write,
            remote_atomic: self.atomic(),
        }
    }
}

/// An error, with what was happening.
pub type Fallible<T> = Result<T, String>;

fn log2_floor(n: u32) -> u8 {
    (31 - n.max(1).leading_zeros()) as u8
}

/// One side before the connection: CQ, QP in INIT, the buffer filled.
pub struct Prepared<'h, B: Backend> {
    hca: &'h Hca<B>,
    cq: Cq<'h, B>,
    qp: Qp<'h, B, Init>,
    buffer: Region<'h, B>,
    kind: Kind,
    layout: Layout,
    payload: Payload,
    depth: usize,
}

/// One side connected (QP in RTS).
pub struct Ready<'h, B: Backend> {
    hca: &'h Hca<B>,
    cq: Cq<'h, B>,
    qp: Qp<'h, B, Rts>,
    buffer: Region<'h, B>,
    kind: Kind,
    layout: Layout,
    payload: Payload,
    depth: usize,
}

impl<'h, B: Backend> Prepared<'h, B> {
    /// Creates the CQ and QP (`depth` requests in flight), takes the QP to INIT with remote
    /// access, and registers and fills the buffer as perftest does (a WRITE server's target
    /// half as the complement of what will arrive, so that every written byte must change).
    pub fn new(
        hca: &'h Hca<B>,
        kind: Kind,
        layout: Layout,
        payload: &Payload,
        server: bool,
        depth: usize,
    ) -> Fallible<Prepared<'h, B>> {
        let depth = depth.clamp(1, 256);
        let log_sq = depth.next_power_of_two().trailing_zeros() as u8;
        let cq = Cq::create(hca, log_sq + 1).map_err(|e| format!("creating the CQ: {e}"))?;
        let config = QpConfig {
            log_sq_size: log_sq.max(1),
            log_rq_size: 1,
            log_rq_stride: 1,
        };
        let qp = Qp::create(hca, &cq, &cq, &config).map_err(|e| format!("creating the QP: {e}"))?;
        let init = Rst2init {
            pkey_index: 0,
            vhca_port_num: 1,
            rre: kind == Kind::Read,
            rwe: kind == Kind::Write,
            rae: kind.atomic(),
            pm_state: QpPmState::Migrated,
            counter_set_id: 0,
        };
        let qp = qp
            .rst2init(init)
            .map_err(|(e, _)| format!("QP to INIT: {e}"))?;
        let len = layout.len();
        let buffer = Region::register(hca, len, kind.access())
            .map_err(|e| format!("registering the {len}-byte buffer: {e}"))?;
        let fill = initial(kind, &layout, payload, server);
        buffer.bytes().write_bytes(0, &fill);
        Ok(Prepared {
            hca,
            cq,
            qp,
            buffer,
            kind,
            layout,
            payload: payload.clone(),
            depth,
        })
    }

    /// The key message for this side.
    pub fn key(&self, psn: u32, gid: [u8; 16]) -> Key {
        Key {
            lid: 0,
            out_reads: OUT_READS,
            qpn: self.qp.qpn(),
            psn,
            rkey: self.buffer.rkey(),
            vaddr: self.buffer.addr() + self.layout.target() as u64,
            gid,
            srqn: 0,
        }
    }

    /// RTR towards `remote` over `path`, then RTS sending from `my_psn`: perftest's
    /// attributes (timeout 14, 7 retries, 7 RNR retries), this side accepting [`OUT_READS`]
    /// reads or atomics and sending as many as the peer accepts (up to the model's 16).
    pub fn connect(
        self,
        remote: &Key,
        path: &RocePath,
        my_psn: u32,
        mtu: QpMtu,
    ) -> Fallible<Ready<'h, B>> {
        let log_msg_max = self.hca.info().caps().log_max_msg();
        let mut rtr = path.init2rtr(self.qp.qpn(), remote.qpn, remote.psn, mtu, log_msg_max);
        rtr.log_rra_max = log2_floor(OUT_READS.into());
        let qp = self
            .qp
            .init2rtr(rtr)
            .map_err(|(e, _)| format!("QP to RTR: {e}"))?;
        let rts = Rtr2rts {
            next_send_psn: my_psn,
            retry_count: 7,
            rnr_retry: 7,
            log_sra_max: log2_floor(u32::from(remote.out_reads.clamp(1, OUT_READS))),
            ack_timeout: 14,
            optional: Rtr2rtsOptional::default(),
        };
        let qp = qp
            .rtr2rts(rts)
            .map_err(|(e, _)| format!("QP to RTS: {e}"))?;
        Ok(Ready {
            hca: self.hca,
            cq: self.cq,
            qp,
            buffer: self.buffer,
            kind: self.kind,
            layout: self.layout,
            payload: self.payload,
            depth: self.depth,
        })
    }
}

/// The buffer's first contents: perftest's fill, and for a WRITE server the target half as
/// the complement of the client's bytes for the same offsets.
fn initial(kind: Kind, l: &Layout, p: &Payload, server: bool) -> Vec<u8> {
    let mut b = p.span(l.size, 0, l.len());
    if server && kind == Kind::Write {
        for (o, x) in b[l.target()..].iter_mut().enumerate() {
            *x = !p.fill(l.size, o);
        }
    }
    b
}

/// The client's run.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// The result perftest's server prints.
    pub report: Report,
    /// What was checked, in words.
    pub checked: String,
}

impl<B: Backend> Ready<'_, B> {
    /// The server's check of its buffer after `iters` operations of the client (see the
    /// module's doc); returns what was checked.
    pub fn check_server(&self, iters: u64) -> Fallible<String> {
        let (l, p) = (&self.layout, &self.payload);
        let mut got = vec![0u8; l.len()];
        self.buffer.bytes().read_bytes(0, &mut got);
        let mut expected = initial(self.kind, l, p, true);
        let t = l.target();
        let mut words = 0;
        match self.kind {
            Kind::Write => {
                for (o, x) in expected[t..].iter_mut().enumerate() {
                    if l.written(iters, o) {
                        *x = p.fill(l.size, o);
                    }
                }
            }
            Kind::FetchAdd => {
                for k in 0..l.slots() {
                    let at = t + k * l.inc();
                    let w: [u8; 8] = expected[at..at + 8].try_into().map_err(|_| "slot")?;
                    let hits = l.hits(iters, k);
                    let v = u64::from_be_bytes(w).wrapping_add(hits.wrapping_mul(ADD_VALUE));
                    expected[at..at + 8].copy_from_slice(&v.to_be_bytes());
                    words += usize::from(hits > 0);
                }
            }
            Kind::Read | Kind::CompareSwap => {}
        }
        if let Some(at) = (0..got.len()).find(|&i| got[i] != expected[i]) {
            let side = if at >= t { "target" } else { "local" };
            return Err(format!(
                "buffer byte {at} ({side} half, offset {}): 0x{:02x}, expected 0x{:02x}",
                at.saturating_sub(if at >= t { t } else { 0 }),
                got[at],
                expected[at]
            ));
        }
        let written = (0..l.len() - t).filter(|&o| l.written(iters, o)).count();
        Ok(match self.kind {
            Kind::Write => format!(
                "all {written} bytes written ({} slot(s) of {}) hold the pattern, the other {} \
                 bytes unchanged",
                l.slots().min(iters as usize),
                l.size,
                l.len() - written
            ),
            Kind::Read => format!("all {} bytes served unchanged", l.len()),
            Kind::FetchAdd => format!(
                "{words} word(s) each raised by its share of {iters} adds of {ADD_VALUE}, the \
                 other {} bytes unchanged",
                l.len() - 8 * words
            ),
            Kind::CompareSwap => format!(
                "all {} bytes unchanged (compare 0 / swap 0 leaves memory as it is)",
                l.len()
            ),
        })
    }

    /// The client's loop: `iters` operations to `remote`'s buffer, `depth` in flight, each
    /// signaled and checked as it completes. `idle` runs while the CQ is empty.
    pub fn run_client(
        &mut self,
        remote: &Key,
        iters: u64,
        timeout: Duration,
        idle: &mut dyn FnMut(),
    ) -> Fallible<ClientRun> {
        let (l, kind) = (self.layout, self.kind);
        let len = if kind.atomic() { 8 } else { l.size };
        let local = Access {
            local_write: true,
            ..Access::default()
        };
        let mut free = Vec::with_capacity(self.depth);
        for _ in 0..self.depth.min(iters.max(1) as usize) {
            free.push(Region::register(self.hca, len, local).map_err(|e| e.to_string())?);
        }
        let mut check = Check::new(kind, l, self.payload.clone());
        let (mut posted, mut done) = (0u64, 0u64);
        let start = Instant::now();
        let mut last = Instant::now();
        let mut out = Vec::new();
        while done < iters {
            while posted < iters {
                let Some(region) = free.pop() else { break };
                if kind == Kind::Write {
                    let at = l.offset(posted);
                    region
                        .bytes()
                        .write_bytes(0, &self.payload.span(l.size, at, l.size));
                }
                let to = RemoteAddr {
                    addr: remote.vaddr + l.offset(posted) as u64,
                    rkey: remote.rkey,
                };
                let op = match kind {
                    Kind::Write => SendOp::Write(to),
                    Kind::Read => SendOp::Read(to),
                    Kind::FetchAdd => SendOp::FetchAdd {
                        remote: to,
                        add: ADD_VALUE,
                    },
                    Kind::CompareSwap => SendOp::CompareSwap {
                        remote: to,
                        compare: CMP_SWAP.0,
                        swap: CMP_SWAP.1,
                    },
                };
                let req = SendRequest {
                    id: posted,
                    op,
                    region: Some(region),
                    len: Some(len),
                    signaled: true,
                    inline: None,
                };
                self.qp
                    .post_send(req)
                    .map_err(|(e, _)| format!("posting operation {posted}: {e}"))?;
                posted += 1;
            }
            out.clear();
            if self.cq.poll(16, &mut out) == 0 {
                if last.elapsed() > timeout {
                    return Err(format!(
                        "no completion for {timeout:?} ({done} of {iters} done, {posted} posted)"
                    ));
                }
                idle();
                std::hint::spin_loop();
                continue;
            }
            last = Instant::now();
            for c in out.drain(..) {
                if let Err(e) = c.status {
                    return Err(format!("operation failed: {e} (QP 0x{:x})", c.qpn));
                }
                for d in self.qp.complete(c).map_err(|e| e.to_string())? {
                    let r = d.region.ok_or("a request came back without its buffer")?;
                    check.completed(d.id, &r)?;
                    free.push(r);
                    done += 1;
                }
            }
        }
        let secs = start.elapsed().as_secs_f64().max(1e-9);
        let bw = (l.size as f64 * iters as f64) / secs / f64::from(1u32 << 20);
        Ok(ClientRun {
            report: Report {
                size: l.size as u64,
                iters,
                bw_peak: bw,
                bw_avg: bw,
                msg_rate: iters as f64 / secs / 1e6,
            },
            checked: check.summary(iters),
        })
    }
}

/// The client's checks of what came back.
struct Check {
    kind: Kind,
    layout: Layout,
    payload: Payload,
    /// For atomics: the byte order the peer's memory uses, once seen.
    little_endian: Option<bool>,
    bytes: u64,
}

impl Check {
    fn new(kind: Kind, layout: Layout, payload: Payload) -> Check {
        Check {
            kind,
            layout,
            payload,
            little_endian: None,
            bytes: 0,
        }
    }

    /// Checks operation `n`'s local buffer, then clears it so stale bytes cannot pass later.
    fn completed<B: Backend>(&mut self, n: u64, r: &Region<'_, B>) -> Fallible<()> {
        let l = self.layout;
        let at = l.target() + l.offset(n);
        match self.kind {
            Kind::Write => return Ok(()),
            Kind::Read => {
                let mut got = vec![0u8; l.size];
                r.bytes().read_bytes(0, &mut got);
                let want = self.payload.span(l.size, at, l.size);
                if let Some(i) = (0..l.size).find(|&i| got[i] != want[i]) {
                    return Err(format!(
                        "read {n}: byte {i} is 0x{:02x}, the server's buffer holds 0x{:02x}",
                        got[i], want[i]
                    ));
                }
                self.bytes += l.size as u64;
                r.bytes().write_bytes(0, &vec![0u8; l.size]);
            }
            Kind::FetchAdd | Kind::CompareSwap => {
                let mut got = [0u8; 8];
                r.bytes().read_bytes(0, &mut got);
                // The model writes the returned value big-endian.
                let got = u64::from_be_bytes(got);
                let slot: [u8; 8] = self
                    .payload
                    .span(l.size, at, 8)
                    .try_into()
                    .unwrap_or([0; 8]);
                let step = if self.kind == Kind::FetchAdd {
                    (n / l.slots() as u64).wrapping_mul(ADD_VALUE)
                } else {
                    0
                };
                let le = u64::from_le_bytes(slot).wrapping_add(step);
                let be = u64::from_be_bytes(slot).wrapping_add(step);
                let ok = match self.little_endian {
                    Some(true) => got == le,
                    Some(false) => got == be,
                    None => {
                        self.little_endian = Some(got == le);
                        got == le || got == be
                    }
                };
                if !ok {
                    return Err(format!(
                        "atomic {n}: returned {got:#018x}, expected {le:#018x} (little-endian \
                         peer) or {be:#018x} (big-endian)"
                    ));
                }
                self.bytes += 8;
                r.bytes().write_bytes(0, &[0u8; 8]);
            }
        }
        Ok(())
    }

    fn summary(&self, iters: u64) -> String {
        match self.kind {
            Kind::Write => format!(
                "{iters} writes of the pattern sent (the peer's memory is not visible here)"
            ),
            Kind::Read => format!("all {} bytes read match the server's buffer", self.bytes),
            Kind::FetchAdd | Kind::CompareSwap => format!(
                "all {iters} returned values as predicted ({} peer memory)",
                if self.little_endian == Some(true) {
                    "little-endian"
                } else {
                    "big-endian"
                }
            ),
        }
    }
}
