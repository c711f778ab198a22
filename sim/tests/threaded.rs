//! Threaded mode: a firmware thread serves doorbells while the driver polls; dropping the
//! device stops the thread.

mod common;

use common::Host;
use mlx5_prm::cmd;
use mlx5_sim::{Config, Device, Mode};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn bring_up_and_teardown_on_the_firmware_thread() {
    let host = Host::threaded();
    host.bring_up();
    let uar = host.alloc_uar();
    let (eqn, ring) = host.create_eq(3, 1 << 0x0b, uar, 0);
    host.dev.request_pages(2);
    assert_eq!(host.eqe(&ring, 0).event_type_raw(), 0x0b);
    host.run::<cmd::DestroyEq>(0, 0, 0, |i| i.set_eq_number(eqn))
        .ok();
    host.simple::<cmd::TeardownHca>(0).ok();
    let held = host.dev.pages_held();
    host.take(held).ok();
    host.simple::<cmd::DisableHca>(0).ok();
    assert_eq!(host.dev.pages_held(), 0);
    assert!(host.dev.commands().iter().all(|c| c.status == 0));
}

#[test]
fn commands_in_several_slots_complete_in_doorbell_order() {
    let host = Host::threaded();
    host.simple::<cmd::EnableHca>(0).ok();
    for slot in 0..31 {
        let mut input = vec![0u8; 16];
        input[..2].copy_from_slice(&0x10au16.to_be_bytes());
        let r = host
            .submit(slot, &input, 0x70, &Default::default())
            .unwrap();
        assert_eq!((r.delivery, r.status()), (0, 0));
    }
    assert_eq!(host.dev.commands().len(), 32);
}

#[test]
fn dropping_the_device_stops_the_thread() {
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..20 {
            let dev = Device::new(Config {
                mode: Mode::Threaded,
                ..Config::default()
            });
            dev.write32(0x18, 1); // no queue programmed: nothing to serve
            dev.sync();
            drop(dev);
        }
        done_tx.send(()).unwrap();
    });
    done_rx
        // Miri runs thousands of times slower; a hang is still a timeout there.
        .recv_timeout(Duration::from_secs(if cfg!(miri) { 900 } else { 20 }))
        .expect("devices dropped without hanging");
}

#[test]
fn many_threads_share_one_device() {
    let host = Host::threaded();
    host.bring_up();
    let dev = host.dev.clone();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let dev = dev.clone();
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    assert_eq!(dev.read32(0x04) >> 16, 5);
                    dev.read32(0x1010);
                }
            })
        })
        .collect();
    for _ in 0..50 {
        host.alloc_pd();
    }
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(host.dev.objects().pds, 50);
}
