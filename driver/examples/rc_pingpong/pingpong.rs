//! The message pattern of `ibv_rc_pingpong` on the driver's RC QP: receives posted before the
//! connection, the client sending first, and each side sending its next message only once its
//! previous send completed and a message arrived, `iters` times each way; then the two
//! summary lines in ibv_rc_pingpong's format.
//!
//! Where the driver differs from verbs: a buffer is an owned [`Region`] that travels with its
//! work request, so the receives are separate regions, not one buffer posted many times. As
//! each side sends only after receiving, at most one message is ever on its way to a side, so
//! the number of receives posted is capped by memory ([`RECV_MEMORY`]) with no effect on the
//! traffic; each receive is posted again as soon as it completes.

use crate::exchange::Dest;
use mlx5_driver::backend::{Backend, Events as _};
use mlx5_driver::cq::{Completion, Cq};
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::{
    Init, Qp, QpConfig, Rst2init, Rtr2rts, Rtr2rtsOptional, Rts, SendOp, SendRequest,
    Transitions as _,
};
use mlx5_driver::roce::RocePath;
use mlx5_driver::{Error, Hca};
use mlx5_prm::rt::{Bytes as _, BytesMut as _};
use mlx5_prm::{QpMtu, QpPmState};
use std::time::{Duration, Instant};

/// Work request ids, as ibv_rc_pingpong numbers them.
const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;
/// Most bytes of receive buffers posted at once.
pub const RECV_MEMORY: usize = 64 << 20;
/// ibv_rc_pingpong's initial buffer contents: every byte 0x7b.
pub const PEER_FILL: u8 = 0x7b;

/// What to exchange.
#[derive(Debug, Clone)]
pub struct Params {
    /// Bytes per message.
    pub size: usize,
    /// Receives to keep posted (capped, see the module's doc).
    pub rx_depth: usize,
    /// Messages each way.
    pub iters: u32,
    /// Path MTU.
    pub mtu: QpMtu,
    /// Fill the send buffer with [`pattern`] and check every received byte.
    pub check: bool,
    /// Give up when no completion arrives for this long.
    pub timeout: Duration,
    /// The queue counter set the QP counts its transport events in (0: none).
    pub counter_set_id: u8,
    /// How long the QP stays up after the last message, answering the peer's resends.
    pub linger: Duration,
    /// The QP's local ACK timeout, 4.096 µs × 2^n (ibv_rc_pingpong's 14 is 67 ms); 0 waits
    /// without end, so only a NAK makes the requester resend.
    pub ack_timeout: u8,
}

/// Byte `i` of the pattern `--check` sends.
pub fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 8)) as u8 ^ 0x5a
}

/// The result of a run, and the summary lines ibv_rc_pingpong prints.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Message size.
    pub size: usize,
    /// Messages each way.
    pub iters: u32,
    /// Time from the first send (or, on the server, the start of the loop) to the last
    /// completion.
    pub elapsed: Duration,
    /// Messages whose bytes were checked (0 without `--check`).
    pub checked: u32,
}

impl Stats {
    /// "N bytes in S seconds = R Mbit/sec" and "N iters in S seconds = U usec/iter", with
    /// ibv_rc_pingpong's arithmetic: bytes counted both ways, whole microseconds.
    pub fn summary(&self) -> [String; 2] {
        let usec = self.elapsed.as_micros().max(1) as f64;
        let bytes = self.size as u64 * u64::from(self.iters) * 2;
        [
            format!(
                "{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec",
                usec / 1e6,
                bytes as f64 * 8.0 / usec
            ),
            format!(
                "{} iters in {:.2} seconds = {:.2} usec/iter",
                self.iters,
                usec / 1e6,
                usec / f64::from(self.iters.max(1))
            ),
        ]
    }
}

/// An error of the run, with what was happening.
pub type Fallible<T> = Result<T, String>;

fn driver(what: &str) -> impl Fn(Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// One side before the connection: CQ, QP in INIT with the receives posted, send buffer.
pub struct Side<'h, B: Backend> {
    hca: &'h Hca<B>,
    cq: Cq<'h, B>,
    qp: Qp<'h, B, Init>,
    send: Region<'h, B>,
    params: Params,
}

/// One side connected (QP in RTS).
pub struct Connected<'h, B: Backend> {
    cq: Cq<'h, B>,
    qp: Qp<'h, B, Rts>,
    send: Option<Region<'h, B>>,
    params: Params,
}

/// log2 of the smallest power of two at least `n`.
fn log2_at_least(n: usize) -> u8 {
    n.max(1).next_power_of_two().trailing_zeros() as u8
}

impl<'h, B: Backend> Side<'h, B> {
    /// Creates the CQ and QP, takes the QP to INIT and posts the receives.
    pub fn new(hca: &'h Hca<B>, params: &Params) -> Fallible<Side<'h, B>> {
        if params.size == 0 {
            return Err("size must be at least 1".into());
        }
        let recvs = params
            .rx_depth
            .min((RECV_MEMORY / params.size).max(2))
            .max(1);
        let caps = hca.info().caps();
        let log_rq = log2_at_least(recvs);
        if log_rq > caps.log_max_qp_sz() {
            return Err(format!(
                "rx depth {recvs} is above the device's {} receive WQEs",
                1u32 << caps.log_max_qp_sz()
            ));
        }
        let cq = Cq::create(hca, log2_at_least(recvs + 2)).map_err(driver("creating the CQ"))?;
        let config = QpConfig {
            log_sq_size: 2,
            log_rq_size: log_rq,
            log_rq_stride: 1,
        };
        let qp = Qp::create(hca, &cq, &cq, &config).map_err(driver("creating the QP"))?;
        let init = Rst2init {
            pkey_index: 0,
            vhca_port_num: 1,
            rre: false,
            rwe: false,
            rae: false,
            pm_state: QpPmState::Migrated,
            counter_set_id: params.counter_set_id,
        };
        let mut qp = qp
            .rst2init(init)
            .map_err(|(e, _)| format!("QP to INIT: {e}"))?;
        let local = Access {
            local_write: true,
            remote_read: false,
            remote_write: false,
            remote_atomic: false,
        };
        for _ in 0..recvs {
            let r = Region::register(hca, params.size, local)
                .map_err(driver("registering a receive buffer"))?;
            qp.post_recv(RECV_WRID, r)
                .map_err(|(e, _)| format!("posting a receive: {e}"))?;
        }
        let send = Region::register(hca, params.size, local)
            .map_err(driver("registering the send buffer"))?;
        {
            let mut b = send.bytes();
            let fill: Vec<u8> = if params.check {
                (0..params.size).map(pattern).collect()
            } else {
                vec![PEER_FILL; params.size]
            };
            b.write_bytes(0, &fill);
        }
        Ok(Side {
            hca,
            cq,
            qp,
            send,
            params: params.clone(),
        })
    }

    /// The QP's number.
    pub fn qpn(&self) -> u32 {
        self.qp.qpn()
    }

    /// Connects to `remote` over `path` (RTR, then RTS sending from `my_psn`), as
    /// ibv_rc_pingpong's pp_connect_ctx does.
    pub fn connect(
        self,
        remote: &Dest,
        path: &RocePath,
        my_psn: u32,
    ) -> Fallible<Connected<'h, B>> {
        let log_msg_max = self.hca.info().caps().log_max_msg();
        let rtr = path.init2rtr(
            self.qp.qpn(),
            remote.qpn,
            remote.psn,
            self.params.mtu,
            log_msg_max,
        );
        let qp = self
            .qp
            .init2rtr(rtr)
            .map_err(|(e, _)| format!("QP to RTR: {e}"))?;
        let rts = Rtr2rts {
            next_send_psn: my_psn,
            retry_count: 7,
            rnr_retry: 7,
            log_sra_max: 0,
            ack_timeout: self.params.ack_timeout,
            optional: Rtr2rtsOptional::default(),
        };
        let qp = qp
            .rtr2rts(rts)
            .map_err(|(e, _)| format!("QP to RTS: {e}"))?;
        Ok(Connected {
            cq: self.cq,
            qp,
            send: Some(self.send),
            params: self.params,
        })
    }
}

impl<B: Backend> Connected<'_, B> {
    fn post_send(&mut self) -> Fallible<()> {
        let region = self.send.take().ok_or("the send buffer is still posted")?;
        let req = SendRequest {
            id: SEND_WRID,
            op: SendOp::Send,
            region: Some(region),
            len: Some(self.params.size),
            signaled: true,
            inline: None,
        };
        self.qp
            .post_send(req)
            .map_err(|(e, _)| format!("Couldn't post send: {e}"))
    }

    /// Checks a received message against what the peer may have sent: our pattern (echoed by
    /// ibv_rc_pingpong, whose one buffer holds the last message it received, or sent by
    /// another rc_pingpong with `--check`) or ibv_rc_pingpong's 0x7b fill (its first message).
    fn check(&self, r: &Region<'_, B>, c: &Completion) -> Fallible<()> {
        let n = self.params.size;
        if c.byte_cnt as usize != n {
            return Err(format!("received {} bytes, expected {n}", c.byte_cnt));
        }
        let mut got = vec![0u8; n];
        r.bytes().read_bytes(0, &mut got);
        let ours = got.iter().enumerate().all(|(i, &b)| b == pattern(i));
        if !ours && !got.iter().all(|&b| b == PEER_FILL) {
            let at = got
                .iter()
                .enumerate()
                .position(|(i, &b)| b != pattern(i))
                .unwrap_or(0);
            return Err(format!(
                "received data differs at byte {at}: 0x{:02x}, expected 0x{:02x}",
                got[at],
                pattern(at)
            ));
        }
        // Zero the buffer before it is posted again, so a message the transport does not
        // write cannot pass for a good one.
        r.bytes().write_bytes(0, &vec![0u8; n]);
        Ok(())
    }

    /// The message loop; `client` sends first. `idle` runs whenever the CQ is empty (the
    /// example answers ARP there).
    #[allow(dead_code)] // the example itself uses run_hooked; the tests use this
    pub fn run(self, client: bool, idle: &mut dyn FnMut()) -> Fallible<Stats> {
        self.run_hooked(client, idle, &mut || {})
    }

    /// [`Connected::run`], calling `last_round` just before this side posts its last send
    /// (the example ends its port's loss there, see `--loss`).
    pub fn run_hooked(
        mut self,
        client: bool,
        idle: &mut dyn FnMut(),
        last_round: &mut dyn FnMut(),
    ) -> Fallible<Stats> {
        let iters = self.params.iters;
        let mut pending = RECV_WRID;
        if client {
            if iters == 1 {
                last_round();
            }
            self.post_send()?;
            pending |= SEND_WRID;
        }
        let start = Instant::now();
        let (mut scnt, mut rcnt, mut checked) = (0u32, 0u32, 0u32);
        let mut out = Vec::with_capacity(2);
        let mut last = Instant::now();
        while rcnt < iters || scnt < iters {
            out.clear();
            if self.cq.poll(2, &mut out) == 0 {
                if last.elapsed() > self.params.timeout {
                    return Err(format!(
                        "no completion for {:?} ({scnt} sent, {rcnt} received of {iters})",
                        self.params.timeout
                    ));
                }
                idle();
                // Lets the device do its own work while nothing arrives: on the model, the
                // transport's timers (ACK timeouts, RNR waits) run here.
                let events = self.cq.hca().backend().events();
                events.wait(Instant::now() + Duration::from_micros(20));
                continue;
            }
            last = Instant::now();
            for c in out.drain(..) {
                if let Err(e) = c.status {
                    return Err(format!("Failed status {e} for QP 0x{:x}", c.qpn));
                }
                let done = self
                    .qp
                    .complete(c)
                    .map_err(driver("handing back a completion"))?;
                for d in done {
                    match d.id {
                        SEND_WRID => {
                            scnt += 1;
                            self.send = d.region;
                        }
                        RECV_WRID => {
                            let r = d.region.ok_or("a receive came back without its buffer")?;
                            if self.params.check {
                                let c = d
                                    .completion
                                    .as_ref()
                                    .ok_or("a receive without its completion")?;
                                self.check(&r, c)?;
                                checked += 1;
                            }
                            self.qp
                                .post_recv(RECV_WRID, r)
                                .map_err(|(e, _)| format!("Couldn't post receive: {e}"))?;
                            rcnt += 1;
                        }
                        id => return Err(format!("Completion for unknown wr_id {id}")),
                    }
                    pending &= !d.id;
                }
                if scnt < iters && pending == 0 {
                    if scnt + 1 == iters {
                        last_round();
                    }
                    self.post_send()?;
                    pending = RECV_WRID | SEND_WRID;
                }
            }
        }
        let elapsed = start.elapsed();
        // The QP stays up a while longer: the peer may still be resending its last message
        // because our ACK of it was lost, and would fail if nobody answered.
        let linger = Instant::now() + self.params.linger;
        while Instant::now() < linger {
            idle();
            let events = self.cq.hca().backend().events();
            events.wait(Instant::now() + Duration::from_micros(200));
        }
        Ok(Stats {
            size: self.params.size,
            iters,
            elapsed,
            checked,
        })
    }
}
