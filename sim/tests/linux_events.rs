//! The event side of the Linux probe: command-completion EQEs (slot bitmask, owner parity
//! across wraps, consumer index, one interrupt per arm on the EQ's MSI-X vector), page
//! requests including release-all, the command observer and the ledger of unimplemented
//! requests.

mod common;

use common::linux::{Linux, Ring, CTRL_VECTOR, PAGES_SLOT};
use common::linux_flow::{function_enable, function_open};
use common::Tweak;
use mlx5_prm::rt::Command;
use mlx5_prm::{cmd, CmdInterCompEvent, CmdStatus, EventType};
use mlx5_sim::{syndrome as syn, CommandTrace, Config};
use std::cell::Cell;
use std::sync::{Arc, Mutex};

/// A device initialised the Linux way, with a UAR.
fn initialised() -> Linux {
    let l = Linux::new(Config::linux_probe_only());
    function_enable(&l);
    function_open(&l);
    let r = l.simple::<cmd::AllocUar>(0).ok();
    l.uar
        .set(mlx5_prm::AllocUarOut::new_unchecked(&r.out[..]).uar());
    l
}

/// A small command EQ (4 entries) on `vector`, not armed.
fn small_cmd_eq(l: &Linux, vector: u16) -> Ring {
    let (eqn, ring) = l
        .host
        .create_eq(2, 1 << EventType::Cmd.raw(), l.uar.get(), vector);
    Ring {
        eqn,
        ring,
        log_size: 2,
        ci: Cell::new(0),
    }
}

/// QUERY_ISSI in `slot`, checked by ownership only.
fn query_issi_in(l: &Linux, slot: u32) {
    let mut input = vec![0u8; 16];
    cmd::QueryIssi::input(&mut input[..], 0).unwrap();
    let r = l
        .host
        .submit(slot, &input, 0x70, &Tweak::default())
        .unwrap();
    assert_eq!(r.status(), 0);
}

#[test]
fn command_completions_across_wraps_with_one_interrupt_per_arm() {
    let l = initialised();
    let eq = small_cmd_eq(&l, 5);
    let dev = l.host.dev.clone();
    assert_eq!(dev.interrupts(5), 0);
    // Not armed: EQEs are written, no interrupt.
    query_issi_in(&l, 3);
    assert_eq!(dev.interrupts(5), 0);
    let e = l.poll(&eq);
    assert_eq!(e.len(), 1);
    assert_eq!(
        CmdInterCompEvent::new_unchecked(&e[0].storage()[0x20..0x3c]).command_completion_vector(),
        1 << 3
    );
    // Arm: the next completion fires once; the one after it, with no re-arm, does not.
    l.arm(&eq);
    query_issi_in(&l, 7);
    query_issi_in(&l, PAGES_SLOT);
    assert_eq!(dev.interrupts(5), 1);
    let e = l.poll(&eq);
    let vectors: Vec<u32> = e
        .iter()
        .map(|e| {
            CmdInterCompEvent::new_unchecked(&e.storage()[0x20..0x3c]).command_completion_vector()
        })
        .collect();
    assert_eq!(vectors, [1 << 7, 1 << PAGES_SLOT]);
    // Arming with nothing new waiting does not fire; the next EQE does.
    l.arm(&eq);
    assert_eq!(dev.interrupts(5), 1);
    // Ten more, re-arming after each as the handler does: the ring (4 entries) wraps twice
    // and the pass parity of the owner bit follows.
    for k in 0..10u32 {
        query_issi_in(&l, k % 31);
        assert_eq!(dev.interrupts(5), 2 + u64::from(k));
        let e = l.poll(&eq);
        assert_eq!(e.len(), 1, "round {k}");
        let index = eq.ci.get() - 1;
        assert_eq!(e[0].owner(), (index >> 2) & 1 == 1);
        l.arm(&eq);
    }
    assert_eq!(dev.eq_overruns(eq.eqn), Some(0));
    assert_eq!(dev.interrupts(CTRL_VECTOR), 0, "only the EQ's own vector");
}

#[test]
fn page_requests_release_all() {
    let l = initialised();
    let dev = l.host.dev.clone();
    let pages_eq = l.create_eq(1, 1 << EventType::PageRequest.raw());
    // The announcement of the regular pages.
    let e = l.poll(&pages_eq);
    let n = Linux::page_request(&e[0]).2;
    l.give(n as usize).ok();
    l.arm(&pages_eq);
    let held = dev.pages_held();
    assert_eq!(held, l.pages.borrow().len());
    // Linux set release_all_pages: firmware may let go of all pages in one event.
    let before = dev.interrupts(CTRL_VECTOR);
    assert_eq!(dev.release_all_pages(), Some(held));
    assert_eq!(
        dev.interrupts(CTRL_VECTOR),
        before + 1,
        "the armed pages EQ fired"
    );
    let e = l.poll(&pages_eq);
    assert_eq!(Linux::page_request(&e[0]), (true, 0, 0));
    assert_eq!(dev.pages_held(), 0);
    // The driver frees them without a command; a TAKE now returns none.
    l.pages.borrow_mut().clear();
    assert!(l.take(768).is_empty());

    // Without the capability in force, nothing happens.
    let plain = Linux::new(Config::linux_probe_only());
    plain.host.bring_up();
    assert!(!plain.general(true).release_all_pages());
    assert_eq!(plain.host.dev.release_all_pages(), None);
    assert!(plain.host.dev.pages_held() > 0);
}

#[test]
fn the_observer_sees_every_command_and_may_call_back() {
    let l = Linux::new(Config::linux_probe_only());
    let dev = l.host.dev.clone();
    let seen: Arc<Mutex<Vec<(CommandTrace, usize)>>> = Arc::default();
    let (sink, device) = (seen.clone(), Arc::downgrade(&dev));
    dev.set_command_observer(Some(Arc::new(move |t: &CommandTrace| {
        // Calling into the device from the observer must not deadlock.
        let objects = device.upgrade().map_or(0, |d| d.objects().total());
        sink.lock().unwrap().push((t.clone(), objects));
    })));
    l.host.simple::<cmd::EnableHca>(0).ok();
    l.host
        .simple::<cmd::InitHca>(0)
        .fails(CmdStatus::BadSysStateErr as u8, syn::INIT_PAGES_MISSING);
    // A descriptor error: the command does not run, the trace says why.
    let mut input = vec![0u8; 16];
    cmd::QueryIssi::input(&mut input[..], 0).unwrap();
    let bad = Tweak {
        entry_type: Some(3),
        ..Tweak::default()
    };
    l.host.submit(4, &input, 0x70, &bad).unwrap();
    dev.set_command_observer(None);
    l.host.simple::<cmd::QueryIssi>(0).ok();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "removed observers see nothing");
    let (enable, init, rejected) = (&seen[0].0, &seen[1].0, &seen[2].0);
    assert_eq!(
        (enable.opcode, enable.status, enable.slot),
        (cmd::EnableHca::OPCODE, 0, 0)
    );
    assert_eq!(enable.input.len(), 0x10);
    assert_eq!(init.status, CmdStatus::BadSysStateErr as u8);
    assert_eq!(init.syndrome, syn::INIT_PAGES_MISSING);
    assert_eq!(&init.output[..8], &[4, 0, 0, 0, 0x5e, 0x02, 0, 8]);
    assert_eq!(rejected.opcode, cmd::QueryIssi::OPCODE);
    assert_eq!(rejected.slot, 4);
    assert_eq!(
        rejected.delivery,
        mlx5_prm::CmdDeliveryStatus::CmdDescrErr.raw()
    );
    assert!(rejected.output.is_empty());
}

#[test]
fn unimplemented_commands_are_answered_and_listed() {
    let l = Linux::new(Config::linux_probe_only());
    l.host.simple::<cmd::EnableHca>(0).ok();
    let unknown = |opcode: u16, op_mod: u16| {
        let mut input = vec![0u8; 16];
        input[..2].copy_from_slice(&opcode.to_be_bytes());
        input[6..8].copy_from_slice(&op_mod.to_be_bytes());
        l.host.exec(&input, 16)
    };
    // Commands a 6.12 probe would send with other capabilities: SET_MONITOR_COUNTER,
    // ADD_VXLAN_UDP_DPORT.
    for _ in 0..3 {
        unknown(0x774, 0).fails(CmdStatus::BadOpErr as u8, syn::UNKNOWN_OPCODE);
    }
    unknown(0x827, 2).fails(CmdStatus::BadOpErr as u8, syn::UNKNOWN_OPCODE);
    let report = l.host.dev.unimplemented_commands();
    assert_eq!(report.not_listed, 0);
    let c = &report.commands;
    assert_eq!(c.len(), 2);
    assert_eq!((c[0].opcode, c[0].op_mod, c[0].count), (0x774, 0, 3));
    assert_eq!((c[1].opcode, c[1].op_mod, c[1].count), (0x827, 2, 1));
    assert!(c.iter().all(|c| c.register_id.is_none()
        && c.status == CmdStatus::BadOpErr as u8
        && c.syndrome == syn::UNKNOWN_OPCODE));
    // A guest inventing opcodes cannot grow the ledger without bound.
    for op_mod in 0..2 * mlx5_sim::MAX_UNIMPLEMENTED as u16 {
        unknown(0x775, op_mod);
    }
    let report = l.host.dev.unimplemented_commands();
    assert_eq!(report.commands.len(), mlx5_sim::MAX_UNIMPLEMENTED);
    assert_eq!(
        report.not_listed,
        2 * mlx5_sim::MAX_UNIMPLEMENTED as u64 - (mlx5_sim::MAX_UNIMPLEMENTED as u64 - 2)
    );
    // Known commands refused for other reasons are not "unimplemented".
    l.host.simple::<cmd::InitHca>(0);
    assert_eq!(
        l.host.dev.unimplemented_commands().commands.len(),
        mlx5_sim::MAX_UNIMPLEMENTED
    );
}
