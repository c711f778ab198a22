//! Completion queues on the data path: the owner bit across ring wraps (64- and 128-byte
//! CQEs), overflow detection with its CQ error event, completion events of armed CQs
//! (solicited-only arming, arming over waiting CQEs) and moderation.

mod common;

use common::dp::{Node, Ring};
use common::rc_wqe::Wqe;
use mlx5_prm::{CompEvent, CqError, CqeOpcode, EventType, SendOpcode};
use std::time::Duration;

/// A self-connected QP (its remote QPN is itself) completing into `scq`.
fn looped(n: &Node, scq: &common::dp::Cq) -> common::dp::Qp {
    let rcq = n.cq(4, false);
    let qp = n.qp(scq, &rcq, 4);
    n.connect(&qp, qp.qpn, (true, true, true), 7);
    qp
}

fn nop(qp: &common::dp::Qp, signaled: bool) -> u16 {
    qp.post(
        &Wqe::new(SendOpcode::Nop, qp.qpn, signaled).build(),
        Ring::Doorbell,
    )
}

#[test]
fn owner_bit_flips_on_every_pass() {
    for cqe_128 in [false, true] {
        let n = Node::inline();
        let cq = n.cq(2, cqe_128);
        let qp = looped(&n, &cq);
        for i in 0..19u32 {
            let idx = nop(&qp, true);
            // The raw slot: pass parity 0 on the first pass, 1 on the second, ...
            let raw = cq.slot(i);
            assert_eq!(u32::from(raw[63] & 1), (i >> 2) & 1, "CQE {i}");
            assert_eq!(raw[63] >> 4, CqeOpcode::Req.raw());
            let c = cq.expect(CqeOpcode::Req);
            assert_eq!(c.wqe_counter(), idx);
            assert!(cq.poll().is_none(), "nothing else after CQE {i}");
        }
        let q = n.query_cq(cq.cqn);
        assert_eq!(q.cq_context().producer_counter(), 19);
        assert_eq!(q.cq_context().status(), 0);
    }
}

#[test]
fn overflow_is_detected_and_nothing_overwritten() {
    let n = Node::inline();
    let cq = n.cq(2, false);
    let qp = looped(&n, &cq);
    for _ in 0..4 {
        nop(&qp, true);
    }
    assert!(n.next_eqe().is_none());
    // The fifth completion has no room: overflow.
    nop(&qp, true);
    let q = n.query_cq(cq.cqn);
    assert_eq!(q.cq_context().status(), 0x9);
    let e = n.next_eqe().expect("a CQ error event");
    assert_eq!(e.event_type(), Ok(EventType::CqError));
    let ev = CqError::new_unchecked(&e.storage()[0x20..0x3c]);
    assert_eq!((ev.cqn(), ev.syndrome_raw()), (cq.cqn, 0x1));
    // Slot 0 still holds the first CQE; the driver sees exactly four.
    for i in 0..4 {
        assert_eq!(cq.expect(CqeOpcode::Req).wqe_counter(), i);
    }
    assert!(cq.poll().is_none());
    // A CQ in error writes nothing more.
    nop(&qp, true);
    assert!(cq.poll().is_none());
    assert!(n.dev().dropped_cqes() >= 2);
}

/// The injected overrun (`FaultInjector::overrun_cq`) is the real one: a CQ with room
/// reports the overflow as if it were full, once, and no other CQ is affected; a CQ set to
/// ignore overruns takes no notice.
#[test]
fn an_injected_overrun_reports_as_a_full_cq() {
    let n = Node::inline();
    let (other, cq) = (n.cq(4, false), n.cq(4, false));
    let (bystander, qp) = (looped(&n, &other), looped(&n, &cq));
    nop(&qp, true);
    assert_eq!(n.dev().faults().cq_overruns_pending(), 0);
    n.dev().faults().overrun_cq(cq.cqn);
    assert_eq!(n.dev().faults().cq_overruns_pending(), 1);
    nop(&bystander, true);
    assert_eq!(other.expect(CqeOpcode::Req).wqe_counter(), 0, "another CQ");
    assert_eq!(n.dev().faults().cq_overruns_pending(), 1);
    nop(&qp, true);
    assert_eq!(n.dev().faults().cq_overruns_pending(), 0, "used up");
    assert_eq!(n.query_cq(cq.cqn).cq_context().status(), 0x9);
    let e = n.next_eqe().expect("a CQ error event");
    assert_eq!(e.event_type(), Ok(EventType::CqError));
    let ev = CqError::new_unchecked(&e.storage()[0x20..0x3c]);
    assert_eq!((ev.cqn(), ev.syndrome_raw()), (cq.cqn, 0x1));
    assert_eq!(cq.expect(CqeOpcode::Req).wqe_counter(), 0);
    assert!(cq.poll().is_none(), "the overrun's completion is lost");
    nop(&qp, true);
    assert!(cq.poll().is_none(), "a CQ in error writes nothing more");
    assert!(n.next_eqe().is_none(), "one event per overrun");

    // Overrun-ignore CQs take no notice; the fault stays for the next CQ that would.
    let oi = n.cq_on(n.eqn, 2, false, |c| c.set_oi(true));
    let qp = looped(&n, &oi);
    n.dev().faults().overrun_cq(oi.cqn);
    nop(&qp, true);
    assert_eq!(n.query_cq(oi.cqn).cq_context().status(), 0);
    assert_eq!(oi.expect(CqeOpcode::Req).wqe_counter(), 0);
    assert_eq!(n.dev().faults().cq_overruns_pending(), 1);
    n.dev().faults().clear();
    assert_eq!(n.dev().faults().cq_overruns_pending(), 0);
}

#[test]
fn overrun_ignore_overwrites() {
    let n = Node::inline();
    let cq = n.cq_on(n.eqn, 2, false, |c| c.set_oi(true));
    let qp = looped(&n, &cq);
    for _ in 0..6 {
        nop(&qp, true);
    }
    assert_eq!(n.query_cq(cq.cqn).cq_context().status(), 0);
    assert!(n.next_eqe().is_none());
}

/// A completion event for `cqn` is the next EQE.
#[track_caller]
fn comp_event(n: &Node, cqn: u32) {
    let e = n.next_eqe().expect("a completion event");
    assert_eq!(e.event_type(), Ok(EventType::Comp));
    assert_eq!(
        CompEvent::new_unchecked(&e.storage()[0x20..0x3c]).cq_number(),
        cqn
    );
}

#[test]
fn armed_cqs_raise_one_completion_event() {
    let n = Node::inline();
    let cq = n.cq(4, false);
    let qp = looped(&n, &cq);
    // Not armed: CQEs but no event.
    nop(&qp, true);
    assert!(n.next_eqe().is_none());
    cq.expect(CqeOpcode::Req);
    cq.arm(false);
    assert!(n.next_eqe().is_none(), "nothing waiting at arm time");
    nop(&qp, true);
    comp_event(&n, cq.cqn);
    // Disarmed after one event.
    nop(&qp, true);
    assert!(n.next_eqe().is_none());
    // Arming while CQEs wait past the consumer index fires at once.
    cq.arm(false);
    comp_event(&n, cq.cqn);
    while cq.poll().is_some() {}
    // Unsignaled WQEs write no CQE and raise nothing.
    cq.arm(false);
    nop(&qp, false);
    assert!(n.next_eqe().is_none());
    nop(&qp, true);
    comp_event(&n, cq.cqn);
}

#[test]
fn solicited_arming_waits_for_a_solicited_completion() {
    let n = Node::inline();
    let scq = n.cq(4, false);
    let rcq = n.cq(4, false);
    let qp = n.qp(&scq, &rcq, 4);
    n.connect(&qp, qp.qpn, (false, false, false), 7);
    let buf = n.alloc(4096);
    let key = n.mkey(n.pd, buf.iova, 4096, "lr,lw");
    rcq.arm(true);
    for solicited in [false, true] {
        qp.post_recv(&[(64, key, buf.iova)]);
        let mut w = Wqe::new(SendOpcode::Send, qp.qpn, false).inline(b"x");
        if solicited {
            w = w.solicited();
        }
        qp.post(&w.build(), Ring::Doorbell);
        rcq.expect(CqeOpcode::RespSend);
        if solicited {
            comp_event(&n, rcq.cqn);
        } else {
            assert!(n.next_eqe().is_none(), "not solicited");
        }
    }
}

#[test]
// Under Miri: the moderation period is wall-clock time, which the interpreter's slowness
// passes between steps the test expects to fall inside one period.
#[cfg_attr(miri, ignore)]
fn moderation_by_count_and_period() {
    let n = Node::inline();
    let cq = n.cq_on(n.eqn, 4, false, |c| c.set_cq_max_count(3));
    let qp = looped(&n, &cq);
    cq.arm(false);
    nop(&qp, true);
    nop(&qp, true);
    assert!(n.next_eqe().is_none(), "two of three");
    nop(&qp, true);
    comp_event(&n, cq.cqn);

    // A period: one CQE, the event once cq_period microseconds have passed.
    let cq = n.cq_on(n.eqn, 4, false, |c| {
        c.set_cq_max_count(100);
        c.set_cq_period(500);
    });
    let qp = looped(&n, &cq);
    cq.arm(false);
    nop(&qp, true);
    n.dev().tick();
    assert!(n.next_eqe().is_none());
    std::thread::sleep(Duration::from_millis(2));
    n.dev().tick();
    comp_event(&n, cq.cqn);
}

#[test]
fn threaded_mode_fires_moderation_timers_on_its_own() {
    let n = Node::new(common::Host::threaded());
    let cq = n.cq_on(n.eqn, 4, false, |c| {
        c.set_cq_max_count(100);
        c.set_cq_period(200);
    });
    let qp = looped(&n, &cq);
    cq.arm(false);
    nop(&qp, true);
    n.dev().sync();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let e = loop {
        // Read the EQ without ringing its doorbell (which would tick the device).
        let e = n.host.eqe(&n.eq_ring, 0);
        if !e.owner() && e.event_type() == Ok(EventType::Comp) {
            break e;
        }
        assert!(std::time::Instant::now() < deadline, "no event");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(
        CompEvent::new_unchecked(&e.storage()[0x20..0x3c]).cq_number(),
        cq.cqn
    );
}
