//! A loom model of the command queue's ownership handshake between the driver
//! (`driver/src/cmd/mod.rs`, `CmdQueue::exec`) and the device (`sim/src/cmdq.rs`).
//!
//! The driver fills the entry (input, lengths, mailbox pointers) with the ownership bit set,
//! a release fence (`to_device`), then rings the command doorbell (an MMIO write). The device
//! that takes the doorbell (after an acquire: its job queue, or the same thread) checks the
//! ownership bit, reads the input, writes the output, a release fence, the delivery status
//! with ownership still set, a release fence, then ownership cleared (`give_back`). The
//! driver polls the ownership bit, and once it reads 0, an acquire fence (`from_device`), then
//! reads the status and the output.
//!
//! Input and output are `loom::cell::UnsafeCell`s (plain volatile stores in the code); the
//! byte with status and ownership and the doorbell register are relaxed atomics. Each
//! `weak_*` test drops one fence and must fail. Part of `cargo test`; `scripts/loom` runs the models alone, timed.

mod loom_cell;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_cell::{get, set};

#[derive(Clone, Copy)]
struct Fences {
    /// Driver: release between filling the entry and the doorbell.
    driver_release: bool,
    /// Device: acquire once the doorbell has arrived.
    device_acquire: bool,
    /// Device: release between the output and the status.
    device_release_output: bool,
    /// Device: release between the status and clearing ownership.
    device_release_status: bool,
    /// Driver: acquire after reading ownership 0.
    driver_acquire: bool,
}

const ALL: Fences = Fences {
    driver_release: true,
    device_acquire: true,
    device_release_output: true,
    device_release_status: true,
    driver_acquire: true,
};

fn fence_if(on: bool, order: Ordering) {
    if on {
        fence(order);
    }
}

/// The status byte: delivery status in bits 7:1, ownership in bit 0.
const OWNED: u32 = 1;
const STATUS_OK: u32 = 0;
/// Before the device writes it: a status no device returns, so a stale read shows.
const STATUS_UNSET: u32 = 0x7f;

struct Entry {
    input: UnsafeCell<u64>,
    output: UnsafeCell<u64>,
    status_own: AtomicU32,
    doorbell: AtomicU32,
}

const INPUT: u64 = 0x0101_0000_0000_0042;

fn output_for(input: u64) -> u64 {
    input ^ 0xffff_0000
}

fn run(f: Fences) {
    let mut b = loom::model::Builder::new();
    // Bounded (LOOM_MAX_PREEMPTIONS overrides): 3 preemptions cover every bug below.
    b.preemption_bound.get_or_insert(3);
    b.check(move || {
        let e = Arc::new(Entry {
            input: UnsafeCell::new(0),
            output: UnsafeCell::new(0),
            status_own: AtomicU32::new(STATUS_UNSET << 1),
            doorbell: AtomicU32::new(0),
        });
        let dev = e.clone();
        let device = thread::spawn(move || {
            while dev.doorbell.load(Ordering::Relaxed) == 0 {
                thread::yield_now();
            }
            fence_if(f.device_acquire, Ordering::Acquire);
            // As the model does: an entry the device does not own is not executed (the
            // driver then times out); here it must always be owned.
            let so = dev.status_own.load(Ordering::Relaxed);
            assert_eq!(so & OWNED, OWNED, "doorbell for an entry not handed over");
            let input = get(&dev.input);
            assert_eq!(input, INPUT, "the device read a stale input");
            set(&dev.output, output_for(input));
            fence_if(f.device_release_output, Ordering::Release);
            dev.status_own
                .store(STATUS_OK << 1 | OWNED, Ordering::Relaxed);
            fence_if(f.device_release_status, Ordering::Release);
            dev.status_own.store(STATUS_OK << 1, Ordering::Relaxed);
        });

        // The driver: fill, hand over, ring, poll, read.
        set(&e.input, INPUT);
        e.status_own
            .store(STATUS_UNSET << 1 | OWNED, Ordering::Relaxed);
        fence_if(f.driver_release, Ordering::Release);
        e.doorbell.store(1, Ordering::Relaxed);
        loop {
            let so = e.status_own.load(Ordering::Relaxed);
            if so & OWNED == 0 && so >> 1 != STATUS_UNSET {
                break;
            }
            thread::yield_now();
        }
        fence_if(f.driver_acquire, Ordering::Acquire);
        // The status read again after the barrier, as `exec` does (`status_raw`).
        let status = e.status_own.load(Ordering::Relaxed) >> 1;
        assert_eq!(status, STATUS_OK, "a stale delivery status");
        let out = get(&e.output);
        assert_eq!(out, output_for(INPUT), "a stale output");
        device.join().unwrap();
    });
}

#[test]
fn ownership_handshake() {
    run(ALL);
}

/// Loom finds the ownership bit not yet visible to the device (it would as well find the
/// input read racing with the driver's write).
#[test]
#[should_panic(expected = "doorbell for an entry not handed over")]
fn weak_driver_rings_without_release() {
    run(Fences {
        driver_release: false,
        ..ALL
    });
}

/// Loom finds the ownership bit not yet visible to the device (it would as well find the
/// input read racing with the driver's write).
#[test]
#[should_panic(expected = "doorbell for an entry not handed over")]
fn weak_device_takes_doorbell_without_acquire() {
    run(Fences {
        device_acquire: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_device_output_without_release() {
    run(Fences {
        device_release_output: false,
        device_release_status: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_driver_reads_output_without_acquire() {
    run(Fences {
        driver_acquire: false,
        ..ALL
    });
}
