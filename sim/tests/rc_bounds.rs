//! What a guest's RC traffic on the in-memory transport (QPs on one device, or on two
//! devices joined by a [`Wire`]) may make the model allocate. A message may be as long as the
//! device's `log_max_msg` (1 GiB); the model moves it from the gather list to the scatter
//! list (or from the rkey's range to the local list, for a READ) in steps of 64 KiB. Before,
//! it gathered the whole message into one buffer first: one 16-byte data segment made it
//! allocate the message's length, a gigabyte per WQE at the largest.
//!
//! The test binary counts its heap: the peak of live bytes while the doorbell runs must stay
//! far below the message's length. The buffers the guest's memory lives in are allocated
//! before the count starts.

mod common;

use common::dp::{Node, Pair, Ring};
use common::rc_wqe::Wqe;
use common::Host;
use mlx5_prm::{CqeOpcode, SendOpcode};
use mlx5_sim::Wire;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts the bytes live on the heap and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn count(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; the counters only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The tests share the counters (`cargo test` runs them on threads of one process).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A message of 8 MiB: 128 steps.
const LEN: usize = 8 << 20;
/// What the model may allocate while it moves one: a step's buffer and bookkeeping, far
/// from the message's length.
const BOUND: usize = 1 << 20;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 13) as u8)
        .collect()
}

/// Runs `post`, returning the most heap bytes it had live beyond what was live before.
fn peak_during(post: impl FnOnce()) -> usize {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    post();
    PEAK.load(Ordering::Relaxed).saturating_sub(base)
}

/// An 8 MiB WRITE, SEND (into a receive of three entries) and READ from `a` (on `na`) to `b`
/// (on `nb`): every byte arrives where it should, and no doorbell made the model allocate
/// more than [`BOUND`].
fn long_messages(na: &Node, nb: &Node, sync: impl Fn()) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let p = Pair::new(na, nb, (true, true, true), 7);
    // Two messages' room, and the gaps between the receive's entries.
    let room = 2 * LEN + 4096;
    let (a_buf, b_buf) = (na.alloc(room), nb.alloc(room));
    let akey = na.mkey(na.pd, a_buf.iova, room as u64, "lr,lw,rr,rw");
    let bkey = nb.mkey(nb.pd, b_buf.iova, room as u64, "lr,lw,rr,rw");
    let (a, b) = (a_buf.iova, b_buf.iova);
    let len = LEN as u64;

    na.write(a, &pattern(LEN, 1));
    let write = Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
        .raddr(b, bkey)
        .data(LEN as u32, akey, a)
        .build();
    let peak = peak_during(|| {
        p.a.post(&write, Ring::Doorbell);
        sync();
    });
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 0);
    assert!(nb.read(b, LEN) == pattern(LEN, 1), "written");
    assert!(peak < BOUND, "a {LEN}-byte WRITE allocated {peak} bytes");

    // The receive splits the message over three entries, the middle one not page aligned.
    na.write(a + len, &pattern(LEN, 2));
    let (third, rest) = (LEN as u32 / 3, LEN as u32 - 2 * (LEN as u32 / 3));
    p.b.post_recv(&[
        (third, bkey, b + len),
        (third, bkey, b + len + u64::from(third) + 100),
        (rest, bkey, b + len + 2 * u64::from(third) + 200),
    ]);
    let send = Wqe::new(SendOpcode::Send, p.a.qpn, true)
        .data(LEN as u32, akey, a + len)
        .build();
    let peak = peak_during(|| {
        p.a.post(&send, Ring::Doorbell);
        sync();
    });
    assert_eq!(p.rcq_b.expect(CqeOpcode::RespSend).byte_cnt(), LEN as u32);
    p.scq_a.expect(CqeOpcode::Req);
    let sent = pattern(LEN, 2);
    let t = third as usize;
    assert!(nb.read(b + len, t) == sent[..t], "first entry");
    assert!(
        nb.read(b + len + t as u64 + 100, t) == sent[t..2 * t],
        "second entry"
    );
    assert!(
        nb.read(b + len + 2 * t as u64 + 200, LEN - 2 * t) == sent[2 * t..],
        "third entry"
    );
    assert!(peak < BOUND, "a {LEN}-byte SEND allocated {peak} bytes");

    nb.write(b, &pattern(LEN, 3));
    let read = Wqe::new(SendOpcode::RdmaRead, p.a.qpn, true)
        .raddr(b, bkey)
        .data(LEN as u32, akey, a)
        .build();
    let peak = peak_during(|| {
        p.a.post(&read, Ring::Doorbell);
        sync();
    });
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).byte_cnt(), LEN as u32);
    assert!(na.read(a, LEN) == pattern(LEN, 3), "read");
    assert!(peak < BOUND, "a {LEN}-byte READ allocated {peak} bytes");
}

#[test]
fn long_messages_on_one_device_move_in_steps() {
    let n = Node::inline();
    long_messages(&n, &n, || {});
}

#[test]
fn long_messages_across_a_wire_move_in_steps() {
    let (na, nb) = (Node::inline(), Node::inline());
    let _wire = Wire::connect(na.dev(), nb.dev());
    long_messages(&na, &nb, || na.dev().sync());
}

/// A step boundary inside a message changes nothing at its ends: a message one byte longer
/// than a step, into a receive whose first entry ends one byte before the step does.
#[test]
fn messages_across_a_step_boundary_arrive_whole() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n = Node::new(Host::inline());
    let p = Pair::new(&n, &n, (true, true, true), 7);
    let buf = n.alloc(1 << 20);
    let key = n.mkey(n.pd, buf.iova, 1 << 20, "lr,lw,rr,rw");
    let len = (64 << 10) + 1;
    n.write(buf.iova, &pattern(len, 4));
    let dst = buf.iova + (256 << 10);
    p.b.post_recv(&[((64 << 10) - 1, key, dst), (4096, key, dst + (128 << 10))]);
    p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, true)
            .data(len as u32, key, buf.iova)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(p.rcq_b.expect(CqeOpcode::RespSend).byte_cnt(), len as u32);
    let sent = pattern(len, 4);
    let first = (64 << 10) - 1;
    assert!(n.read(dst, first) == sent[..first]);
    assert_eq!(n.read(dst + (128 << 10), 2), sent[first..]);
    assert_eq!(n.read(dst + (128 << 10) + 2, 1), [0]);
}
