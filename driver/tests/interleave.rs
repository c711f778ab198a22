//! Random interleavings of posting and polling on a connected RC pair, against a reference
//! model of the queues: every work request completes exactly once, in order, with its buffer,
//! across many wraps of the send, receive and completion rings. Inline and threaded.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::Cq;
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::*;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::QpMtu;
use mlx5_sim::{Config, Mode};
use proptest::prelude::*;
use std::collections::{HashSet, VecDeque};

/// Small rings so a few hundred operations wrap each of them many times.
const LOG_Q: u8 = 3;
const LOG_CQ: u8 = 5;

fn pair(mode: Mode) -> (Hca<SimBackend>, Cq, Qp<Rts>, Qp<Rts>) {
    let (backend, _dev) = SimBackend::new(Config {
        mode,
        ..Config::default()
    });
    let mut hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let eqn = hca.info().eqn;
    let cq = Cq::create(&mut hca, LOG_CQ, eqn).unwrap();
    let config = QpConfig {
        log_sq_size: LOG_Q,
        log_rq_size: LOG_Q,
        log_rq_stride: 1,
        send_cq: cq.cqn(),
        recv_cq: cq.cqn(),
    };
    let a = Qp::create(&mut hca, config.clone()).unwrap();
    let b = Qp::create(&mut hca, config).unwrap();
    let (qa, qb) = (a.qpn(), b.qpn());
    let up = |qp: Qp<Reset>, hca: &mut Hca<SimBackend>, peer: u32| {
        let init = InitParams {
            port: 1,
            pkey_index: 0,
            access: RemoteAccess::default(),
        };
        let rtr = RtrParams {
            mtu: QpMtu::Mtu1k,
            log_msg_max: 20,
            remote_qpn: peer,
            next_rcv_psn: 0,
            log_rra_max: 0,
            min_rnr_nak: 1,
            path: RocePath {
                rmac: [2, 0, 0, 0, 0, 1],
                rgid: [0; 16],
                src_addr_index: 0,
                hop_limit: 64,
                port: 1,
            },
        };
        let rts = RtsParams {
            next_send_psn: 0,
            retry_count: 7,
            rnr_retry: 7,
            log_sra_max: 0,
            ack_timeout: 14,
        };
        let qp = qp.to_init(hca, &init).map_err(|(e, _)| e).unwrap();
        let qp = qp.to_rtr(hca, &rtr).map_err(|(e, _)| e).unwrap();
        qp.to_rts(hca, &rts).map_err(|(e, _)| e).unwrap()
    };
    let a = up(a, &mut hca, qb);
    let b = up(b, &mut hca, qa);
    (hca, cq, a, b)
}

#[derive(Debug, Clone)]
enum Step {
    /// Post up to n receives at b.
    Recv(usize),
    /// Post up to n sends from a (the last one signaled when `signal`).
    Send(usize, bool),
    /// Poll up to n completions.
    Poll(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..6).prop_map(Step::Recv),
        ((1usize..6), any::<bool>()).prop_map(|(n, s)| Step::Send(n, s)),
        (1usize..20).prop_map(Step::Poll),
    ]
}

fn run(mode: Mode, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let (mut hca, mut cq, mut a, mut b) = pair(mode);
    let depth = 1usize << LOG_Q;
    let mut free: Vec<Region> = (0..4 * depth)
        .map(|_| {
            Region::register(
                &mut hca,
                64,
                Access {
                    local_write: true,
                    ..Access::default()
                },
            )
            .unwrap()
        })
        .collect();
    let (mut next_send, mut next_recv) = (0u64, 1_000_000u64);
    // Reference: ids in the order they must come back.
    let (mut sends, mut recvs): (VecDeque<u64>, VecDeque<u64>) = (VecDeque::new(), VecDeque::new());
    let mut seen = HashSet::new();
    let mut unsignaled_tail = 0usize;
    let poll = |cq: &mut Cq,
                a: &mut Qp<Rts>,
                b: &mut Qp<Rts>,
                hca: &Hca<SimBackend>,
                max: usize,
                free: &mut Vec<Region>,
                sends: &mut VecDeque<u64>,
                recvs: &mut VecDeque<u64>,
                seen: &mut HashSet<u64>|
     -> Result<(), TestCaseError> {
        let mut out = Vec::new();
        cq.poll(hca.backend(), max, &mut out);
        for c in out {
            prop_assert!(c.status.is_ok(), "{:?}", c);
            let done = if c.qpn == a.qpn() {
                a.complete(c)
            } else {
                b.complete(c)
            };
            let done = done.map_err(|e| TestCaseError::fail(e.to_string()))?;
            for d in done {
                let expected = if d.id >= 1_000_000 {
                    recvs.pop_front()
                } else {
                    sends.pop_front()
                };
                prop_assert_eq!(Some(d.id), expected, "completion order");
                prop_assert!(seen.insert(d.id), "{} completed twice", d.id);
                free.push(d.region.expect("buffer back"));
            }
        }
        Ok(())
    };
    for s in steps {
        match s {
            Step::Recv(n) => {
                for _ in 0..n {
                    if recvs.len() >= depth || free.is_empty() {
                        break;
                    }
                    let r = free.pop().unwrap();
                    b.post_recv(hca.backend(), next_recv, r)
                        .map_err(|(e, _)| TestCaseError::fail(e.to_string()))?;
                    recvs.push_back(next_recv);
                    next_recv += 1;
                }
            }
            Step::Send(n, signal) => {
                // Sends need receives at the peer (no RNR waits here) and ring room; an
                // unsignaled run is closed by a signaled send before the ring fills.
                for k in 0..n {
                    let posted_recvs_ahead = recvs.len() > sends.len();
                    if sends.len() >= depth - 1 || free.is_empty() || !posted_recvs_ahead {
                        break;
                    }
                    let last = k + 1 == n;
                    let signaled = (last && signal) || unsignaled_tail + 2 >= depth;
                    let r = free.pop().unwrap();
                    let req = SendRequest {
                        id: next_send,
                        op: SendOp::Send,
                        region: Some(r),
                        len: Some(8),
                        signaled,
                        inline: None,
                    };
                    a.post_send(hca.backend(), req)
                        .map_err(|(e, _)| TestCaseError::fail(e.to_string()))?;
                    sends.push_back(next_send);
                    next_send += 1;
                    unsignaled_tail = if signaled { 0 } else { unsignaled_tail + 1 };
                }
            }
            Step::Poll(n) => poll(
                &mut cq, &mut a, &mut b, &hca, n, &mut free, &mut sends, &mut recvs, &mut seen,
            )?,
        }
    }
    // Close any unsignaled run, then drain: every posted send completes exactly once.
    let mut closed = unsignaled_tail == 0;
    if !closed && recvs.len() > sends.len() && !free.is_empty() && sends.len() < depth - 1 {
        let r = free.pop().unwrap();
        a.post_send(
            hca.backend(),
            SendRequest {
                id: next_send,
                op: SendOp::Send,
                region: Some(r),
                len: Some(8),
                signaled: true,
                inline: None,
            },
        )
        .map_err(|(e, _)| TestCaseError::fail(e.to_string()))?;
        sends.push_back(next_send);
        closed = true;
    }
    for _ in 0..1000 {
        if sends.is_empty() {
            break;
        }
        poll(
            &mut cq, &mut a, &mut b, &hca, 64, &mut free, &mut sends, &mut recvs, &mut seen,
        )?;
        std::thread::yield_now();
    }
    if closed {
        prop_assert!(sends.is_empty(), "sends never completed: {:?}", sends);
        prop_assert_eq!(a.outstanding().0, 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn inline_interleavings(steps in proptest::collection::vec(step(), 1..120)) {
        run(Mode::Inline, steps)?;
    }

    #[test]
    fn threaded_interleavings(steps in proptest::collection::vec(step(), 1..80)) {
        run(Mode::Threaded, steps)?;
    }
}
