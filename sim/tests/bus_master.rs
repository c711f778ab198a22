//! Bus Master Enable: while the host keeps it clear the device does no DMA and raises no
//! interrupt; the BAR writes it takes meanwhile are held in order and served when the bit is
//! set, a reset forgets them, and the hold is bounded.

mod common;

use common::{Host, Tweak};
use mlx5_prm::cmd;
use mlx5_sim::{Device, BUS_MASTER_HELD_MAX};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// QUERY_ISSI's input: 16 bytes, opcode 0x10a.
/// A command whose input and output fit in the entry (no mailbox to keep alive while it is
/// held): `opcode` with 16 bytes in and out.
fn inline_command(opcode: u16) -> Vec<u8> {
    let mut input = vec![0u8; 16];
    input[..2].copy_from_slice(&opcode.to_be_bytes());
    input
}

/// ALLOC_PD (16 bytes each way).
const ALLOC_PD: u16 = 0x800;
/// ALLOC_TRANSPORT_DOMAIN (16 bytes each way).
const ALLOC_TD: u16 = 0x816;

#[test]
fn a_command_waits_for_bus_mastering_inline() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let served = host.dev.commands_executed();
    host.dev.set_bus_master(false);
    assert!(!host.dev.bus_master());
    // The doorbell lands, but the entry is not even read: it stays hardware-owned.
    let r = host.submit(1, &inline_command(ALLOC_PD), 16, &Tweak::default());
    assert!(r.is_none(), "a command ran with bus mastering off");
    assert_eq!(host.dev.commands_executed(), served);
    assert_eq!(host.dev.held_by_bus_master(), 1);
    host.dev.set_bus_master(true);
    assert_eq!(host.dev.held_by_bus_master(), 0);
    assert_eq!(host.dev.commands_executed(), served + 1);
    // The entry came back to software, done.
    let mut own = [0u8; 1];
    host.dev
        .dma()
        .read(host.cmdq.iova + 64 + 0x3f, &mut own)
        .unwrap();
    assert_eq!(own[0] & 1, 0);
}

#[test]
fn a_command_waits_for_bus_mastering_on_the_firmware_thread() {
    let host = Host::threaded();
    host.simple::<cmd::EnableHca>(0).ok();
    host.dev.set_bus_master(false);
    let dev: Arc<Device> = host.dev.clone();
    let delay = Duration::from_millis(300);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(delay);
        let held = dev.held_by_bus_master();
        dev.set_bus_master(true);
        held
    });
    let t = Instant::now();
    let r = host.submit(0, &inline_command(ALLOC_PD), 16, &Tweak::default());
    let held = setter.join().unwrap();
    assert!(
        r.is_some_and(|r| r.delivery == 0),
        "the entry came back, delivered"
    );
    assert!(
        t.elapsed() >= delay,
        "served before bus mastering came back"
    );
    assert_eq!(held, 1, "the doorbell was held while the bit was clear");
}

#[test]
fn held_doorbells_are_served_in_the_order_written() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    host.dev.set_bus_master(false);
    let (a, b) = (inline_command(ALLOC_TD), inline_command(ALLOC_PD));
    assert!(host.submit(3, &a, 16, &Tweak::default()).is_none());
    assert!(host.submit(2, &b, 16, &Tweak::default()).is_none());
    host.dev.set_bus_master(true);
    let ops: Vec<u16> = host.dev.commands().iter().map(|c| c.opcode).collect();
    assert_eq!(&ops[ops.len() - 2..], &[ALLOC_TD, ALLOC_PD]);
}

#[test]
fn events_and_interrupts_wait_too() {
    for threaded in [false, true] {
        let host = if threaded {
            Host::threaded()
        } else {
            Host::inline()
        };
        host.bring_up();
        let uar = host.alloc_uar();
        let (eqn, ring) = host.create_eq(3, 1 << 0x0b, uar, 0);
        // Consume the EQEs already there (software owns an entry the device wrote: owner 0
        // on the first pass) and arm the EQ, so the next EQE raises its vector.
        let written = (0..8).take_while(|&i| !host.eqe(&ring, i).owner()).count() as u32;
        host.dev
            .write32(uar as usize * 4096 + 0x40, u32::from(eqn) << 24 | written);
        host.dev.sync();
        let snapshot = || {
            let mut b = vec![0u8; ring.len];
            host.dev.dma().read(ring.iova, &mut b).unwrap();
            b
        };
        let before = snapshot();
        let irqs = host.dev.interrupts(0);
        host.dev.set_bus_master(false);
        host.dev.request_pages(2);
        host.dev.sync();
        assert_eq!(snapshot(), before, "EQE written with bus mastering off");
        assert_eq!(
            host.dev.interrupts(0),
            irqs,
            "interrupt raised with bus mastering off"
        );
        assert_eq!(host.dev.held_by_bus_master(), 1);
        host.dev.set_bus_master(true);
        host.dev.sync();
        assert_ne!(
            snapshot(),
            before,
            "threaded {threaded}: the event never came"
        );
        assert!(
            host.dev.interrupts(0) > irqs,
            "threaded {threaded}: no interrupt"
        );
    }
}

#[test]
fn frames_from_the_link_are_dropped() {
    let host = Host::inline();
    host.dev.set_bus_master(false);
    assert!(!host.dev.receive_frame(&[0u8; 60]));
    assert_eq!(host.dev.frames_dropped_by_bus_master(), 1);
}

#[test]
fn a_reset_forgets_what_was_held() {
    for threaded in [false, true] {
        let host = if threaded {
            Host::threaded()
        } else {
            Host::inline()
        };
        host.simple::<cmd::EnableHca>(0).ok();
        host.dev.set_bus_master(false);
        host.dev.write32(0x18, 1);
        host.dev.sync();
        assert_eq!(host.dev.held_by_bus_master(), 1);
        host.dev.reset();
        assert_eq!(host.dev.held_by_bus_master(), 0);
        let before = host.dev.commands_executed();
        host.dev.set_bus_master(true);
        host.dev.sync();
        assert_eq!(host.dev.commands_executed(), before);
    }
}

#[test]
fn the_hold_is_bounded() {
    for threaded in [false, true] {
        let host = if threaded {
            Host::threaded()
        } else {
            Host::inline()
        };
        host.dev.set_bus_master(false);
        let n = BUS_MASTER_HELD_MAX + 500;
        for _ in 0..n {
            host.dev.write32(0x18, 1);
        }
        host.dev.sync();
        assert_eq!(host.dev.held_by_bus_master(), BUS_MASTER_HELD_MAX);
        assert_eq!(host.dev.refused_by_bus_master(), 500);
        host.dev.set_bus_master(true);
        host.dev.sync();
        assert_eq!(host.dev.held_by_bus_master(), 0);
    }
}
