//! What a guest can make the model keep is bounded: the command log is a ring, and the
//! firmware thread's queue of BAR writes is bounded without blocking the writer forever.

mod common;

use common::dp::Node;
use common::eth::Eth;
use common::Host;
use mlx5_prm::cmd;
use mlx5_prm::RqState;
use mlx5_sim::{Link, COMMAND_LOG};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[test]
fn the_command_log_keeps_the_most_recent_commands() {
    let host = Host::inline();
    host.simple::<cmd::QueryIssi>(0).ok();
    let extra = 10;
    // ENABLE_HCA fails after the first (already enabled) but is recorded: the cheapest
    // command to repeat, all inline.
    for _ in 0..COMMAND_LOG + extra {
        host.simple::<cmd::EnableHca>(0);
    }
    let log = host.dev.commands();
    assert_eq!(log.len(), COMMAND_LOG);
    assert_eq!(
        host.dev.commands_executed(),
        (COMMAND_LOG + extra + 1) as u64
    );
    assert!(
        log.iter().all(|r| r.opcode == 0x104),
        "the oldest went first"
    );
}

/// A link whose first frame blocks the firmware thread (the thread that transmits it) until
/// the test opens the gate.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    frames: Mutex<u32>,
}

impl Link for Gate {
    fn transmit(&self, _frame: &[u8]) {
        *self.frames.lock().unwrap() += 1;
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
}

#[test]
fn a_stuck_firmware_thread_neither_grows_the_queue_nor_blocks_writes_forever() {
    let e = Eth::new(Node::new(Host::threaded()), &[[2, 0, 0, 0, 0, 1]]);
    let dev = e.n.dev().clone();
    let gate = Arc::new(Gate::default());
    dev.attach_link(gate.clone());
    let mut hdr = [0u8; 18];
    hdr[..6].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    e.send(&hdr, 0, 46);
    let t = Instant::now();
    while *gate.frames.lock().unwrap() == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "no frame sent");
        std::thread::sleep(Duration::from_millis(1));
    }
    // The firmware thread is stuck in the link. EQ doorbells of an EQ that does not exist fill
    // the queue, then each further write waits 100 ms for room and is dropped.
    let uar = e.n.uar as usize * 4096 + 0x48;
    let queue = 1024;
    let t = Instant::now();
    for ci in 0..queue + 3 {
        dev.write32(uar, 0xee00_0000 | ci as u32);
    }
    let waited = t.elapsed();
    assert_eq!(dev.dropped_bar_writes(), 3);
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    *gate.open.lock().unwrap() = true;
    gate.cv.notify_all();
    dev.sync();
    assert_eq!(dev.dropped_bar_writes(), 3);
    assert_eq!(dev.tx_frames(), 1);
}

#[test]
fn a_bar_write_visits_only_the_queues_with_work_pending() {
    let e = Eth::new(Node::inline(), &[[2, 0, 0, 0, 0, 1]]);
    let dev = e.n.dev().clone();
    // Many idle CQs: nothing for the device to do on its own.
    let cqs: Vec<_> = (0..200).map(|_| e.n.cq(2, false)).collect();
    dev.tick();
    assert_eq!((dev.objects().cqs, dev.pending_work()), (202, 0));
    // An RQ in ERR: its posted receives are flushed at every visit, so it stays listed ...
    e.post_recv(0, 2048);
    let to = |from: RqState, to: RqState| {
        e.n.host
            .run::<cmd::ModifyRq>(0, 0, 0, |i| {
                i.set_rqn(e.rqn);
                i.set_rq_state(from);
                i.ctx_mut().set_state(to);
            })
            .ok();
    };
    to(RqState::Rdy, RqState::Err);
    assert_eq!(dev.pending_work(), 1);
    e.post_recv(2048, 2048);
    dev.tick();
    assert!(
        e.rcq.poll().is_some() && e.rcq.poll().is_some(),
        "both receives flushed"
    );
    assert_eq!(dev.pending_work(), 1);
    // ... until it leaves ERR: the next visit drops it.
    to(RqState::Err, RqState::Rst);
    dev.tick();
    assert_eq!(dev.pending_work(), 0);
    drop(cqs);
}
