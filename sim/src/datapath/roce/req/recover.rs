//! The requester's timers and its way out: the RNR wait ending, the local ACK timeout
//! (resend or, with no retries left, fail), and the error completions when the QP moves to
//! ERR.

use super::*;

/// Timers of QP `qpn` at `now`: the end of an RNR wait resends; the local ACK timeout
/// resends or, with no retries left, fails the head WQE.
pub(crate) fn tick(side: &mut Side<'_>, qpn: u32, now: Instant) -> bool {
    let rts = side
        .m
        .qps
        .get(qpn)
        .is_ok_and(|q| q.ctx.state() == Ok(QpState::Rts));
    if !rts {
        return false;
    }
    let Some(v) = qpv(side, qpn) else {
        return false;
    };
    let Some(mut r) = take(side, qpn) else {
        return false;
    };
    let mut failure = None;
    if r.rnr_until.is_some_and(|t| now >= t) {
        r.rnr_until = None;
        let from = r.una;
        resend(side, &v, &mut r, from);
        arm_at(&v, &mut r, now);
    } else if r.deadline.is_some_and(|t| now >= t) {
        rc_event(side.m, qpn, |c: &mut RcCounts| &mut c.local_ack_timeout_err);
        let from = r.una;
        failure = retry(side, &v, &mut r, from, now);
    }
    let busy = !r.inflight.is_empty() || r.rnr_until.is_some();
    put(side, qpn, r);
    if let Some(f) = failure {
        fail(side, qpn, f);
    } else {
        run(side, qpn, None);
    }
    busy
}

/// The head WQE of `qpn` fails with `syndrome` (the QP's state is the caller's business).
pub(crate) fn fail_head(side: &mut Side<'_>, qpn: u32, syndrome: CqeSyndrome) {
    let head = side
        .m
        .qps
        .get_mut(qpn)
        .ok()
        .and_then(|q| q.roce.as_mut())
        .and_then(|c| c.req.as_mut())
        .and_then(|r| r.inflight.pop_front());
    if let Some(e) = head {
        if let Some(cqn) = side.m.qps.get(qpn).ok().and_then(|q| q.cqn_snd) {
            let c = cq::err_cqe(CqeOpcode::ReqErr, syndrome, qpn, e.index, e.opcode);
            cq::post_err(side, cqn, c);
        }
    }
}

/// The head WQE of `qpn` fails: its error CQE, then the QP moves to ERR (which flushes the
/// rest, see [`flush`]).
pub(super) fn fail(side: &mut Side<'_>, qpn: u32, f: Failure) {
    fail_head(side, qpn, f.syndrome);
    rc::set_err(side, qpn, false);
}

/// QP `qpn` moved to ERR: every WQE in flight completes with a flush error, in order.
pub(crate) fn flush(side: &mut Side<'_>, qpn: u32) {
    let inflight = match side
        .m
        .qps
        .get_mut(qpn)
        .ok()
        .and_then(|q| q.roce.as_mut())
        .and_then(|c| c.req.as_mut())
    {
        Some(r) => {
            r.deadline = None;
            r.rnr_until = None;
            r.rd_atomic = 0;
            std::mem::take(&mut r.inflight)
        }
        None => return,
    };
    let Some(cqn) = side.m.qps.get(qpn).ok().and_then(|q| q.cqn_snd) else {
        return;
    };
    for e in inflight {
        let c = cq::err_cqe(
            CqeOpcode::ReqErr,
            CqeSyndrome::WrFlushErr,
            qpn,
            e.index,
            e.opcode,
        );
        cq::post_err(side, cqn, c);
    }
}
