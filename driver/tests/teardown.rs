//! Teardown never frees memory the device may still own. Each teardown command (TEARDOWN_HCA,
//! MANAGE_PAGES taking pages back, DISABLE_HCA) and each queue destroy fails with every status
//! and, in turn, never completes; after a health syndrome no command completes at all. Each
//! time, every firmware page the device still holds and every ring of an object it still has
//! stays mapped, in the backend's quarantine, and is reported; it is released only when the
//! last handle to the backend's allocator goes. Also: page requests beyond the limit are
//! refused before anything is allocated, and no event of a batch is lost when one fails.

mod common;

use mlx5_driver::backend::sim::{SimBackend, SimDma};
use mlx5_driver::backend::{Backend, DmaAlloc};
use mlx5_driver::cq::Cq;
use mlx5_driver::eq::Event;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::mr::Region;
use mlx5_driver::qp::Qp;
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::Command;
use mlx5_prm::CmdStatus;
use mlx5_sim::{Config, Device};
use std::sync::Arc;
use std::time::Duration;

fn quick() -> HcaConfig {
    HcaConfig {
        cmd_timeout: Duration::from_millis(30),
        ..HcaConfig::default()
    }
}

/// A model, an HCA on it, and a handle to the backend's allocator that outlives the HCA.
fn up() -> (Hca<SimBackend>, Arc<Device>, SimDma) {
    let (be, dev) = SimBackend::new(Config::default());
    let dma = be.dma().clone();
    (Hca::bring_up(be, &quick()).unwrap(), dev, dma)
}

/// How a command is made to go wrong.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Status(u8),
    Hang,
}

fn faults() -> Vec<Fault> {
    let mut all: Vec<Fault> = CmdStatus::ALL
        .iter()
        .filter(|s| **s != CmdStatus::Ok)
        .map(|s| Fault::Status(s.raw()))
        .collect();
    all.push(Fault::Hang);
    all
}

fn inject(dev: &Device, opcode: u16, fault: Fault) {
    match fault {
        Fault::Status(s) => dev
            .faults()
            .fail_command(opcode, s, 0xbad0_0000 | u32::from(s)),
        Fault::Hang => dev.faults().never_complete(opcode),
    }
}

/// What the allocator still maps must be exactly what it quarantined, and cover every page
/// the device holds; once the last allocator handle goes, nothing is mapped.
fn check_quarantine(dev: &Device, dma: SimDma, what: &str) {
    let q = dma.quarantined();
    assert_eq!(
        dev.dma().regions(),
        q.buffers,
        "{what}: memory left mapped outside the quarantine, or quarantined memory freed"
    );
    let pages = q.buffers.min(dev.pages_held());
    assert!(
        q.buffers >= dev.pages_held() && pages == dev.pages_held(),
        "{what}: the device holds {} pages, {} buffers quarantined",
        dev.pages_held(),
        q.buffers
    );
    assert_eq!(
        dev.dma_faults(),
        0,
        "{what}: the device met unmapped memory"
    );
    drop(dma);
    assert_eq!(dev.dma().regions(), 0, "{what}: released with the backend");
}

#[test]
fn every_teardown_command_failing_or_hanging_frees_nothing_the_device_holds() {
    for opcode in [TeardownHca::OPCODE, ManagePages::OPCODE, DisableHca::OPCODE] {
        for fault in faults() {
            let (hca, dev, dma) = up();
            let held = dev.pages_held();
            assert!(held > 0);
            inject(&dev, opcode, fault);
            let what = format!("0x{opcode:x} {fault:?}");
            match hca.teardown() {
                Err(Error::Teardown {
                    first,
                    buffers,
                    bytes,
                }) => {
                    assert!(buffers > 0 && bytes >= buffers * 4096, "{what}: {first}");
                    if let Fault::Status(s) = fault {
                        assert_eq!(first.status(), Some(s), "{what}: {first}");
                    }
                }
                other => panic!("{what}: teardown gave {other:?}"),
            }
            if opcode == ManagePages::OPCODE {
                assert_eq!(dev.pages_held(), held, "{what}: no page came back");
            }
            check_quarantine(&dev, dma, &what);
        }
    }
}

#[test]
fn after_a_health_syndrome_nothing_is_sent_and_everything_is_kept() {
    let (hca, dev, dma) = up();
    let sent = dev.commands().len();
    dev.set_health_syndrome(0x7);
    match hca.teardown() {
        Err(Error::Teardown { first, .. }) => {
            assert!(matches!(*first, Error::Health { syndrome: 0x7 }), "{first}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        dev.commands().len(),
        sent,
        "no command sent to a failed device"
    );
    assert!(dev.pages_held() > 0);
    check_quarantine(&dev, dma, "health");
}

/// A queue destroy that fails or hangs: the queue's memory, and what it uses (its CQs, posted
/// regions, the pool's buffers), stays in quarantine; the rest is freed.
#[test]
fn every_queue_destroy_failing_or_hanging_keeps_its_memory() {
    let destroys = [
        DestroyCq::OPCODE,
        DestroyQp::OPCODE,
        DestroyMkey::OPCODE,
        DestroySq::OPCODE,
        DestroyRq::OPCODE,
    ];
    for opcode in destroys {
        for fault in faults() {
            let (hca, dev, dma) = up();
            let what = format!("0x{opcode:x} {fault:?}");
            {
                let cq = Cq::create(&hca, 6).unwrap();
                let qp = Qp::create(&hca, &cq, &cq, &common::qp_config(4)).unwrap();
                let region = Region::register(&hca, 4096, common::ALL).unwrap();
                let pool = Pool::new(&hca, 64, 2048).unwrap();
                let eth = EthQueues::create(&pool, &EthConfig::default()).unwrap();
                inject(&dev, opcode, fault);
                drop((eth, region, qp, cq));
                drop(pool);
            }
            let q = hca.quarantined();
            assert!(q.buffers > 0, "{what}: nothing quarantined");
            // The device still has the object whose destroy failed (and what depends on
            // it); every ring it could write is still mapped.
            assert!(dev.objects().total() > 5, "{what}");
            assert_eq!(dev.dma_faults(), 0, "{what}");
            dev.faults().clear();
            let _ = hca.teardown();
            assert_eq!(dev.dma().regions(), dma.quarantined().buffers, "{what}");
            drop(dma);
            assert_eq!(dev.dma().regions(), 0, "{what}");
        }
    }
}

/// A request for `i32::MAX` pages is refused before anything is allocated, and the device is
/// told the pages will not come (MANAGE_PAGES, op_mod "cannot give").
#[test]
fn a_page_request_beyond_the_limit_is_refused_without_allocating() {
    let (hca, dev, _dma) = up();
    let (held, allocated) = (dev.pages_held(), dev.dma().allocated());
    dev.request_pages(i32::MAX);
    let e = hca.poll_events().unwrap_err();
    match e {
        Error::PageLimit {
            requested, limit, ..
        } => assert_eq!((requested, limit), (i32::MAX as u64, 1 << 19)),
        other => panic!("{other}"),
    }
    assert_eq!(dev.dma().allocated(), allocated, "nothing allocated");
    assert_eq!(dev.pages_held(), held);
    let last = dev.commands().last().cloned().unwrap();
    assert_eq!(
        (last.opcode, last.op_mod),
        (ManagePages::OPCODE, 0),
        "cannot give"
    );
    // The event is recorded all the same.
    let (events, total) = hca.recent_events();
    assert!(events.contains(&Event::PageRequest {
        function_id: 0,
        num_pages: i32::MAX
    }));
    assert_eq!(total, events.len() as u64);
    hca.teardown().unwrap();
}

/// The limit counts what the device already holds; requests within it are served.
#[test]
fn the_page_limit_is_configurable() {
    let (be, dev) = SimBackend::new(Config::default());
    let config = HcaConfig {
        max_firmware_pages: 200,
        ..quick()
    };
    let hca = Hca::bring_up(be, &config).unwrap();
    let held = dev.pages_held();
    assert_eq!(held, 112);
    dev.request_pages(88);
    hca.poll_events().unwrap();
    assert_eq!(dev.pages_held(), 200);
    dev.request_pages(1);
    assert!(matches!(
        hca.poll_events(),
        Err(Error::PageLimit {
            requested: 1,
            held: 200,
            limit: 200
        })
    ));
    assert_eq!(dev.pages_held(), 200);
    hca.teardown().unwrap();
}

/// One page request of a batch failing loses none of the others: all are recorded, the
/// good ones served, and the first error returned.
#[test]
fn no_event_of_a_batch_is_lost_when_one_page_request_fails() {
    let (hca, dev, _dma) = up();
    let held = dev.pages_held();
    dev.request_pages(4);
    dev.request_pages(i32::MAX);
    dev.request_pages(6);
    dev.raise_port_change(1, false);
    assert!(matches!(hca.poll_events(), Err(Error::PageLimit { .. })));
    assert_eq!(
        dev.pages_held(),
        held + 10,
        "the other requests were served"
    );
    let (events, total) = hca.recent_events();
    let pages: Vec<i32> = events
        .iter()
        .filter_map(|e| match e {
            Event::PageRequest { num_pages, .. } => Some(*num_pages),
            _ => None,
        })
        .collect();
    assert_eq!(pages, [4, i32::MAX, 6]);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::PortChange { port: 1, .. })));
    assert_eq!(total, 4);
    hca.teardown().unwrap();
}

/// The event log and the command history keep the last N and count all.
#[test]
fn logs_are_bounded() {
    let (be, dev) = SimBackend::new(Config::default());
    let config = HcaConfig {
        log_capacity: 8,
        ..quick()
    };
    let hca = Hca::bring_up(be, &config).unwrap();
    for _ in 0..20 {
        dev.raise_port_change(1, true);
        hca.poll_events().unwrap();
    }
    let (events, total) = hca.recent_events();
    assert_eq!((events.len(), total), (8, 20));
    assert_eq!(hca.history().len(), 8);
    assert_eq!(hca.commands_run(), dev.commands().len() as u64);
    assert_eq!(
        hca.history().last().map(|c| c.opcode),
        dev.commands().last().map(|c| c.opcode)
    );
    hca.teardown().unwrap();
}

/// After a function reset the device owns none of the host's memory, so what a failed destroy
/// left in quarantine may go ([`DmaAlloc::release_quarantine`]) while the allocator lives on:
/// here through the model's allocator, in `forged_device.rs` through the forging wrapper.
#[test]
fn a_function_reset_lets_the_quarantine_go() {
    let (hca, dev, dma) = up();
    let cq = Cq::create(&hca, 6).unwrap();
    inject(
        &dev,
        DestroyCq::OPCODE,
        Fault::Status(CmdStatus::ResBusy.raw()),
    );
    drop(cq);
    let q = hca.quarantined();
    assert!(
        q.buffers > 0 && q.bytes >= 64 << 6,
        "the CQ's ring is kept: {q:?}"
    );
    let mapped = dev.dma().regions();
    dev.faults().clear();
    dev.reset();
    assert_eq!(dev.objects().total(), 0, "the reset left objects behind");
    // SAFETY: the function reset took every object and page from the device; it writes none
    // of the quarantined memory any more.
    unsafe { dma.release_quarantine() };
    assert_eq!(dma.quarantined().buffers, 0);
    assert_eq!(
        dev.dma().regions(),
        mapped - q.buffers,
        "released but still mapped"
    );
    // Releasing again has nothing to release.
    // SAFETY: as above.
    unsafe { dma.release_quarantine() };
    assert_eq!(dev.dma().regions(), mapped - q.buffers);
    drop(hca);
    drop(dma);
    assert_eq!(dev.dma().regions(), 0);
}
