//! The data path: what the device does between commands. Send doorbells (and BlueFlame
//! copies) make it run send queues up to the counter the driver published in the doorbell
//! record; RC WQEs act on the peer QP's memory and receive queue; Ethernet SQs put frames on
//! the port, and frames from the port are steered to RQs; completions go to CQ rings with
//! events for armed CQs.
//!
//! Everything here works on a [`Side`]: one device's model and memory, locked. An RC
//! operation whose peer QP lives on the device at the other end of a [`Wire`](crate::Wire)
//! works on two sides, locked in a fixed order by the caller.

pub(crate) mod cq;
pub(crate) mod cqe;
pub(crate) mod csum;
pub(crate) mod eth;
pub(crate) mod fcs;
pub(crate) mod matcher;
pub(crate) mod mem;
pub(crate) mod memo;
pub(crate) mod parse;
pub(crate) mod pending;
pub(crate) mod pps;
pub(crate) mod rc;
pub(crate) mod roce;
pub(crate) mod rq;
pub(crate) mod rss;
pub(crate) mod sendq;
pub(crate) mod steer;

use crate::clock::{real_time_word, Stamp};
use crate::dma::DmaSpace;
use crate::faults::FaultInjector;
use crate::model::Model;
use memo::Memo;
use mlx5_prm::{QpState, RqState, SqState};
use std::time::Instant;

/// One device's state and memory, locked for the data path.
pub(crate) struct Side<'a> {
    pub m: &'a mut Model,
    pub dma: &'a DmaSpace,
    /// Doorbell records read during this lock (see [`memo`]).
    pub memo: Memo,
    /// The device's fault injection, where the data path may fail WQEs or overrun CQs on
    /// request (executing WQEs, frames arriving); `None` for queues a command flushes.
    pub faults: Option<&'a FaultInjector>,
    /// The UTC clock at [`Side::now`]'s reading, as a real-time timestamp, once a queue in
    /// the real-time format has completed.
    real_time: Option<u64>,
}

impl<'a> Side<'a> {
    /// The locked model `m` and its memory, nothing read yet.
    pub fn new(m: &'a mut Model, dma: &'a DmaSpace) -> Side<'a> {
        Side {
            m,
            dma,
            memo: Memo::default(),
            faults: None,
            real_time: None,
        }
    }

    /// This side with the device's fault injection.
    pub fn with_faults(self, faults: &'a FaultInjector) -> Side<'a> {
        Side {
            faults: Some(faults),
            ..self
        }
    }

    /// The device clock's ticks for a CQE timestamp: read once per lock of the model (a
    /// session), at its first completion. Everything one lock does (a doorbell's run of WQEs
    /// and, in loopback, the frames' arrival; a batch of frames from the wire) happens at one
    /// instant of the model's time, as no other work can interleave with it; the microseconds
    /// a batch takes to simulate are not device time. Reading the monotonic clock per CQE cost
    /// more than the rest of a small frame's completion.
    pub fn now(&mut self) -> u64 {
        match self.m.clock_reading {
            Some(t) => t,
            None => {
                let t = self.m.clock.ticks();
                self.m.clock_reading = Some(t);
                t
            }
        }
    }

    /// A CQE timestamp in format `stamp`, at [`Side::now`]'s instant: the ticks, or the UTC
    /// clock at those ticks as seconds and nanoseconds (`clock.rs`).
    #[inline]
    pub fn stamp(&mut self, stamp: Stamp) -> u64 {
        let ticks = self.now();
        match stamp {
            Stamp::FreeRunning => ticks,
            Stamp::RealTime => match self.real_time {
                Some(t) => t,
                None => {
                    let t = real_time_word(self.m.clock.utc_at_ticks(ticks));
                    self.real_time = Some(t);
                    t
                }
            },
        }
    }
}

/// The side the peer QP of an RC operation lives on: the other device when a wire connects
/// one, else this one.
pub(crate) fn peer<'s, 'a>(
    local: &'s mut Side<'a>,
    remote: &'s mut Option<&mut Side<'a>>,
) -> &'s mut Side<'a> {
    match remote {
        Some(r) => r,
        None => local,
    }
}

/// A send doorbell through UAR page `uar` for queue `qn` (the control segment's QP or SQ
/// number): runs that queue if it exists and rings through this page; otherwise the
/// doorbell is ignored and counted.
pub(crate) fn doorbell<'a>(
    local: &mut Side<'a>,
    remote: Option<&mut Side<'a>>,
    uar: u32,
    qn: u32,
    bf: Option<&[u8]>,
) {
    if let Ok(qp) = local.m.qps.get(qn) {
        if qp.uar == uar {
            if local.m.rc_transport == crate::RcTransport::Roce {
                roce::req::run(local, qn, bf);
                roce::drain(local);
            } else {
                rc::run(local, remote, qn, bf);
            }
            return;
        }
    } else if let Ok(sq) = local.m.sqs.get(qn) {
        if sq.uar == uar {
            eth::run(local, qn, bf);
            return;
        }
    }
    local.m.stats.doorbells_ignored += 1;
}

/// A frame arriving at the port: RoCEv2 for one of the device's addresses goes to the RC
/// transport (when RC QPs run on RoCE), anything else to Ethernet steering. True when it was
/// delivered (or, for RoCE, taken).
pub(crate) fn receive(side: &mut Side<'_>, frame: &[u8]) -> bool {
    // A port that is down takes nothing (the Ethernet path counts the drop).
    if side.m.rc_transport == crate::RcTransport::Roce
        && side.m.port.oper_up()
        && roce::receive(side, frame)
    {
        return true;
    }
    eth::receive(side, frame)
}

/// Work the device does on its own: pulse the PPS output pins whose time has come (`pps.rs`),
/// retry sends stalled on receiver-not-ready, flush queues
/// in error (receives posted to a QP or RQ in ERR complete with flush errors), go on with
/// SQ runs that stopped with the port's queue full, and fire
/// completion events whose moderation period has passed. Only the objects listed in
/// [`Pending`](pending::Pending) are visited; those with nothing left to do leave the list.
pub(crate) fn kick<'a>(local: &mut Side<'a>, mut remote: Option<&mut Side<'a>>) {
    pps::outputs(local);
    if local.m.pending.is_empty() {
        return;
    }
    let qps: Vec<u32> = local.m.pending.qps.iter().copied().collect();
    for qpn in qps {
        let state = local
            .m
            .qps
            .get(qpn)
            .map(|q| (q.ctx.state(), q.rnr.is_some()));
        match state {
            Ok((Ok(QpState::Err), _)) => {
                rq::flush(local, rq::Target::Qp(qpn));
                let dbr = local.m.qps.get(qpn).map(|q| q.ctx.dbr_addr());
                if dbr.is_ok_and(|dbr| sendq::counter(local.dma, dbr).is_some()) {
                    rc::run(local, None, qpn, None);
                }
            }
            Ok((Ok(QpState::Rts), true)) => rc::run(local, remote.as_deref_mut(), qpn, None),
            _ => {}
        }
        let still = local.m.qps.get(qpn).is_ok_and(|q| {
            q.ctx.state() == Ok(QpState::Err)
                || (q.ctx.state() == Ok(QpState::Rts) && q.rnr.is_some())
        });
        if !still {
            local.m.pending.qps.remove(&qpn);
        }
    }
    // Queues in ERR whose doorbell record is gone (freed before the queue was destroyed) are
    // left alone rather than counted as a DMA fault at every look.
    let sqs: Vec<u32> = local.m.pending.sqs.iter().copied().collect();
    for sqn in sqs {
        let dbr = match local.m.sqs.get(sqn) {
            Ok(s) if s.ctx.state() == Ok(SqState::Err) => s.ctx.wq().dbr_addr(),
            _ => {
                local.m.pending.sqs.remove(&sqn);
                continue;
            }
        };
        if sendq::counter(local.dma, dbr).is_some() {
            eth::run(local, sqn, None);
        }
    }
    resume_tx(local);
    if !local.m.pending.roce.is_empty() {
        let now = Instant::now();
        let qps: Vec<u32> = local.m.pending.roce.iter().copied().collect();
        for qpn in qps {
            // Both halves: the requester's timers and unsent packets, the responder's read
            // still being answered.
            let requester = roce::req::tick(local, qpn, now);
            let responder = roce::resp::resume(local, qpn);
            if !requester && !responder {
                local.m.pending.roce.remove(&qpn);
            }
        }
        roce::drain(local);
    }
    let rqs: Vec<u32> = local.m.pending.rqs.iter().copied().collect();
    for rqn in rqs {
        match local.m.rqs.get(rqn) {
            Ok(r) if r.ctx.state() == Ok(RqState::Err) => rq::flush(local, rq::Target::Rq(rqn)),
            _ => {
                local.m.pending.rqs.remove(&rqn);
            }
        }
    }
    cq::timers(local.m, local.dma, Instant::now());
}

/// True when a run of an SQ stopped with the port's queue full: the caller lets the frames
/// leave, then calls [`resume_tx`].
pub(crate) fn tx_backlog(side: &Side<'_>) -> bool {
    !side.m.pending.tx.is_empty()
}

/// Runs again the SQs whose runs stopped with the port's queue full; true when one stopped
/// again.
pub(crate) fn resume_tx(side: &mut Side<'_>) -> bool {
    let sqs = std::mem::take(&mut side.m.pending.tx);
    for sqn in sqs {
        eth::run(side, sqn, None);
    }
    tx_backlog(side)
}

/// True while the device may have work of its own pending (see [`kick`]; a PPS output pin
/// with a pulse to come counts), so that the firmware thread of threaded mode wakes up for
/// it. An object that moved on stays listed
/// until the next `kick` looks at it.
pub(crate) fn busy(m: &Model) -> bool {
    !m.pending.is_empty() || m.clock.outputs_pending()
}

/// A QP command moved QP `qpn` to ERR: what is posted completes with flush errors.
pub(crate) fn qp_to_err(m: &mut Model, dma: &DmaSpace, qpn: u32) {
    let mut side = Side::new(m, dma);
    rc::set_err(&mut side, qpn, true);
}

/// MODIFY_SQ moved SQ `sqn` to ERR.
pub(crate) fn sq_to_err(m: &mut Model, dma: &DmaSpace, sqn: u32) {
    m.pending.sqs.insert(sqn);
    eth::run(&mut Side::new(m, dma), sqn, None);
}

/// MODIFY_RQ moved RQ `rqn` to ERR.
pub(crate) fn rq_to_err(m: &mut Model, dma: &DmaSpace, rqn: u32) {
    m.pending.rqs.insert(rqn);
    rq::flush(&mut Side::new(m, dma), rq::Target::Rq(rqn));
}
