//! Linux's TX error recovery against the model, played in process: a send fails
//! (`FaultInjector::bad_lkey_sends`, the same error CQE as a real unknown lkey), the SQ goes
//! to ERR and flushes what follows; the driver polls its CQ as `mlx5e_poll_tx_cq` does
//! (every CQE completes the WQEs from its consumer counter up to the CQE's wqe_counter),
//! asks QUERY_SQ for the state (`mlx5e_tx_reporter_err_cqe_recover`), waits until every
//! posted WQE has completed (`mlx5e_wait_for_sq_flush`: cc == pc), moves the SQ
//! ERR → RST → RDY (`mlx5e_health_sq_to_ready`), restarts its counters at 0
//! (`mlx5e_reset_txqsq_cc_pc`) and sends again from WQE index 0.

mod common;

use common::tx::{parse, payload, Spec, Tx, Wqe};
use mlx5_prm::{CqeOpcode, ErrCqe, SendOpcode, SqState};
use mlx5_sim::{Config, Faults};
use std::collections::HashMap;

const REQ: u8 = 0x0;
const REQ_ERR: u8 = 0xd;
const LOCAL_PROT: u8 = 0x4;
const FLUSH: u8 = 0x5;

/// The driver's side of the SQ, as mlx5e keeps it: the WQEBBs of the WQE at each ring slot
/// (`wqe_info[].num_wqebbs`) and the consumer counter.
#[derive(Default)]
struct Driver {
    wqebbs: HashMap<u16, u16>,
    cc: u16,
}

impl Driver {
    /// Posts `w` (without ringing) and remembers its size.
    fn post(&mut self, t: &Tx, w: &Wqe) -> u64 {
        self.wqebbs.insert(t.pc() % 64, w.wqebbs());
        t.post(w)
    }

    /// Polls the CQ dry as `mlx5e_poll_tx_cq`: for each CQE, completes WQEs from `cc` up to
    /// and including the one at the CQE's wqe_counter. Returns (opcode, syndrome, counter)
    /// of each CQE.
    fn poll(&mut self, t: &Tx) -> Vec<(u8, u8, u16)> {
        let mut seen = Vec::new();
        while let Some(raw) = t.e.scq.poll() {
            let c = ErrCqe::new_unchecked(raw);
            let counter = c.wqe_counter();
            for step in 0.. {
                assert!(step < 64, "wqe_counter {counter} is no WQE's start");
                let last = self.cc == counter;
                self.cc = self.cc.wrapping_add(self.wqebbs[&(self.cc % 64)]);
                if last {
                    break;
                }
            }
            let syndrome = if c.opcode_raw() == REQ_ERR {
                c.syndrome_raw()
            } else {
                0
            };
            seen.push((c.opcode_raw(), syndrome, counter));
        }
        seen
    }

    /// The recovery: QUERY_SQ says ERR, every WQE completed, ERR → RST → RDY, counters at 0.
    fn recover(&mut self, t: &Tx) {
        assert_eq!(t.state(), SqState::Err);
        assert_eq!(self.cc, t.pc(), "every posted WQE completed (flushed)");
        t.modify(SqState::Err, SqState::Rst);
        assert_eq!(t.state(), SqState::Rst);
        t.modify(SqState::Rst, SqState::Rdy);
        assert_eq!(t.state(), SqState::Rdy);
        t.e.sq_pc.set(0);
        self.cc = 0;
        self.wqebbs.clear();
    }
}

/// A SEND of `len` bytes of the data buffer behind TCP/IPv4 headers, L3/L4 checksums.
fn send(t: &Tx, len: usize) -> Wqe {
    Wqe::eth(SendOpcode::Send, 0xc0, 0, &Spec::TCP4.headers(len)).data(t.e.key, t.e.buf, len as u32)
}

#[test]
fn a_failed_send_is_recovered_as_mlx5e_does() {
    let t = Tx::new();
    t.e.n.write(t.e.buf, &payload(4096));
    let mut d = Driver::default();

    // Two sends go out unsignaled (xmit_more), then the fault, then more WQEs: the first of
    // them fails, the rest are flushed; only the last asks for a CQE.
    d.post(&t, &send(&t, 100).unsignaled());
    let first8 = d.post(&t, &send(&t, 200).unsignaled());
    t.ring(first8);
    assert_eq!(t.frames().len(), 2);
    t.e.n.dev().faults().bad_lkey_sends(1);
    assert_eq!(t.e.n.dev().faults().bad_lkey_sends_pending(), 1);
    let failed = t.pc();
    d.post(&t, &send(&t, 300).unsignaled());
    // A WQE of three WQEBBs (inline data) and a padding NOP without CQ update.
    let big = t.pc();
    d.post(&t, &send(&t, 10).inline(&[7; 60]).unsignaled());
    let nop = t.pc();
    d.post(&t, &Wqe::nop(false));
    let last = t.pc();
    let first8 = d.post(&t, &send(&t, 400));
    t.ring(first8);
    assert_eq!((failed, big, nop, last), (4, 6, 9, 10));
    assert!(
        t.frames().is_empty(),
        "nothing after the failed WQE is sent"
    );
    assert_eq!(t.e.n.dev().faults().bad_lkey_sends_pending(), 0);
    // The error CQE names the failed WQE (the walk to it also completes the two before);
    // every later WQE gets a flush CQE, signaled or not, at its own index.
    assert_eq!(
        d.poll(&t),
        [
            (REQ_ERR, LOCAL_PROT, failed),
            (REQ_ERR, FLUSH, big),
            (REQ_ERR, FLUSH, nop),
            (REQ_ERR, FLUSH, last),
        ]
    );
    // A WQE posted while in ERR, published in the record but not rung: flushed when the
    // device next does its own work.
    let late = t.pc();
    d.post(&t, &send(&t, 50));
    assert!(d.poll(&t).is_empty());
    t.e.n.dev().tick();
    assert_eq!(d.poll(&t), [(REQ_ERR, FLUSH, late)]);

    d.recover(&t);
    // From index 0 again: the WQE at ring slot 0 is executed, frames flow.
    d.post(&t, &send(&t, 500).unsignaled());
    let first8 = d.post(&t, &send(&t, 600));
    t.ring(first8);
    assert_eq!(
        d.poll(&t),
        [(REQ, 0, 2)],
        "one CQE for both, at the second's index"
    );
    let frames = t.frames();
    assert_eq!(frames.len(), 2);
    for (f, len) in frames.iter().zip([500, 600]) {
        let p = parse(f);
        assert!(p.ip_ok && p.l4_ok);
        assert_eq!(p.payload, payload(len));
    }
    assert_eq!(d.cc, t.pc());
}

#[test]
fn the_error_cqe_is_the_one_a_real_bad_key_gets() {
    // The injected fault and a WQE whose lkey is really unknown give the same CQE.
    let cqe = |inject: bool| {
        let t = Tx::new();
        let mut w = send(&t, 64);
        if inject {
            t.e.n.dev().faults().bad_lkey_sends(1);
        } else {
            let key = t.e.key ^ 0x100;
            w = Wqe::eth(SendOpcode::Send, 0xc0, 0, &Spec::TCP4.headers(64)).data(key, t.e.buf, 64);
        }
        t.send(&w);
        let e = t.e.scq.expect_err(CqeOpcode::ReqErr, LOCAL_PROT);
        assert_eq!(t.state(), SqState::Err);
        *e.storage()
    };
    assert_eq!(cqe(true), cqe(false));
}

#[test]
fn lso_and_later_sends_use_up_the_count_nops_do_not() {
    let t = Tx::new();
    t.e.n.write(t.e.buf, &payload(4096));
    let mut d = Driver::default();
    let dev = t.e.n.dev().clone();
    dev.faults().bad_lkey_sends(2);
    // A NOP is not a send: it completes, the count stays.
    let first8 = d.post(&t, &Wqe::nop(true));
    t.ring(first8);
    assert_eq!(d.poll(&t), [(REQ, 0, 0)]);
    assert_eq!(dev.faults().bad_lkey_sends_pending(), 2);
    // An LSO fails as a SEND does.
    let hdr = Spec::TCP4.headers(3000);
    let lso = Wqe::eth(SendOpcode::Lso, 0xc0, 1000, &hdr).data(t.e.key, t.e.buf, 3000);
    let first8 = d.post(&t, &lso);
    t.ring(first8);
    assert_eq!(d.poll(&t), [(REQ_ERR, LOCAL_PROT, 1)]);
    d.recover(&t);
    // The second of the two.
    let first8 = d.post(&t, &send(&t, 10));
    t.ring(first8);
    assert_eq!(d.poll(&t), [(REQ_ERR, LOCAL_PROT, 0)]);
    d.recover(&t);
    // Used up: the same LSO goes out.
    let first8 = d.post(&t, &lso);
    t.ring(first8);
    assert_eq!(d.poll(&t), [(REQ, 0, 0)]);
    assert_eq!(t.frames().len(), 3);
    // clear() also cancels a pending count.
    dev.faults().bad_lkey_sends(5);
    dev.faults().clear();
    assert_eq!(dev.faults().bad_lkey_sends_pending(), 0);
}

#[test]
fn the_fault_from_the_config_and_a_send_without_data_segments() {
    let t = Tx::with_config(Config {
        faults: Faults {
            bad_lkey_sends: 1,
            ..Faults::default()
        },
        ..Config::default()
    });
    // All inline: no data segment, the WQE fails all the same.
    let hdr = Spec::TCP4.headers(0);
    t.send(&Wqe::eth(SendOpcode::Send, 0, 0, &hdr));
    t.e.scq.expect_err(CqeOpcode::ReqErr, LOCAL_PROT);
    assert!(t.frames().is_empty());
}
