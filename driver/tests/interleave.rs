//! Random interleavings of posting and polling on a connected RC pair, against a reference
//! model of the queues: every work request completes exactly once, in order, with its buffer,
//! across many wraps of the send, receive and completion rings. Inline and threaded.

mod common;

use common::{qp_config, to_rts};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::Cq;
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::*;
use mlx5_driver::Hca;
use mlx5_sim::Mode;
use proptest::prelude::*;
use std::collections::{HashSet, VecDeque};

type Sim = SimBackend;

/// Small rings so a few hundred operations wrap each of them many times.
const LOG_Q: u8 = 3;
const LOG_CQ: u8 = 5;

fn pair(hca: &Hca<Sim>) -> (Cq<'_, Sim>, Qp<'_, Sim, Rts>, Qp<'_, Sim, Rts>) {
    let cq = Cq::create(hca, LOG_CQ).unwrap();
    let a = Qp::create(hca, &cq, &cq, &qp_config(LOG_Q)).unwrap();
    let b = Qp::create(hca, &cq, &cq, &qp_config(LOG_Q)).unwrap();
    let (qa, qb) = (a.qpn(), b.qpn());
    (cq, to_rts(a, qb), to_rts(b, qa))
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

#[allow(clippy::too_many_arguments)]
fn poll<'h>(
    cq: &mut Cq<'h, Sim>,
    a: &mut Qp<'h, Sim, Rts>,
    b: &mut Qp<'h, Sim, Rts>,
    max: usize,
    free: &mut Vec<Region<'h, Sim>>,
    sends: &mut VecDeque<u64>,
    recvs: &mut VecDeque<u64>,
    seen: &mut HashSet<u64>,
) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    cq.poll(max, &mut out);
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
}

fn run(mode: Mode, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let (hca, _dev) = common::up(mode);
    let (mut cq, mut a, mut b) = pair(&hca);
    let depth = 1usize << LOG_Q;
    let mut free: Vec<Region<'_, Sim>> = (0..4 * depth)
        .map(|_| {
            Region::register(
                &hca,
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
    for s in steps {
        match s {
            Step::Recv(n) => {
                for _ in 0..n {
                    if recvs.len() >= depth || free.is_empty() {
                        break;
                    }
                    let r = free.pop().unwrap();
                    b.post_recv(next_recv, r)
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
                    a.post_send(req)
                        .map_err(|(e, _)| TestCaseError::fail(e.to_string()))?;
                    sends.push_back(next_send);
                    next_send += 1;
                    unsignaled_tail = if signaled { 0 } else { unsignaled_tail + 1 };
                }
            }
            Step::Poll(n) => poll(
                &mut cq, &mut a, &mut b, n, &mut free, &mut sends, &mut recvs, &mut seen,
            )?,
        }
    }
    // Close any unsignaled run, then drain: every posted send completes exactly once.
    let mut closed = unsignaled_tail == 0;
    if !closed && recvs.len() > sends.len() && !free.is_empty() && sends.len() < depth - 1 {
        let r = free.pop().unwrap();
        a.post_send(SendRequest {
            id: next_send,
            op: SendOp::Send,
            region: Some(r),
            len: Some(8),
            signaled: true,
            inline: None,
        })
        .map_err(|(e, _)| TestCaseError::fail(e.to_string()))?;
        sends.push_back(next_send);
        closed = true;
    }
    // When the last send is signaled, everything must come back: wait for it with a deadline
    // in time, not in polls (in threaded mode the model's thread may not run for a while on a
    // loaded machine). Otherwise an unsignaled tail stays: drain what does complete.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut polls = 0;
    while !sends.is_empty() && (polls < 1000 || (closed && std::time::Instant::now() < deadline)) {
        polls += 1;
        poll(
            &mut cq, &mut a, &mut b, 64, &mut free, &mut sends, &mut recvs, &mut seen,
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
