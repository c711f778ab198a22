//! Receive: a frame that arrives on the port is steered through the NIC receive flow tables
//! to TIRs, each of which picks an RQ (its own, or an entry of its RQ table by the RSS hash,
//! [`rss`]); the RQ's next receive WQE takes the frame, and its CQ gets the completion.

use super::super::cqe::CqeWords;
use super::super::csum::{self, RxCsum};
use super::super::mem::Accessor;
use super::super::memo::{Deliveries, Steered};
use super::super::parse::{parse_into, Parsed};
use super::super::rq::{self, Peeked, ScatterError, Target};
use super::super::rss::{self, Delivery};
use super::super::steer::{steer, Destinations};
use super::super::{cq, Side};
use mlx5_prm::{
    Cqe64, CqeL3HdrType, CqeL4HdrType, CqeOpcode, CqeSyndrome, FlowTableType, RqState, WqType,
};

/// A frame arrives on the port: steered from the NIC receive root table to RQs. True when at
/// least one RQ took it; otherwise it is counted as dropped.
pub(crate) fn receive(side: &mut Side<'_>, frame: &[u8]) -> bool {
    let up = side.m.port.oper_up();
    let delivered = up && steer_and_deliver(side, frame);
    if up {
        side.m.port.counters.received(frame, delivered);
    }
    if delivered {
        side.m.stats.rx_frames += 1;
        side.m.vport_counters.received(frame);
    } else {
        side.m.stats.rx_dropped += 1;
    }
    delivered
}

fn steer_and_deliver(side: &mut Side<'_>, frame: &[u8]) -> bool {
    // Steered like the last frame when its headers are the same and no command ran since
    // (see `Steered`): the root table is then the one it was steered from, as only commands
    // change the roots.
    let generation = side.m.generation;
    let known = matches!(&side.m.steered, Some((g, s)) if *g == generation && s.same_frame(frame));
    if !known {
        let Some(&root) = side.m.flow.roots.get(&FlowTableType::NicRx.raw()) else {
            return false;
        };
        let s = steer_frame(side, root, frame);
        side.m.steered = Some((generation, s));
    }
    let Some((_, s)) = &side.m.steered else {
        return false;
    };
    let (l3, l4, n) = (s.l3, s.l4, s.to.len());
    if n == 0 {
        return false;
    }
    let sums = csum::rx(frame);
    let mut delivered = false;
    for k in 0..n {
        let Some((_, s)) = &side.m.steered else {
            break;
        };
        let Some(&d) = s.to.get(k) else {
            break;
        };
        delivered |= deliver(side, d, frame, (l3, l4), sums);
    }
    delivered
}

/// Parses `frame`, steers it from table `root`, and finds the RQ each TIR picks.
fn steer_frame(side: &Side<'_>, root: u32, frame: &[u8]) -> Steered {
    let mut parsed = Parsed::new();
    parse_into(frame, &mut parsed);
    let mut tirs = Destinations::new();
    steer(side.m, root, &parsed.key, &mut tirs);
    let mut to = Deliveries::new();
    let mut fields = None;
    for &(tir, tag) in tirs.iter() {
        if let Some(d) = rss::dispatch(side.m, tir, tag, frame, &mut fields) {
            to.push(d);
        }
    }
    Steered::new(frame, (parsed.l3, parsed.l4), to)
}

/// Puts a frame into the next receive WQE of RQ `d.rqn` and writes its CQE.
fn deliver(
    side: &mut Side<'_>,
    d: Delivery,
    frame: &[u8],
    (l3, l4): (CqeL3HdrType, CqeL4HdrType),
    sums: RxCsum,
) -> bool {
    let rqn = d.rqn;
    let Ok(rq) = side.m.rqs.get(rqn) else {
        return false;
    };
    if rq.ctx.state() != Ok(RqState::Rdy) || rq.ctx.wq().wq_type() != Ok(WqType::Cyclic) {
        return false;
    }
    let (cqn, who) = (
        rq.cqn,
        Accessor {
            pd: rq.pd,
            rlky: rq.ctx.rlky(),
        },
    );
    let t = Target::Rq(rqn);
    let mut sges = rq::Sges::new();
    let index = match rq::peek_rq(rq, rqn, side.dma, &mut side.memo, &mut sges) {
        Peeked::Posted(index) => index,
        Peeked::Empty => {
            let set = rq.ctx.counter_set_id();
            crate::exec::counters::out_of_buffer(side.m, set);
            return false;
        }
        Peeked::Fault => {
            side.m.dma_faults += 1;
            return false;
        }
    };
    match rq::scatter(side.m, side.dma, who, &sges, frame) {
        Ok(()) => {}
        Err(ScatterError::TooLong) => {
            rq::fail(side, t, index, CqeSyndrome::LocalLengthErr);
            return false;
        }
        Err(ScatterError::Protection) => {
            rq::fail(side, t, index, CqeSyndrome::LocalProtErr);
            rq::rq_error(side, rqn);
            return false;
        }
    }
    rq::consume(side.m, t);
    let mut c = CqeWords::new(CqeOpcode::RespSend, d.flow_tag, index);
    c.set_rx(frame.len() as u32, l3, l4);
    c.set(Cqe64::CHECK_SUM, sums.check_sum.into());
    c.set(Cqe64::L3_OK, sums.l3_ok.into());
    c.set(Cqe64::L4_OK, sums.l4_ok.into());
    c.set(Cqe64::RSS_HASH_RESULT, d.hash.value.into());
    c.set(Cqe64::RSS_HASH_TYPE, d.hash.kind.into());
    cq::post_words(side, cqn, c)
}
