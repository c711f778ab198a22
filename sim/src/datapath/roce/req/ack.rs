//! What comes back to a requester: ACKs and NAKs (cumulative completion, go-back-N resends,
//! RNR waits, remote errors), read responses scattered at their offset, atomic
//! acknowledgements.

use super::*;

/// An acknowledgement of every PSN up to `psn`: completes the sends and writes it covers;
/// a read or atomic it passes without its response was lost (an implied NAK): resend it.
pub(super) fn acked(side: &mut Side<'_>, v: &Qpv, r: &mut Requester, psn: u32) -> bool {
    let mut progress = false;
    if psn_diff(psn, r.una) >= 0 && psn_diff(psn, r.next_psn) < 0 {
        r.una = psn_add(psn, 1);
        progress = true;
    }
    while let Some(e) = r.inflight.front() {
        if e.failed.is_some() {
            break;
        }
        if e.op != Op::Nop && psn_diff(e.last_psn(), psn) > 0 {
            break;
        }
        if e.waits_for_response() {
            // Covered by an ACK but its response never came.
            rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.implied_nak_seq_err);
            let from = psn_add(e.first_psn, e.next_resp);
            r.una = from;
            resend(side, v, r, from);
            break;
        }
        let Some(e) = r.inflight.pop_front() else {
            break;
        };
        let byte_cnt = if e.op == Op::Send { e.len as u32 } else { 0 };
        complete(side, v.qpn, &e, byte_cnt);
    }
    progress
}

/// After progress: retries start over and the timer restarts.
pub(super) fn progressed(v: &Qpv, r: &mut Requester, now: Instant) {
    r.retries_left = v.retry_count;
    r.rnr_left = v.rnr_retry;
    r.read_gap = None;
    r.deadline = None;
    arm_at(v, r, now);
}

pub(super) fn arm(v: &Qpv, r: &mut Requester) {
    if r.deadline.is_none() {
        arm_at(v, r, Instant::now());
    }
}

pub(super) fn arm_at(v: &Qpv, r: &mut Requester, now: Instant) {
    r.deadline = match (r.inflight.is_empty(), v.timeout) {
        (false, Some(t)) => Some(now + t),
        _ => None,
    };
}

/// A response packet (ACK, NAK, read response, atomic acknowledgement) for QP `dqpn`.
pub(crate) fn response(side: &mut Side<'_>, pkt: &Packet<'_>) {
    let qpn = pkt.bth.dqpn;
    let ready = side.m.qps.get(qpn).is_ok_and(|q| {
        q.ctx.state() == Ok(QpState::Rts) && q.roce.as_ref().is_some_and(|c| c.req.is_some())
    });
    if !ready {
        side.m.roce_stats.unknown_qpn += 1;
        return;
    }
    let Some(v) = qpv(side, qpn) else {
        return;
    };
    let Some(mut r) = take(side, qpn) else {
        return;
    };
    let failure = on_response(side, &v, &mut r, pkt);
    put(side, qpn, r);
    match failure {
        Some(f) => fail(side, qpn, f),
        // The window may have opened.
        None => run(side, qpn, None),
    }
}

pub(super) fn on_response(
    side: &mut Side<'_>,
    v: &Qpv,
    r: &mut Requester,
    pkt: &Packet<'_>,
) -> Option<Failure> {
    let psn = pkt.bth.psn;
    let now = Instant::now();
    let before = psn_add(psn, PSN_MASK);
    match pkt.shape.kind {
        Kind::Ack => {
            let syn = pkt.aeth.syndrome;
            match aeth::kind(syn) {
                aeth::KIND_ACK => {
                    if acked(side, v, r, psn) {
                        progressed(v, r, now);
                    }
                    None
                }
                aeth::KIND_RNR => {
                    // A NAK acknowledges every PSN before the one it names: that is progress
                    // too, and gives the retries back (else a long message over a lossy
                    // link would use them all up while moving forward).
                    if acked(side, v, r, before) {
                        progressed(v, r, now);
                    }
                    rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.rnr_nak_retry_err);
                    if r.rnr_left == 0 {
                        rc_event(side.m, v.qpn, |c: &mut RcCounts| {
                            &mut c.req_rnr_retries_exceeded
                        });
                        return Some(Failure {
                            syndrome: CqeSyndrome::RnrRetryExcErr,
                        });
                    }
                    if r.rnr_left != RNR_INFINITE {
                        r.rnr_left -= 1;
                    }
                    let wait = RNR_TIMER_US[usize::from(syn & 0x1f)];
                    r.rnr_until = Some(now + Duration::from_micros(wait.into()));
                    r.deadline = None;
                    None
                }
                // An RNR wait already resends from the NAKed PSN.
                aeth::KIND_NAK if syn == aeth::NAK_PSN_SEQUENCE && r.rnr_until.is_some() => None,
                aeth::KIND_NAK => {
                    if acked(side, v, r, before) {
                        progressed(v, r, now);
                    }
                    let syndrome = match syn {
                        aeth::NAK_PSN_SEQUENCE => {
                            rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.packet_seq_err);
                            return retry(side, v, r, psn, now);
                        }
                        aeth::NAK_REMOTE_ACCESS => {
                            rc_event(side.m, v.qpn, |c: &mut RcCounts| {
                                &mut c.req_remote_access_errors
                            });
                            CqeSyndrome::RemoteAccessErr
                        }
                        aeth::NAK_REMOTE_OPERATIONAL => CqeSyndrome::RemoteOpErr,
                        _ => {
                            rc_event(side.m, v.qpn, |c: &mut RcCounts| {
                                &mut c.req_remote_invalid_request
                            });
                            CqeSyndrome::RemoteInvalReqErr
                        }
                    };
                    // Only a NAK for the head WQE (after the ACK above) fails it.
                    match r.inflight.front() {
                        Some(e)
                            if psn_diff(psn, e.first_psn) >= 0
                                && psn_diff(e.last_psn(), psn) >= 0 =>
                        {
                            Some(Failure { syndrome })
                        }
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        Kind::ReadResponse => read_response(side, v, r, pkt, now),
        Kind::AtomicAck => {
            acked(side, v, r, before);
            let matches = r.inflight.front().is_some_and(|e| {
                matches!(e.op, Op::Atomic { .. }) && e.first_psn == psn && e.failed.is_none()
            });
            if !matches {
                return None;
            }
            let e = r.inflight.pop_front()?;
            r.rd_atomic = r.rd_atomic.saturating_sub(1);
            r.una = psn_add(psn, 1);
            if !scatter_at(side, v, &e.dest, 0, &pkt.atomic_ack.to_be_bytes()) {
                r.inflight.push_front(e);
                return Some(Failure {
                    syndrome: CqeSyndrome::LocalProtErr,
                });
            }
            complete(side, v.qpn, &e, 8);
            progressed(v, r, now);
            None
        }
        _ => None,
    }
}

/// A sequence-error NAK or a timeout: resend from `from` while retries are left.
pub(super) fn retry(
    side: &mut Side<'_>,
    v: &Qpv,
    r: &mut Requester,
    from: u32,
    now: Instant,
) -> Option<Failure> {
    if r.inflight.is_empty() {
        return None;
    }
    if r.retries_left == 0 {
        rc_event(side.m, v.qpn, |c: &mut RcCounts| {
            &mut c.req_transport_retries_exceeded
        });
        return Some(Failure {
            syndrome: CqeSyndrome::TransportRetryExcErr,
        });
    }
    r.retries_left -= 1;
    resend(side, v, r, from);
    r.deadline = None;
    arm_at(v, r, now);
    None
}

pub(super) fn read_response(
    side: &mut Side<'_>,
    v: &Qpv,
    r: &mut Requester,
    pkt: &Packet<'_>,
    now: Instant,
) -> Option<Failure> {
    let psn = pkt.bth.psn;
    // Everything before the read is implicitly acknowledged; find the read it belongs to.
    let at = r.inflight.iter().position(|e| {
        e.op == Op::Read
            && e.failed.is_none()
            && psn_diff(psn, e.first_psn) >= 0
            && psn_diff(e.last_psn(), psn) >= 0
    })?;
    let first = r.inflight[at].first_psn;
    acked(side, v, r, psn_add(first, PSN_MASK));
    let e = r.inflight.front()?;
    if e.op != Op::Read || e.first_psn != first {
        return None;
    }
    let i = psn_diff(psn, first) as u32;
    if i != e.next_resp {
        if i > e.next_resp {
            // A response is missing: ask again from it, once (the ones behind the gap,
            // still arriving, are dropped until the resent responses come back).
            let from = psn_add(first, e.next_resp);
            if r.read_gap == Some(from) {
                return None;
            }
            r.read_gap = Some(from);
            rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.implied_nak_seq_err);
            return retry(side, v, r, from, now);
        }
        return None;
    }
    let mtu = u64::from(v.mtu);
    let off = u64::from(i) * mtu;
    let expect = e.len.saturating_sub(off).min(mtu) as usize;
    let last = pkt.shape.ends_message();
    if pkt.payload.len() != expect || last != (i + 1 == e.npkts) {
        return None;
    }
    let dest = e.dest.clone();
    if !scatter_at(side, v, &dest, off, pkt.payload) {
        return Some(Failure {
            syndrome: CqeSyndrome::LocalProtErr,
        });
    }
    let e = r.inflight.front_mut()?;
    e.next_resp += 1;
    r.una = psn_add(psn, 1);
    if last {
        let e = r.inflight.pop_front()?;
        r.rd_atomic = r.rd_atomic.saturating_sub(1);
        complete(side, v.qpn, &e, e.len as u32);
    }
    progressed(v, r, now);
    None
}

/// Writes `data` into the scatter list `sges` at byte `off` (see [`rq::place`]).
pub(super) fn scatter_at(
    side: &mut Side<'_>,
    v: &Qpv,
    sges: &[rq::Sge],
    off: u64,
    data: &[u8],
) -> bool {
    rq::place(side, v.requester.who, sges, off, data).is_ok()
}
