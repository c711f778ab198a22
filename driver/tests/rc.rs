//! RC on the device model: SEND/RECV ping-pong, RDMA WRITE (with and without immediate), RDMA
//! READ, compare-and-swap and fetch-and-add between two connected QPs, each buffer coming back
//! with its completion; a wrong rkey gives the remote access error CQE and moves the QP to
//! ERR. Inline and threaded.

mod common;

use common::{qp_config, to_rts, ALL};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::{Completion, Cq};
use mlx5_driver::mr::Region;
use mlx5_driver::qp::*;
use mlx5_driver::{Error, Hca};
use mlx5_prm::cmd::Qp2rst;
use mlx5_prm::rt::Command as _;
use mlx5_prm::rt::{Bytes, BytesMut};
use mlx5_prm::{CqeOpcode, CqeSyndrome, QpState};
use mlx5_sim::Mode;
use std::time::{Duration, Instant};

type Sim = SimBackend;

struct Pair<'h> {
    hca: &'h Hca<Sim>,
    cq: Cq<'h, Sim>,
    a: Qp<'h, Sim, Rts>,
    b: Qp<'h, Sim, Rts>,
}

fn connect(hca: &Hca<Sim>) -> Pair<'_> {
    let cq = Cq::create(hca, 8).unwrap();
    let a = Qp::create(hca, &cq, &cq, &qp_config(6)).unwrap();
    let b = Qp::create(hca, &cq, &cq, &qp_config(6)).unwrap();
    let (qa, qb) = (a.qpn(), b.qpn());
    let a = to_rts(a, qb);
    let b = to_rts(b, qa);
    Pair { hca, cq, a, b }
}

impl<'h> Pair<'h> {
    /// Polls the CQ until `n` completions arrived (bounded).
    fn wait(&mut self, n: usize) -> Vec<Completion> {
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while out.len() < n && Instant::now() < deadline {
            self.cq.poll(n - out.len(), &mut out);
            std::thread::yield_now();
        }
        assert_eq!(out.len(), n, "completions: {out:?}");
        out
    }

    fn region(&self, len: usize) -> Region<'h, Sim> {
        Region::register(self.hca, len, ALL).unwrap()
    }

    fn send(&mut self, op: SendOp, region: Option<Region<'h, Sim>>, len: Option<usize>) {
        self.a
            .post_send(SendRequest {
                id: 1,
                op,
                region,
                len,
                signaled: true,
                inline: None,
            })
            .map_err(|(e, _)| e)
            .unwrap();
    }
}

fn write_bytes(r: &Region<'_, Sim>, data: &[u8]) {
    let mut b = r.bytes();
    b.write_bytes(0, data);
}

fn read_bytes(r: &Region<'_, Sim>, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    r.bytes().read_bytes(0, &mut v);
    v
}

fn every_operation(mode: Mode) {
    let (hca, device) = common::up(mode);
    let mut p = connect(&hca);

    // SEND / RECV, both ways (ping-pong).
    for round in 0..4u8 {
        let (rx, tx) = (p.region(4096), p.region(64));
        let msg = [b'p', b'i', b'n', b'g', round];
        write_bytes(&tx, &msg);
        p.b.post_recv(10 + u64::from(round), rx)
            .map_err(|(e, _)| e)
            .unwrap();
        p.send(SendOp::Send, Some(tx), Some(msg.len()));
        let cs = p.wait(2);
        let mut got = None;
        for c in cs {
            assert!(c.status.is_ok(), "{c:?}");
            if c.qpn == p.b.qpn() {
                assert_eq!(c.opcode, CqeOpcode::RespSend.raw());
                assert_eq!(c.byte_cnt as usize, msg.len());
                let done = p.b.complete(c).unwrap();
                got = done.into_iter().next().and_then(|d| d.region);
            } else {
                assert_eq!(c.opcode, CqeOpcode::Req.raw());
                let done = p.a.complete(c).unwrap();
                assert!(done[0].region.is_some(), "the send buffer comes back");
            }
        }
        let rx = got.expect("the receive buffer comes back");
        assert_eq!(read_bytes(&rx, msg.len()), msg);
    }

    // RDMA WRITE into b's memory.
    let target = p.region(4096);
    let remote = RemoteAddr::of(&target);
    let src = p.region(64);
    write_bytes(&src, b"written by rdma");
    p.send(SendOp::Write(remote), Some(src), Some(15));
    let c = p.wait(1).remove(0);
    assert!(c.status.is_ok());
    p.a.complete(c).unwrap();
    assert_eq!(read_bytes(&target, 15), b"written by rdma");

    // RDMA READ it back into a fresh local buffer.
    let dst = p.region(64);
    p.send(SendOp::Read(remote), Some(dst), Some(15));
    let c = p.wait(1).remove(0);
    assert!(c.status.is_ok());
    assert_eq!(c.byte_cnt, 15);
    let dst = p.a.complete(c).unwrap().pop().unwrap().region.unwrap();
    assert_eq!(read_bytes(&dst, 15), b"written by rdma");

    // Atomics on 8 bytes of b's memory.
    write_bytes(&target, &5u64.to_be_bytes());
    let old = p.region(8);
    p.send(
        SendOp::CompareSwap {
            remote,
            compare: 5,
            swap: 9,
        },
        Some(old),
        Some(8),
    );
    let c = p.wait(1).remove(0);
    assert!(c.status.is_ok());
    let old = p.a.complete(c).unwrap().pop().unwrap().region.unwrap();
    assert_eq!(read_bytes(&old, 8), 5u64.to_be_bytes());
    assert_eq!(read_bytes(&target, 8), 9u64.to_be_bytes());
    p.send(SendOp::FetchAdd { remote, add: 3 }, Some(old), Some(8));
    let c = p.wait(1).remove(0);
    assert!(c.status.is_ok());
    let old = p.a.complete(c).unwrap().pop().unwrap().region.unwrap();
    assert_eq!(read_bytes(&old, 8), 9u64.to_be_bytes());
    assert_eq!(read_bytes(&target, 8), 12u64.to_be_bytes());

    // RDMA WRITE with immediate consumes a receive at b.
    let rx = p.region(64);
    p.b.post_recv(99, rx).map_err(|(e, _)| e).unwrap();
    let src = p.region(64);
    write_bytes(&src, b"imm");
    p.send(SendOp::WriteImm(remote, 0xabcd), Some(src), Some(3));
    let cs = p.wait(2);
    let resp = cs.iter().find(|c| c.qpn == p.b.qpn()).unwrap();
    assert_eq!(resp.opcode, CqeOpcode::RespWrImm.raw(), "{resp:?}");
    assert_eq!(resp.immediate, 0xabcd);
    assert_eq!(read_bytes(&target, 3), b"imm");
    for c in cs {
        if c.qpn == p.b.qpn() {
            assert_eq!(p.b.complete(c).unwrap()[0].id, 99);
        } else {
            p.a.complete(c).unwrap();
        }
    }

    // Inline data, carried in the WQE itself, copied whole to the BlueFlame register.
    assert_eq!(
        device.blueflame_wqes(),
        0,
        "no copies before BlueFlame is on"
    );
    p.a.set_blueflame(true);
    let rx = p.region(64);
    p.b.post_recv(100, rx).map_err(|(e, _)| e).unwrap();
    let req = SendRequest {
        id: 2,
        op: SendOp::Send,
        region: None,
        len: None,
        signaled: true,
        inline: Some(b"inline hello".to_vec()),
    };
    p.a.post_send(req).map_err(|(e, _)| e).unwrap();
    let cs = p.wait(2);
    let b = p.b.qpn();
    let resp = cs.into_iter().find(|c| c.qpn == b).unwrap();
    assert!(resp.status.is_ok(), "{resp:?}");
    assert_eq!(resp.byte_cnt, 12);
    let rx = p.b.complete(resp).unwrap().pop().unwrap().region.unwrap();
    assert_eq!(read_bytes(&rx, 12), b"inline hello");
    assert_eq!(
        device.blueflame_wqes(),
        1,
        "the device ran the WQE from the copy"
    );
    p.a.set_blueflame(false);
    let too_long = SendRequest {
        id: 3,
        op: SendOp::Send,
        region: None,
        len: None,
        signaled: true,
        inline: Some(vec![0; MAX_INLINE + 1]),
    };
    match p.a.post_send(too_long) {
        Err((Error::InlineTooLong { len, max, .. }, None)) => {
            assert_eq!((len, max), (MAX_INLINE + 1, MAX_INLINE))
        }
        other => panic!("{:?}", other.map_err(|(e, _)| e)),
    }

    // A wrong rkey: the remote access error, and the requester QP in ERR.
    let bad = RemoteAddr {
        addr: target.addr(),
        rkey: target.rkey() ^ 0xff00,
    };
    let src = p.region(64);
    p.send(SendOp::Write(bad), Some(src), Some(8));
    let cs = p.wait(1);
    let err = cs[0].status.unwrap_err();
    assert_eq!(err.syndrome, CqeSyndrome::RemoteAccessErr.raw(), "{err}");
    assert_eq!(p.a.query_state().unwrap(), QpState::Err);
}

#[test]
fn every_operation_inline() {
    every_operation(Mode::Inline);
}

#[test]
fn every_operation_threaded() {
    every_operation(Mode::Threaded);
}

/// Posts a signaled `op` on `region`'s first `len` bytes.
fn post<'h>(qp: &mut Qp<'h, Sim, Rts>, op: SendOp, region: Region<'h, Sim>, len: usize) {
    let req = SendRequest {
        id: 0,
        op,
        region: Some(region),
        len: Some(len),
        signaled: true,
        inline: None,
    };
    qp.post_send(req).map_err(|(e, _)| e).unwrap();
}

/// RC between QPs on two devices joined by an in-memory wire: SEND/RECV, RDMA WRITE and READ,
/// and fetch-and-add cross it, inline and threaded.
#[test]
fn rc_across_a_wire_between_two_devices() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (ha, da) = common::up(mode);
        let (hb, db) = common::up(mode);
        let (mut cqa, mut cqb) = (Cq::create(&ha, 6).unwrap(), Cq::create(&hb, 6).unwrap());
        let qa = Qp::create(&ha, &cqa, &cqa, &qp_config(4)).unwrap();
        let qb = Qp::create(&hb, &cqb, &cqb, &qp_config(4)).unwrap();
        let _wire = mlx5_sim::Wire::connect(&da, &db);
        let (na, nb) = (qa.qpn(), qb.qpn());
        let mut a = to_rts(qa, nb);
        let mut b = to_rts(qb, na);
        let wait = |cq: &mut Cq<'_, Sim>| -> Completion {
            let mut out = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(5);
            while out.is_empty() && Instant::now() < deadline {
                cq.poll(1, &mut out);
                std::thread::yield_now();
            }
            let c = out.pop().expect("a completion");
            assert!(c.status.is_ok(), "{c:?}");
            c
        };

        // SEND from a (device 0) lands in b's receive (device 1).
        let rx = Region::register(&hb, 256, ALL).unwrap();
        b.post_recv(1, rx).map_err(|(e, _)| e).unwrap();
        let tx = Region::register(&ha, 64, ALL).unwrap();
        write_bytes(&tx, b"across the wire");
        post(&mut a, SendOp::Send, tx, 15);
        let c = wait(&mut cqb);
        assert_eq!((c.qpn, c.byte_cnt), (nb, 15), "{mode:?}");
        let rx = b.complete(c).unwrap().pop().unwrap().region.unwrap();
        assert_eq!(read_bytes(&rx, 15), b"across the wire");
        a.complete(wait(&mut cqa)).unwrap();

        // RDMA WRITE, READ and fetch-and-add on device 1's memory from device 0.
        let target = Region::register(&hb, 64, ALL).unwrap();
        let remote = RemoteAddr::of(&target);
        let src = Region::register(&ha, 64, ALL).unwrap();
        write_bytes(&src, &40u64.to_be_bytes());
        post(&mut a, SendOp::Write(remote), src, 8);
        a.complete(wait(&mut cqa)).unwrap();
        assert_eq!(read_bytes(&target, 8), 40u64.to_be_bytes());
        let old = Region::register(&ha, 8, ALL).unwrap();
        post(&mut a, SendOp::FetchAdd { remote, add: 2 }, old, 8);
        let old = a
            .complete(wait(&mut cqa))
            .unwrap()
            .pop()
            .unwrap()
            .region
            .unwrap();
        assert_eq!(read_bytes(&old, 8), 40u64.to_be_bytes());
        let dst = Region::register(&ha, 64, ALL).unwrap();
        post(&mut a, SendOp::Read(remote), dst, 8);
        let dst = a
            .complete(wait(&mut cqa))
            .unwrap()
            .pop()
            .unwrap()
            .region
            .unwrap();
        assert_eq!(read_bytes(&dst, 8), 42u64.to_be_bytes(), "{mode:?}");
    }
}

/// Polls `cq` until `n` completions arrived, then a little longer (so that a device running
/// more work than was posted shows it), all of them.
fn settle(cq: &mut Cq<'_, Sim>, n: usize) -> Vec<Completion> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while out.len() < n && Instant::now() < deadline {
        cq.poll(64, &mut out);
        std::thread::yield_now();
    }
    for _ in 0..100 {
        cq.poll(64, &mut out);
        std::thread::yield_now();
    }
    out
}

/// A SEND of `msg` on `qp` (connected to itself) into a receive of `rx`, both completed:
/// the receive's region comes back holding the message, and the send's.
fn loop_send<'h>(
    qp: &mut Qp<'h, Sim, Rts>,
    cq: &mut Cq<'h, Sim>,
    rx: Region<'h, Sim>,
    msg: &[u8],
) -> (Region<'h, Sim>, Region<'h, Sim>) {
    qp.post_recv(1, rx).map_err(|(e, _)| e).unwrap();
    let tx = Region::register(qp.hca(), 64, ALL).unwrap();
    write_bytes(&tx, msg);
    post(qp, SendOp::Send, tx, msg.len());
    let cs = settle(cq, 2);
    assert_eq!(cs.len(), 2, "one send and one receive completion: {cs:?}");
    let (mut rx, mut tx) = (None, None);
    for c in cs {
        assert!(c.status.is_ok(), "{c:?}");
        let recv = c.opcode == CqeOpcode::RespSend.raw();
        let mut done = qp.complete(c).unwrap();
        assert_eq!(done.len(), 1);
        let region = done.pop().and_then(|d| d.region);
        *(if recv { &mut rx } else { &mut tx }) = region;
    }
    let rx = rx.expect("the receive buffer comes back");
    assert_eq!(read_bytes(&rx, msg.len()), msg);
    (rx, tx.expect("the send buffer comes back"))
}

/// After RST the device starts its queues again at WQE 0, and so must the driver: a QP that
/// carried traffic, was reset and brought back to RTS runs only what is posted after the
/// reset. The region of the first receive, back with the caller, is never written again
/// (the device takes the new receive, not the stale WQE that named the old one), and the new
/// receive's completion names WQE 0.
#[test]
fn after_a_reset_the_device_runs_only_new_work() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (hca, _device) = common::up(mode);
        let mut cq = Cq::create(&hca, 6).unwrap();
        let qp = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
        let qpn = qp.qpn();
        let mut qp = to_rts(qp, qpn);
        let old = Region::register(&hca, 256, ALL).unwrap();
        // Both regions stay registered: a stale WQE naming either would run.
        let (old, _old_tx) = loop_send(&mut qp, &mut cq, old, b"before the reset");
        write_bytes(&old, &[0xee; 256]);

        let qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
        assert_eq!(qp.outstanding(), (0, 0));
        let mut qp = to_rts(qp, qpn);
        let new = Region::register(&hca, 256, ALL).unwrap();
        let msg = b"after the reset";
        qp.post_recv(2, new).map_err(|(e, _)| e).unwrap();
        let tx = Region::register(&hca, 64, ALL).unwrap();
        write_bytes(&tx, msg);
        post(&mut qp, SendOp::Send, tx, msg.len());
        let cs = settle(&mut cq, 2);
        let untouched = read_bytes(&old, 256).iter().all(|&b| b == 0xee);
        assert!(untouched, "{mode:?}: the old region was written");
        assert_eq!(cs.len(), 2, "one send and one receive completion: {cs:?}");
        for c in cs {
            assert!(c.status.is_ok(), "{c:?}");
            let recv = c.opcode == CqeOpcode::RespSend.raw();
            let wqe_counter = c.wqe_counter;
            let done = qp.complete(c).unwrap();
            assert_eq!((done.len(), wqe_counter), (1, 0), "WQE 0 of each queue");
            if recv {
                let d = done.into_iter().next().unwrap();
                assert_eq!(d.id, 2);
                assert_eq!(read_bytes(&d.region.unwrap(), msg.len()), msg);
            }
        }
        assert_eq!(qp.outstanding(), (0, 0));
    }
}

/// Posts a receive of a fresh 64-byte region with `id`.
fn recv<'h, S: AcceptsReceives>(qp: &mut Qp<'h, Sim, S>, id: u64) {
    let rx = Region::register(qp.hca(), 64, ALL).unwrap();
    qp.post_recv(id, rx).map_err(|(e, _)| e).unwrap();
}

/// The ids of the work a reset discarded, each with its region and no completion.
fn discarded<S>(qp: &mut Qp<'_, Sim, S>) -> Vec<u64> {
    let done = qp.take_discarded();
    assert!(done
        .iter()
        .all(|d| d.region.is_some() && d.completion.is_none()));
    done.iter().map(|d| d.id).collect()
}

/// A move to RST from each state the typestate allows it from (RST, INIT, RTR, RTS, ERR)
/// discards the work still posted: its regions come back through `take_discarded` (sends,
/// then receives, each in posting order), the counts go to zero, and the completions of the
/// QP's life before the reset (the one polled and not handed over, the flush errors still in
/// the CQ) are refused afterwards. A refused 2RST changes nothing.
#[test]
fn a_reset_from_any_state_gives_the_posted_work_back() {
    let (hca, device) = common::up(Mode::Inline);
    let mut cq = Cq::create(&hca, 6).unwrap();
    let qp = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let qpn = qp.qpn();
    let (init, rtr, _) = common::params(qpn);

    // RST: nothing posted, nothing discarded.
    let mut qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!(discarded(&mut qp), [] as [u64; 0]);

    // INIT and RTR: the receives posted come back.
    let mut qp = qp.rst2init(init).map_err(|(e, _)| e).unwrap();
    recv(&mut qp, 1);
    recv(&mut qp, 2);
    let mut qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!((discarded(&mut qp), qp.outstanding()), (vec![1, 2], (0, 0)));
    let qp = qp.rst2init(init).map_err(|(e, _)| e).unwrap();
    let mut qp = qp.init2rtr(rtr).map_err(|(e, _)| e).unwrap();
    recv(&mut qp, 3);
    let mut qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!(discarded(&mut qp), [3]);

    // RTS: a send completed by the device but not handed over, and a receive still posted;
    // the send's completion, polled before the reset, is refused after it.
    let mut qp = common::to_rts(qp, qpn);
    recv(&mut qp, 4);
    recv(&mut qp, 5);
    let tx = Region::register(&hca, 64, ALL).unwrap();
    post(&mut qp, SendOp::Send, tx, 8);
    let mut before = settle(&mut cq, 2);
    assert_eq!(before.len(), 2, "{before:?}");
    let recv_done = before
        .iter()
        .position(|c| c.opcode == CqeOpcode::RespSend.raw());
    let done = qp.complete(before.remove(recv_done.unwrap())).unwrap();
    assert_eq!(done[0].id, 4);
    assert_eq!(qp.outstanding(), (1, 1));
    // A refused 2RST discards nothing and leaves the QP as it was.
    device.faults().fail_command(Qp2rst::OPCODE, 0x03, 0x1234);
    let (e, mut qp) = match qp.to_rst() {
        Ok(_) => panic!("2RST succeeded although it fails"),
        Err(pair) => pair,
    };
    assert!(matches!(e, Error::Command { .. }), "{e}");
    assert_eq!((discarded(&mut qp), qp.outstanding()), (vec![], (1, 1)));
    assert_eq!(qp.query_state().unwrap(), QpState::Rts);
    device.faults().stop_failing(Qp2rst::OPCODE);
    let mut qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!((discarded(&mut qp), qp.outstanding()), (vec![0, 5], (0, 0)));
    let mut qp = common::to_rts(qp, qpn);
    recv(&mut qp, 6);
    let stale = before.pop().unwrap();
    assert_eq!((stale.opcode, stale.wqe_counter), (CqeOpcode::Req.raw(), 0));
    let tx = Region::register(&hca, 64, ALL).unwrap();
    post(&mut qp, SendOp::Send, tx, 8);
    let refused = qp.complete(stale).map(|done| done.len());
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    assert_eq!(qp.outstanding(), (1, 1), "the new send stays outstanding");
    for c in settle(&mut cq, 2) {
        assert_eq!(qp.complete(c).unwrap().len(), 1);
    }

    // ERR: a receive (WQE 0 after a reset) is flushed with an error CQE the next reset
    // leaves in the CQ, refused once the QP is back, although it names WQE 0 again.
    assert_eq!(qp.outstanding(), (0, 0));
    let qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    let mut qp = common::to_rts(qp, qpn);
    recv(&mut qp, 7);
    let qp = qp.to_err().map_err(|(e, _)| e).unwrap();
    let mut qp = qp.to_rst().map_err(|(e, _)| e).unwrap();
    assert_eq!(discarded(&mut qp), [7]);
    let mut qp = common::to_rts(qp, qpn);
    recv(&mut qp, 8);
    let flushed = settle(&mut cq, 1);
    assert_eq!(flushed.len(), 1, "{flushed:?}");
    for c in flushed {
        assert!(c.status.is_err() && c.wqe_counter == 0, "{c:?}");
        assert!(
            qp.complete(c).is_err(),
            "a flush of the earlier life is refused"
        );
    }
    assert_eq!(qp.outstanding(), (0, 1));
}

/// A QP number comes round again once its QP is destroyed, and completions of the old QP may
/// still wait in the CQ: the new QP of that number refuses them (they were written before it
/// was created), even the receive completion that names its first WQE.
#[test]
fn a_new_qp_refuses_the_completions_of_an_old_one_of_its_number() {
    let (hca, _device) = common::up(Mode::Inline);
    let mut cq = Cq::create(&hca, 6).unwrap();
    let old = Qp::create(&hca, &cq, &cq, &qp_config(1)).unwrap();
    let qpn = old.qpn();
    let mut old = to_rts(old, qpn);
    recv(&mut old, 1);
    let tx = Region::register(&hca, 64, ALL).unwrap();
    post(&mut old, SendOp::Send, tx, 8);
    drop(old);
    let mut qp = None;
    for _ in 0..10_000 {
        let new = Qp::create(&hca, &cq, &cq, &qp_config(1)).unwrap();
        if new.qpn() == qpn {
            qp = Some(new);
            break;
        }
    }
    let mut qp = to_rts(qp.expect("the number comes round"), qpn);
    recv(&mut qp, 2);
    let cs = settle(&mut cq, 2);
    assert_eq!(cs.len(), 2, "{cs:?}");
    for c in cs {
        assert_eq!((c.qpn, c.wqe_counter), (qpn, 0));
        assert!(qp.complete(c).is_err());
    }
    assert_eq!(qp.outstanding(), (0, 1));
}
