//! Forged CQEs: how the queues treat values the device writes that they must not trust.

use super::*;
use crate::backend::sim::SimBackend;
use crate::error::Error;
use crate::HcaConfig;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{CqeOpcode, CqeSyndrome};

fn hca() -> Hca<SimBackend> {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    Hca::bring_up(be, &HcaConfig::default()).unwrap()
}

fn pool(hca: &Hca<SimBackend>) -> Pool<'_, SimBackend> {
    Pool::new(hca, 4096, 2048).unwrap()
}

/// Sends `n` 60-byte packets.
fn send(q: &mut EthQueues<'_, SimBackend>, n: usize) {
    let mut batch = Vec::new();
    q.pool().alloc_batch(&mut batch, n);
    batch.iter_mut().for_each(|p| p.set_len(60));
    assert_eq!(q.tx_batch(&mut batch).unwrap(), n);
}

#[test]
fn a_receive_cqe_for_the_wrong_wqe_is_refused() {
    let hca = hca();
    let pool = pool(&hca);
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    q.rx.cq.forge(|c| {
        c.set_opcode(CqeOpcode::RespSend);
        c.set_wqe_counter(5);
        c.set_byte_cnt(60);
    });
    let mut out = Vec::new();
    let e = q.rx_batch(&mut out, 8).unwrap_err();
    assert!(matches!(e, Error::BadDeviceValue { .. }), "{e}");
    assert!(out.is_empty(), "nothing handed out");
}

#[test]
fn a_receive_cqe_longer_than_the_buffer_is_refused() {
    let hca = hca();
    let pool = pool(&hca);
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    q.rx.cq.forge(|c| {
        c.set_opcode(CqeOpcode::RespSend);
        c.set_wqe_counter(0);
        c.set_byte_cnt(4096);
    });
    let mut out = Vec::new();
    assert!(q.rx_batch(&mut out, 8).is_err());
    assert!(out.is_empty());
}

#[test]
fn a_send_cqe_for_a_wqe_not_outstanding_is_refused() {
    let hca = hca();
    let pool = pool(&hca);
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    send(&mut q, 3); // unsignaled: still outstanding
    let free = pool.free_buffers();
    q.tx.cq.forge(|c| {
        c.set_opcode(CqeOpcode::Req);
        c.set_wqe_counter(7);
    });
    let e = q.tx_batch(&mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("not outstanding"), "{e}");
    assert_eq!(pool.free_buffers(), free, "no buffer freed on a bad CQE");
}

#[test]
fn a_send_error_cqe_is_a_typed_error_and_the_buffers_come_back() {
    let hca = hca();
    let pool = pool(&hca);
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    send(&mut q, 3);
    let free = pool.free_buffers();
    q.tx.cq.forge(|c| {
        c.set_opcode(CqeOpcode::ReqErr);
        c.set_wqe_counter(2);
        let mut e = mlx5_prm::ErrCqe::new_unchecked(c.storage_mut().sub_mut(0, 64));
        e.set_syndrome(CqeSyndrome::LocalProtErr);
    });
    let e = q.tx_batch(&mut Vec::new()).unwrap_err();
    match e {
        Error::WorkRequest {
            queue: "sq",
            wqe_counter: 2,
            error,
            ..
        } => assert_eq!(error.syndrome, CqeSyndrome::LocalProtErr.raw()),
        other => panic!("{other}"),
    }
    assert_eq!(pool.free_buffers(), free + 3);
}

#[test]
fn the_usual_send_cqe_is_refused_when_its_wqe_was_not_posted() {
    let hca = hca();
    let pool = pool(&hca);
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    send(&mut q, 3);
    let free = pool.free_buffers();
    // What the fast path expects next (the WQE that asks for a completion, ci +
    // signal_every - 1), but only 3 WQEs are outstanding.
    q.tx.cq.forge(|c| {
        c.set_opcode(CqeOpcode::Req);
        c.set_wqe_counter(31);
    });
    let e = q.tx_batch(&mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("not outstanding"), "{e}");
    assert_eq!(pool.free_buffers(), free, "no buffer freed on a bad CQE");
    assert_eq!(q.outstanding().0, 3);
}

/// A receive CQE `ahead` of the consumer index, for WQE `counter`.
fn receive_cqe(
    q: &EthQueues<'_, SimBackend>,
    ahead: u32,
    counter: u16,
    opcode: CqeOpcode,
    len: u32,
) {
    q.rx.cq.forge_at(ahead, |c| {
        c.set_opcode(opcode);
        c.set_wqe_counter(counter);
        c.set_byte_cnt(len);
        if opcode == CqeOpcode::RespErr {
            let mut e = mlx5_prm::ErrCqe::new_unchecked(c.storage_mut().sub_mut(0, 64));
            e.set_syndrome(CqeSyndrome::LocalLengthErr);
        }
    });
}

#[test]
fn good_packets_before_a_receive_error_are_handed_out_and_its_buffer_comes_back() {
    let hca = hca();
    let pool = pool(&hca);
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    let free = pool.free_buffers();
    receive_cqe(&q, 0, 0, CqeOpcode::RespSend, 60);
    receive_cqe(&q, 1, 1, CqeOpcode::RespSend, 61);
    receive_cqe(&q, 2, 2, CqeOpcode::RespErr, 0);
    let mut out = Vec::new();
    match q.rx_batch(&mut out, 8).unwrap_err() {
        Error::WorkRequest {
            queue: "rq",
            wqe_counter: 2,
            error,
            ..
        } => assert_eq!(error.syndrome, CqeSyndrome::LocalLengthErr.raw()),
        other => panic!("{other}"),
    }
    assert_eq!(out.iter().map(Packet::len).collect::<Vec<_>>(), [60, 61]);
    // Two buffers handed out; the error CQE's came back; the RQ is full again.
    assert_eq!(q.outstanding().1, 512);
    assert_eq!(pool.free_buffers(), free - 2);
    // Past the error CQE: nothing more.
    assert_eq!(q.rx_batch(&mut out, 8).unwrap(), 0);
    // The packets handed out go back to the pool as they drop.
    out.clear();
    assert_eq!(pool.free_buffers(), free);
}

#[test]
fn a_receive_cqe_with_no_wqe_posted_is_refused_and_frees_nothing() {
    let hca = hca();
    let pool = Pool::new(&hca, 2, 2048).unwrap();
    let mut q = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    assert_eq!(q.outstanding().1, 2, "both buffers posted");
    receive_cqe(&q, 0, 0, CqeOpcode::RespSend, 60);
    receive_cqe(&q, 1, 1, CqeOpcode::RespSend, 60);
    let mut out = Vec::new();
    assert_eq!(q.rx_batch(&mut out, 8).unwrap(), 2);
    assert_eq!(q.outstanding().1, 0, "the pool is empty: nothing posted");
    // A good-looking CQE and a receive error for the WQE that would come next: neither
    // names a posted WQE.
    for opcode in [CqeOpcode::RespSend, CqeOpcode::RespErr] {
        receive_cqe(&q, 0, 2, opcode, 60);
        let e = q.rx_batch(&mut out, 8).unwrap_err();
        assert!(e.to_string().contains("0 posted"), "{e}");
        assert_eq!(out.len(), 2, "nothing more handed out");
        assert_eq!(pool.free_buffers(), 0, "no buffer freed twice");
    }
}
