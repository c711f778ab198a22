//! Event queues: EQEs in the ring with the pass-parity owner bit, consumer index doorbells,
//! arming and interrupts, overrun, and the events the device raises.

mod common;

use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::{
    CmdInterCompEvent, CompEvent, EqState, EventType, PagesReqEvent, PortChangeSubtype,
    PortStateChangeEvent, QueryEqOut,
};

const PAGE_REQUEST: u64 = 1 << 0x0b;
const PORT_CHANGE: u64 = 1 << 0x09;
const CMD: u64 = 1 << 0x0a;

fn page_request_data(e: &mlx5_prm::Eqe) -> (u16, i32) {
    let raw = e.storage();
    let ev = PagesReqEvent::new_unchecked(&raw[0x20..0x3c]);
    (ev.function_id(), ev.num_pages() as i32)
}

/// Writes the EQ consumer-index doorbell (update only, or arm).
fn doorbell(host: &Host, uar: u32, eqn: u8, ci: u32, arm: bool) {
    let offset = uar as usize * 4096 + if arm { 0x40 } else { 0x48 };
    host.dev
        .write32(offset, (u32::from(eqn) << 24) | (ci & 0xff_ffff));
}

/// Gives the regular pages the device wants, so that a page EQ created afterwards starts
/// empty (the device announces outstanding demand on a new page EQ).
fn satisfy_regular_pages(host: &Host) {
    let n = host.query_pages(cmd::QueryPagesOpMod::Regular);
    host.give_pages(n as usize);
}

#[test]
fn page_request_eqe_and_owner_bit_across_a_wrap() {
    let host = Host::inline();
    host.bring_up();
    satisfy_regular_pages(&host);
    let uar = host.alloc_uar();
    // 4 entries, so the ring wraps quickly.
    let (eqn, ring) = host.create_eq(2, PAGE_REQUEST, uar, 3);
    for i in 0..10u32 {
        host.dev.request_pages(i as i32 + 1);
        let e = host.eqe(&ring, u64::from(i % 4));
        assert_eq!(e.event_type(), Ok(EventType::PageRequest));
        assert_eq!(page_request_data(&e), (0, i as i32 + 1));
        // Pass parity: 0 on the first pass, 1 on the second, 0 on the third.
        assert_eq!(e.owner(), (i >> 2) & 1 == 1, "entry {i}");
        doorbell(&host, uar, eqn, i + 1, false);
    }
    assert_eq!(host.dev.eq_overruns(eqn), Some(0));
    // The demand shows in QUERY_PAGES (regular): 1 + 2 + ... + 10.
    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Regular), 55);
    // Negative requests offer pages back.
    host.dev.request_pages(-7);
    let e = host.eqe(&ring, 10 % 4);
    assert_eq!(page_request_data(&e).1, -7);
}

#[test]
fn overrun_is_recorded_and_the_entry_dropped() {
    let host = Host::inline();
    host.bring_up();
    satisfy_regular_pages(&host);
    let uar = host.alloc_uar();
    let (eqn, ring) = host.create_eq(2, PAGE_REQUEST, uar, 0);
    for n in 1..=4 {
        host.dev.request_pages(n);
    }
    // The ring is full: the fifth event has nowhere to go.
    host.dev.request_pages(5);
    assert_eq!(host.dev.eq_overruns(eqn), Some(1));
    assert_eq!(
        page_request_data(&host.eqe(&ring, 0)).1,
        1,
        "entry 0 not overwritten"
    );
    // Consuming one entry makes room again.
    doorbell(&host, uar, eqn, 1, false);
    host.dev.request_pages(6);
    let e = host.eqe(&ring, 0);
    assert_eq!((page_request_data(&e).1, e.owner()), (6, true));
    // QUERY_EQ reports the counters.
    let r = host
        .run::<cmd::QueryEq>(0, 0, 0, |i| i.set_eq_number(eqn))
        .ok();
    let ctx = QueryEqOut::new_unchecked(&r.out[..]);
    let ctx = ctx.eq_context_entry();
    assert_eq!((ctx.producer_counter(), ctx.consumer_counter()), (5, 1));
    assert_eq!(ctx.log_eq_size(), 2);
}

#[test]
fn arming_gates_interrupts_not_writes() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let (eqn, ring) = host.create_eq(4, PORT_CHANGE, uar, 7);
    // Not armed: the EQE is written but no interrupt fires.
    host.dev.raise_port_change(1, false);
    let e = host.eqe(&ring, 0);
    assert_eq!(e.event_type(), Ok(EventType::PortChange));
    assert_eq!(e.event_sub_type(), PortChangeSubtype::Down as u8);
    assert_eq!(
        PortStateChangeEvent::new_unchecked(&e.storage()[0x20..0x3c]).port_num(),
        1
    );
    assert_eq!(host.dev.interrupts(7), 0);
    // Arming with the entry still unconsumed fires at once.
    doorbell(&host, uar, eqn, 0, true);
    assert_eq!(host.dev.interrupts(7), 1);
    // Consume, re-arm: the next event fires once, then the EQ is disarmed.
    doorbell(&host, uar, eqn, 1, true);
    host.dev.raise_port_change(1, true);
    host.dev.raise_port_change(1, false);
    assert_eq!(host.dev.interrupts(7), 2);
    assert_eq!(
        host.eqe(&ring, 1).event_sub_type(),
        PortChangeSubtype::Active as u8
    );
    let r = host
        .run::<cmd::QueryEq>(0, 0, 0, |i| i.set_eq_number(eqn))
        .ok();
    assert_eq!(
        QueryEqOut::new_unchecked(&r.out[..])
            .eq_context_entry()
            .st(),
        Ok(EqState::Fired)
    );
    // A doorbell through another UAR page is ignored.
    let other = host.alloc_uar();
    doorbell(&host, other, eqn, 3, true);
    assert_eq!(host.dev.interrupts(7), 2);
}

#[test]
fn command_completion_events() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let (_eqn, ring) = host.create_eq(3, CMD, uar, 0);
    // The EQ's own CREATE_EQ completes by ownership only (it was handed over before the EQ
    // existed); every entry returned after it is announced (the test host uses slot 0).
    host.simple::<cmd::QueryIssi>(0).ok();
    let e = host.eqe(&ring, 0);
    assert_eq!(e.event_type(), Ok(EventType::Cmd));
    let ev = CmdInterCompEvent::new_unchecked(&e.storage()[0x20..0x3c]);
    assert_eq!(ev.command_completion_vector(), 1);
    assert!(
        host.eqe(&ring, 1).owner(),
        "entry 1 still owned by software"
    );
    let r = host.submit(
        5,
        &{
            let mut b = vec![0u8; 16];
            b[..2].copy_from_slice(&0x10au16.to_be_bytes());
            b
        },
        0x70,
        &Default::default(),
    );
    assert_eq!(r.unwrap().status(), 0);
    let e = host.eqe(&ring, 1);
    assert_eq!(
        CmdInterCompEvent::new_unchecked(&e.storage()[0x20..0x3c]).command_completion_vector(),
        1 << 5
    );
}

#[test]
fn completion_events_follow_cq_arming() {
    let host = Host::inline();
    host.bring_up();
    let uar = host.alloc_uar();
    let (eqn, ring) = host.create_eq(3, 0, uar, 2);
    let cqn = host.create_cq(eqn, uar, 6);
    // Not armed: no event.
    assert!(!host.dev.raise_completion(cqn));
    // Arm through the UAR page's 64-bit CQ doorbell: sn 1, cmd 0, ci 0, cqn.
    host.dev
        .write64(uar as usize * 4096 + 0x20, (1 << 60) | u64::from(cqn));
    assert_eq!(
        host.dev.last_cq_doorbell(uar),
        Some((1 << 60) | u64::from(cqn))
    );
    assert!(host.dev.raise_completion(cqn));
    assert!(!host.dev.raise_completion(cqn), "disarmed after one event");
    let e = host.eqe(&ring, 0);
    assert_eq!(e.event_type(), Ok(EventType::Comp));
    assert_eq!(
        CompEvent::new_unchecked(&e.storage()[0x20..0x3c]).cq_number(),
        cqn
    );
    // A 64-bit doorbell written as two halves (32-bit hosts) arms as well.
    host.dev.write32(uar as usize * 4096 + 0x20, 2 << 28);
    host.dev.write32(uar as usize * 4096 + 0x24, cqn);
    assert!(host.dev.raise_completion(cqn));
}

#[test]
fn events_without_a_subscribed_eq_change_only_state() {
    let host = Host::inline();
    host.bring_up();
    host.dev.request_pages(3);
    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Regular), 67);
    host.give_pages(67);
    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Regular), 0);
}
