//! Fault injection: whatever the device does wrong, the driver returns a typed error naming
//! the command, status and syndrome, leaves no firmware page behind, and never panics.

mod common;

use common::bring_up_sequence;
use mlx5_driver::backend::forge::{ForgeBackend, Plan, Sites};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend as _, DmaAlloc as _};
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::Command;
use mlx5_sim::{Config, FwReady, Mode};
use std::time::Duration;

fn quick() -> HcaConfig {
    HcaConfig {
        fw_ready_timeout: Duration::from_millis(50),
        cmd_timeout: Duration::from_millis(50),
        ..HcaConfig::default()
    }
}

#[test]
fn every_bring_up_command_failing_is_reported_and_cleaned_up() {
    let mut opcodes: Vec<u16> = bring_up_sequence().iter().map(|s| s.0).collect();
    opcodes.dedup();
    for mode in [Mode::Inline, Mode::Threaded] {
        for &opcode in &opcodes {
            let (backend, device) = SimBackend::new(Config {
                mode,
                ..Config::default()
            });
            device.faults().fail_command(opcode, 0x03, 0x1234_5678);
            let err = match Hca::bring_up(backend, &quick()) {
                Ok(_) => panic!("bring-up succeeded although 0x{opcode:x} fails"),
                Err(e) => e,
            };
            match &err {
                Error::Command {
                    opcode: o,
                    status,
                    syndrome,
                    status_name,
                    command,
                    ..
                } => {
                    assert_eq!(
                        (*o, *status, *syndrome),
                        (opcode, 0x03, 0x1234_5678),
                        "{err}"
                    );
                    assert_eq!(*status_name, "bad_param_err");
                    assert!(!command.is_empty());
                }
                other => panic!("0x{opcode:x}: unexpected error {other}"),
            }
            assert!(err.to_string().contains("syndrome 0x12345678"), "{err}");
            device.faults().clear();
            assert_eq!(
                device.pages_held(),
                0,
                "0x{opcode:x} failing left firmware pages behind"
            );
        }
    }
}

#[test]
fn a_command_that_never_completes_times_out() {
    let mut opcodes: Vec<u16> = bring_up_sequence().iter().map(|s| s.0).collect();
    opcodes.dedup();
    for &opcode in &opcodes {
        let (backend, device) = SimBackend::new(Config::default());
        device.faults().never_complete(opcode);
        let err = Hca::bring_up(backend, &quick())
            .err()
            .expect("bring-up must fail");
        assert!(
            matches!(err, Error::CommandTimeout { opcode: o, .. } if o == opcode)
                || opcode == ManagePages::OPCODE,
            "0x{opcode:x}: {err}"
        );
        // A stuck MANAGE_PAGES also blocks taking pages back; every other command leaves the
        // page path free, so the device ends with none.
        if opcode != ManagePages::OPCODE {
            assert_eq!(
                device.pages_held(),
                0,
                "0x{opcode:x} hanging left firmware pages behind"
            );
        }
    }
}

#[test]
fn firmware_that_never_gets_ready() {
    let (backend, device) = SimBackend::new(Config {
        fw_ready: FwReady::Never,
        ..Config::default()
    });
    let err = Hca::bring_up(backend, &quick()).err().expect("must fail");
    assert!(matches!(err, Error::FirmwareNotReady { .. }), "{err}");
    assert!(device.commands().is_empty());
}

#[test]
fn firmware_slow_to_get_ready_is_waited_for() {
    let (backend, device) = SimBackend::new(Config {
        fw_ready: FwReady::AfterPolls(20),
        ..Config::default()
    });
    let hca = Hca::bring_up(backend, &HcaConfig::default()).expect("bring-up after 20 polls");
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
}

#[test]
fn a_health_syndrome_is_reported() {
    let (backend, device) = SimBackend::new(Config::default());
    let hca = Hca::bring_up(backend, &quick()).unwrap();
    assert!(hca.check_health().is_ok());
    device.set_health_syndrome(0x5);
    assert!(matches!(
        hca.check_health(),
        Err(Error::Health { syndrome: 0x5 })
    ));
    // Commands no longer complete: teardown fails, but without a panic.
    assert!(hca.teardown().is_err());
}

#[test]
fn page_request_storms_are_served() {
    let (backend, device) = SimBackend::new(Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let before = device.pages_held();
    device.faults().page_request_storm(50, 3);
    // The storm starts after the next command.
    hca.query::<QueryAdapter>(0, |_| {}).unwrap();
    let mut served = 0;
    for _ in 0..10 {
        served += hca.poll_events().unwrap().len();
    }
    assert_eq!(served, 50);
    assert_eq!(device.pages_held(), before + 150);
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
}

/// A deadline of zero is a deadline like any other: a MANAGE_PAGES still owned by the device
/// at the driver's first look reached the device, which may hold the pages, so they are
/// quarantined, not freed. (A timeout of zero once stood for "never sent", so these pages
/// were freed under the device.) The device runs the command and takes the pages; the forge
/// leaves the entry owned, as a device that answers late would.
#[test]
fn pages_of_a_give_that_times_out_at_once_stay_out_of_reach() {
    let (backend, device) = SimBackend::new(Config::default());
    let dma = backend.dma().clone();
    let forge = ForgeBackend::new(backend, Vec::new(), Sites(0));
    forge.plan(Plan::Owned {
        opcode: ManagePages::OPCODE,
        nth: 0,
    });
    let config = HcaConfig {
        cmd_timeout: Duration::ZERO,
        ..quick()
    };
    let err = Hca::bring_up(forge, &config)
        .err()
        .expect("bring-up must fail");
    assert!(
        matches!(err, Error::CommandTimeout { opcode, .. } if opcode == ManagePages::OPCODE),
        "{err}"
    );
    // The pages are disputed: asked back at teardown (the device returns them here), and
    // any the device kept would be quarantined. Freed as never sent, they stayed with the
    // device, outside the quarantine (16 held, 2 buffers quarantined).
    let held = device.pages_held();
    assert!(
        dma.quarantined().buffers >= held,
        "the device holds {held} pages, {} buffers quarantined",
        dma.quarantined().buffers
    );
}
