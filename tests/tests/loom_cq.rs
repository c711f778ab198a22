//! A loom model of the CQ owner-bit protocol between the device (`sim/src/datapath/cq.rs`,
//! `write`) and the driver (`driver/src/cq/`: `Cursor::ready_word`, `Cq::publish`), with
//! the orderings the code uses: the device writes a CQE's body, a release fence, then the
//! dword holding opcode and owner; the driver loads that dword, checks the owner parity and
//! the opcode, an acquire fence (`Barriers::from_device`), then reads the body; it hands the
//! slot back by a release fence (`to_device`) and the consumer index in the doorbell record;
//! the device reads that index, an acquire fence, before it overwrites the slot.
//!
//! The body is a `loom::cell::UnsafeCell` (the code's volatile word stores and loads are not
//! atomic): loom fails a run where a body access is not ordered after the one before it by
//! happens-before, which is exactly a torn or stale CQE. The owner dword and the consumer
//! index are relaxed atomics (single-copy atomic words, as the device and CPU treat them).
//!
//! Each `weak_*` test drops one of the fences and must fail: that shows the model can catch
//! the bug it is for. Part of `cargo test`; `scripts/loom` runs the models alone, timed.

mod loom_cell;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_cell::{get, set};

/// Slots in the ring (log_size 1), so the device's third CQE reuses slot 0 on the next pass.
const LOG_SIZE: u32 = 1;
const SLOTS: u32 = 1 << LOG_SIZE;
/// CQEs the device writes: one full pass and one more (a wrap, owner parity flipped).
const CQES: u32 = 3;
const INVALID: u32 = 0xf;
const REQ: u32 = 0x0;

/// The fences of the protocol; each `false` is a weakened variant.
#[derive(Clone, Copy)]
struct Fences {
    /// Device: release between the CQE body and the owner dword.
    device_release: bool,
    /// Device: acquire after reading the consumer index, before reusing a slot.
    device_acquire_ci: bool,
    /// Driver: acquire after the owner check (`from_device`).
    driver_acquire: bool,
    /// Driver: release before publishing the consumer index (`to_device`).
    driver_release_ci: bool,
}

const ALL: Fences = Fences {
    device_release: true,
    device_acquire_ci: true,
    driver_acquire: true,
    driver_release_ci: true,
};

fn fence_if(on: bool, order: Ordering) {
    if on {
        fence(order);
    }
}

struct Ring {
    /// Each CQE's body (byte_cnt, qpn, ... in the real one): the sequence number it belongs to.
    body: [UnsafeCell<u64>; SLOTS as usize],
    /// The last dword: opcode in bits 7:4, owner in bit 0.
    op_own: [AtomicU32; SLOTS as usize],
    /// The doorbell record's consumer index.
    consumer: AtomicU32,
}

/// The body the device writes for CQE `p`: two halves that a torn read would mix.
fn body_of(p: u32) -> u64 {
    (u64::from(p) << 32) | u64::from(p.wrapping_mul(3) ^ 0xabcd)
}

fn run(f: Fences) {
    let mut b = loom::model::Builder::new();
    // Bounded (LOOM_MAX_PREEMPTIONS overrides): 3 preemptions cover every bug below.
    b.preemption_bound.get_or_insert(3);
    b.check(move || {
        let ring = Arc::new(Ring {
            body: [UnsafeCell::new(0), UnsafeCell::new(0)],
            // As the driver initialises every slot: opcode INVALID, owner 1.
            op_own: [
                AtomicU32::new(INVALID << 4 | 1),
                AtomicU32::new(INVALID << 4 | 1),
            ],
            consumer: AtomicU32::new(0),
        });

        let dev = ring.clone();
        let device = thread::spawn(move || {
            for p in 0..CQES {
                // Room: the slot was handed back (no overrun).
                while p.wrapping_sub(dev.consumer.load(Ordering::Relaxed)) >= SLOTS {
                    thread::yield_now();
                }
                fence_if(f.device_acquire_ci, Ordering::Acquire);
                let slot = (p & (SLOTS - 1)) as usize;
                set(&dev.body[slot], body_of(p));
                fence_if(f.device_release, Ordering::Release);
                let owner = (p >> LOG_SIZE) & 1;
                dev.op_own[slot].store(REQ << 4 | owner, Ordering::Relaxed);
            }
        });

        // The driver: poll with the owner rule, read, hand back.
        let mut ci = 0u32;
        while ci < CQES {
            let slot = (ci & (SLOTS - 1)) as usize;
            let word = ring.op_own[slot].load(Ordering::Relaxed);
            let parity = (ci >> LOG_SIZE) & 1;
            if word & 1 != parity || word >> 4 == INVALID {
                thread::yield_now();
                continue;
            }
            fence_if(f.driver_acquire, Ordering::Acquire);
            let body = get(&ring.body[slot]);
            assert_eq!(body, body_of(ci), "CQE {ci}: a stale or torn body");
            ci += 1;
            fence_if(f.driver_release_ci, Ordering::Release);
            ring.consumer.store(ci, Ordering::Relaxed);
        }
        device.join().unwrap();
    });
}

#[test]
fn owner_bit_protocol() {
    run(ALL);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_device_owner_store_without_release() {
    run(Fences {
        device_release: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_driver_reads_body_without_acquire() {
    run(Fences {
        driver_acquire: false,
        ..ALL
    });
}

/// The device overwrites a slot the driver may still be reading: the driver's release before
/// the consumer index is only half of the hand-back; the device needs the acquire too.
#[test]
#[should_panic(expected = "Causality violation")]
fn weak_device_reuses_slot_without_acquire() {
    run(Fences {
        device_acquire_ci: false,
        ..ALL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn weak_driver_publishes_consumer_without_release() {
    run(Fences {
        driver_release_ci: false,
        ..ALL
    });
}
