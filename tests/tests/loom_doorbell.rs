//! A loom model of the send doorbell's hand-over order (`driver/src/doorbell.rs`,
//! `SendDoorbell::ring_word`) and of the receive queue's (`driver/src/eth/rx.rs`, which has
//! no doorbell: the device reads the record when a frame arrives).
//!
//! Send: the driver writes a WQE, a release fence (`to_device`), the producer counter into the
//! doorbell record, a release fence, then rings the UAR (an MMIO write naming the last WQE).
//! The device that sees the UAR write reads the record (after an acquire: in the model the
//! doorbell reaches the device through its job queue, or on the same thread) and runs every
//! WQE up to the record's counter, which may be beyond the one the doorbell named (the driver
//! posted more and has not rung yet): so it needs an acquire after the record too, and the
//! driver the fence between WQE and record, not only the one before the UAR.
//!
//! WQEs are `loom::cell::UnsafeCell`s (the code's word stores are not atomic); the record and
//! the UAR register relaxed atomics. Each `weak_*` test drops one fence and must fail.
//! Part of `cargo test`; `scripts/loom` runs the models alone, timed.

mod loom_cell;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_cell::{get, set};

/// WQEs the driver posts (into as many slots: the model leaves reuse to the CQ model).
const WQES: u32 = 2;

#[derive(Clone, Copy)]
struct Fences {
    /// Driver: release between the WQE and the doorbell record.
    wqe_before_record: bool,
    /// Driver: release between the record and the UAR write (send only).
    record_before_uar: bool,
    /// Device: acquire once the doorbell has arrived, before reading the record.
    device_acquire_uar: bool,
    /// Device: acquire after reading the record, before reading the WQEs it covers.
    device_acquire_record: bool,
}

const ALL: Fences = Fences {
    wqe_before_record: true,
    record_before_uar: true,
    device_acquire_uar: true,
    device_acquire_record: true,
};

fn fence_if(on: bool, order: Ordering) {
    if on {
        fence(order);
    }
}

struct Queue {
    wqes: [UnsafeCell<u64>; WQES as usize],
    /// The doorbell record's counter (send or receive).
    record: AtomicU32,
    /// The UAR BlueFlame register: the last rung WQE's index + 1 (0: never rung).
    uar: AtomicU32,
}

fn wqe_of(i: u32) -> u64 {
    (u64::from(i) << 40) | 0x0a00_0000 | u64::from(i)
}

fn queue() -> Arc<Queue> {
    Arc::new(Queue {
        wqes: [UnsafeCell::new(0), UnsafeCell::new(0)],
        record: AtomicU32::new(0),
        uar: AtomicU32::new(0),
    })
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    // Bounded (LOOM_MAX_PREEMPTIONS overrides): 3 preemptions cover every bug below.
    b.preemption_bound.get_or_insert(3);
    b
}

/// The send queue: the device runs on doorbells.
fn send(f: Fences) {
    builder().check(move || {
        let q = queue();
        let dev = q.clone();
        let device = thread::spawn(move || {
            let mut done = 0u32;
            while done < WQES {
                let rung = dev.uar.load(Ordering::Relaxed);
                if rung <= done {
                    thread::yield_now();
                    continue;
                }
                fence_if(f.device_acquire_uar, Ordering::Acquire);
                let counter = dev.record.load(Ordering::Relaxed);
                assert!(
                    counter >= rung,
                    "the doorbell for WQE {} arrived before the record ({counter})",
                    rung - 1
                );
                fence_if(f.device_acquire_record, Ordering::Acquire);
                for k in done..counter {
                    let w = get(&dev.wqes[k as usize]);
                    assert_eq!(w, wqe_of(k), "WQE {k} read before it was written");
                }
                done = counter;
            }
        });
        for i in 0..WQES {
            set(&q.wqes[i as usize], wqe_of(i));
            fence_if(f.wqe_before_record, Ordering::Release);
            q.record.store(i + 1, Ordering::Relaxed);
            fence_if(f.record_before_uar, Ordering::Release);
            q.uar.store(i + 1, Ordering::Relaxed);
        }
        device.join().unwrap();
    });
}

/// The receive queue: no doorbell; the device reads the record when a frame comes.
fn receive(f: Fences) {
    builder().check(move || {
        let q = queue();
        let dev = q.clone();
        let device = thread::spawn(move || {
            let mut done = 0u32;
            while done < WQES {
                let counter = dev.record.load(Ordering::Relaxed);
                if counter == done {
                    thread::yield_now();
                    continue;
                }
                fence_if(f.device_acquire_record, Ordering::Acquire);
                let w = get(&dev.wqes[done as usize]);
                assert_eq!(w, wqe_of(done), "RQ WQE {done} read before it was written");
                done += 1;
            }
        });
        for i in 0..WQES {
            set(&q.wqes[i as usize], wqe_of(i));
            fence_if(f.wqe_before_record, Ordering::Release);
            q.record.store(i + 1, Ordering::Relaxed);
        }
        device.join().unwrap();
    });
}

#[test]
fn send_doorbell_order() {
    send(ALL);
}

#[test]
fn receive_record_order() {
    receive(ALL);
}

/// The device runs up to the record's counter, past the WQE the doorbell named: that WQE is
/// covered only by the fence between WQE and record.
#[test]
#[should_panic(expected = "Causality violation")]
fn weak_send_without_fence_before_record() {
    send(Fences {
        wqe_before_record: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "arrived before the record")]
fn weak_send_without_fence_before_uar() {
    send(Fences {
        record_before_uar: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "arrived before the record")]
fn weak_send_device_without_acquire_on_doorbell() {
    send(Fences {
        device_acquire_uar: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_send_device_without_acquire_on_record() {
    send(Fences {
        device_acquire_record: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_receive_without_fence_before_record() {
    receive(Fences {
        wqe_before_record: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_receive_device_without_acquire_on_record() {
    receive(Fences {
        device_acquire_record: false,
        ..ALL
    });
}
