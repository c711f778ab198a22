//! Fault injection and firmware failure: failing, hanging and storming commands, and a health
//! syndrome.

mod common;

use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::rt::Command;
use mlx5_sim::{Config, Faults};

#[test]
fn fail_command_is_sticky_until_cleared() {
    let host = Host::inline();
    host.dev
        .faults()
        .fail_command(cmd::EnableHca::OPCODE, 0x4, 0xdead_beef);
    for _ in 0..2 {
        host.simple::<cmd::EnableHca>(0).fails(0x4, 0xdead_beef);
    }
    host.dev.faults().clear();
    host.simple::<cmd::EnableHca>(0).ok();
    let log = host.dev.commands();
    assert_eq!(log.len(), 3);
    assert_eq!((log[0].status, log[0].syndrome), (0x4, 0xdead_beef));
}

#[test]
fn initial_faults_from_the_config() {
    let host = Host::new(Config {
        faults: Faults {
            fail_commands: vec![(cmd::QueryIssi::OPCODE, 0x1, 7)],
            ..Faults::default()
        },
        ..Config::default()
    });
    host.simple::<cmd::QueryIssi>(0).fails(0x1, 7);
}

#[test]
fn never_complete_keeps_the_entry() {
    let host = Host::inline();
    host.dev.faults().never_complete(cmd::EnableHca::OPCODE);
    let mut input = vec![0u8; 16];
    cmd::EnableHca::input(&mut input[..], 0).unwrap();
    assert!(host.submit(0, &input, 16, &Default::default()).is_none());
    assert!(host.dev.commands().is_empty(), "the command never ran");
    // Other opcodes still work.
    host.simple::<cmd::QueryIssi>(0).ok();
    host.dev.faults().clear();
    host.simple::<cmd::EnableHca>(0).ok();
}

#[test]
fn page_request_storm() {
    let host = Host::inline();
    host.bring_up();
    // The regular pages first, so that the new page EQ starts empty.
    let regular = host.query_pages(cmd::QueryPagesOpMod::Regular);
    host.give_pages(regular as usize);
    let uar = host.alloc_uar();
    let (_eqn, ring) = host.create_eq(4, 1 << 0x0b, uar, 0);
    host.dev.faults().page_request_storm(5, 3);
    host.simple::<cmd::QueryIssi>(0).ok();
    for i in 0..5 {
        let e = host.eqe(&ring, i);
        assert_eq!(e.event_type_raw(), 0x0b);
        assert_eq!(common::be32(e.storage(), 0x24), 3);
    }
    // Only once.
    host.simple::<cmd::QueryIssi>(0).ok();
    assert!(
        host.eqe(&ring, 5).owner(),
        "slot 5 still holds its initial owner bit"
    );
    assert_eq!(host.query_pages(cmd::QueryPagesOpMod::Regular), 15);
}

#[test]
fn health_syndrome_stops_the_firmware() {
    let host = Host::inline();
    host.simple::<cmd::EnableHca>(0).ok();
    let before = host.dev.read32(0x1010);
    std::thread::sleep(mlx5_sim::HEALTH_COUNTER_PERIOD * 2);
    assert!(host.dev.read32(0x1010) > before, "the counter runs");
    host.dev.set_health_syndrome(0x8);
    let frozen = host.dev.read32(0x1010);
    assert_eq!(frozen >> 24, 0x8);
    std::thread::sleep(mlx5_sim::HEALTH_COUNTER_PERIOD * 2);
    assert_eq!(host.dev.read32(0x1010), frozen, "the counter stops");
    // Health buffer: rfr set, synd 8.
    assert_eq!(host.dev.read32(0x238) >> 31, 1);
    assert_eq!((host.dev.read32(0x23c) >> 16) & 0xff, 0x8);
    let mut input = vec![0u8; 16];
    cmd::QueryIssi::input(&mut input[..], 0).unwrap();
    assert!(host.submit(0, &input, 0x70, &Default::default()).is_none());
    host.dev.set_health_syndrome(0);
    host.simple::<cmd::QueryIssi>(0).ok();
}
