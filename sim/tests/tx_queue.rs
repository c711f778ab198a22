//! The send queue as mlx5e uses it (`en/txrx.h`, `en_tx.c`): NOPs that ask for a CQE (the
//! ICOSQ's `mlx5e_trigger_irq`), padding NOPs without one before a WQE that would not fit
//! before the ring's end (`mlx5e_txqsq_get_next_pi`), batches posted with `xmit_more` where
//! only the WQE that rings the doorbell asks for a CQE (`mlx5e_notify_hw`), and the 16-bit
//! counters wrapping. The driver's completion walk (`mlx5e_poll_tx_cq`,
//! `mlx5e_poll_ico_cq`: a CQE completes every WQE from the consumer counter up to its
//! wqe_counter) must land exactly on each CQE's WQE.

mod common;

use common::tx::{parse, payload, Spec, Tx, Wqe};
use mlx5_prm::{Cqe64, CqeOpcode, SendOpcode};

/// A SEND of `len` bytes of the data buffer behind TCP/IPv4 headers.
fn send(t: &Tx, len: usize) -> Wqe {
    Wqe::eth(SendOpcode::Send, 0xc0, 0, &Spec::TCP4.headers(len)).data(t.e.key, t.e.buf, len as u32)
}

#[test]
fn a_nop_that_asks_for_a_cqe_gets_one_naming_it() {
    let t = Tx::new();
    t.send(&Wqe::nop(true));
    let c = t.e.scq.expect(CqeOpcode::Req);
    assert_eq!((c.wqe_counter(), c.qpn()), (0, t.e.sqn));
    assert_eq!(c.s_wqe_opcode(), SendOpcode::Nop.raw());
    // Unsignaled NOPs complete silently; the signaled one after them reports its own index.
    t.post(&Wqe::nop(false));
    t.post(&Wqe::nop(false));
    let first8 = t.post(&Wqe::nop(true));
    t.ring(first8);
    assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), 3);
    assert!(t.e.scq.poll().is_none());
    assert!(t.frames().is_empty(), "NOPs send nothing");
}

#[test]
fn padding_nops_before_the_ring_end_and_a_batch_with_one_cqe() {
    let t = Tx::new();
    t.e.n.write(t.e.buf, &payload(4096));
    // Fill the ring up to slot 62 with signaled NOPs (consumed as they come).
    for _ in 0..62 {
        t.send(&Wqe::nop(true));
        t.e.scq.expect(CqeOpcode::Req);
    }
    // A three-WQEBB WQE does not fit in slots 62-63: two padding NOPs without CQ update,
    // then the batch from slot 0 on, posted with xmit_more; only the last WQE is signaled.
    let big = Wqe::eth(SendOpcode::Send, 0xc0, 0, &Spec::TCP4.headers(160))
        .data(t.e.key, t.e.buf, 100)
        .inline(&[9; 60]);
    assert_eq!(big.wqebbs(), 3);
    t.post(&Wqe::nop(false));
    t.post(&Wqe::nop(false));
    assert_eq!(t.pc(), 64);
    t.post(&big.clone().unsignaled());
    t.post(&send(&t, 200).unsignaled());
    let last = t.pc();
    let first8 = t.post(&send(&t, 300));
    t.ring(first8);
    let c = t.e.scq.expect(CqeOpcode::Req);
    assert_eq!(c.wqe_counter(), last, "one CQE, at the last WQE");
    assert_eq!(
        Cqe64::new_unchecked(*c.storage()).s_wqe_opcode(),
        SendOpcode::Send.raw()
    );
    assert!(t.e.scq.poll().is_none());
    let frames = t.frames();
    let lens: Vec<usize> = frames.iter().map(|f| parse(f).payload.len()).collect();
    assert_eq!(
        lens,
        [160, 200, 300],
        "in order; inline data after the gathered bytes"
    );
}

#[test]
fn the_16_bit_counters_wrap() {
    // 65 600 WQEBBs through a ring of 64: batches of 63 unsignaled NOPs and a signaled one.
    let t = Tx::new();
    let mut expected: u16 = 63;
    for _ in 0..1025 {
        for _ in 0..63 {
            t.post(&Wqe::nop(false));
        }
        let first8 = t.post(&Wqe::nop(true));
        t.ring(first8);
        assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), expected);
        expected = expected.wrapping_add(64);
    }
    assert_eq!(
        t.pc(),
        64,
        "the producer counter wrapped (65 600 mod 65 536)"
    );
    t.e.n.write(t.e.buf, &payload(64));
    t.send(&send(&t, 64));
    assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), 64);
    assert_eq!(parse(&t.frames()[0]).payload, payload(64));
}

/// mlx5e rings every send doorbell at the first BlueFlame half (UAR + 0x800); mlx5_ib and
/// rdma-core alternate the two halves (+ 0x800, + 0x900 with 512-byte BlueFlame registers).
/// Either works, in any order: the doorbell record's counter says what to run, so a late
/// doorbell for WQEs already done (it arrives after the one that covered them) does nothing.
#[test]
fn doorbells_at_either_blueflame_half_in_any_order() {
    let t = Tx::new();
    t.e.n.write(t.e.buf, &payload(4096));
    let half = |k: usize| t.e.n.uar as usize * 4096 + 0x800 + k * 0x100;
    // Alternating halves, one WQE each.
    for (i, len) in [100usize, 200, 300, 400].into_iter().enumerate() {
        let at = t.pc();
        let first8 = t.post(&send(&t, len));
        t.e.n.dev().write64(half(i % 2), first8);
        assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), at);
    }
    // Two WQEs posted; the second's doorbell (second half) first, then the first's (first
    // half), late.
    let (at_early, early) = (t.pc(), t.post(&send(&t, 500)));
    let (at_late, late) = (t.pc(), t.post(&send(&t, 600)));
    t.e.n.dev().write64(half(1), late);
    t.e.n.dev().write64(half(0), early);
    assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), at_early);
    assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), at_late);
    assert!(
        t.e.scq.poll().is_none(),
        "the late doorbell ran nothing twice"
    );
    let lens: Vec<usize> = t.frames().iter().map(|f| parse(f).payload.len()).collect();
    assert_eq!(lens, [100, 200, 300, 400, 500, 600]);
}
