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
    let c = p.wait(1)[0];
    assert!(c.status.is_ok());
    p.a.complete(c).unwrap();
    assert_eq!(read_bytes(&target, 15), b"written by rdma");

    // RDMA READ it back into a fresh local buffer.
    let dst = p.region(64);
    p.send(SendOp::Read(remote), Some(dst), Some(15));
    let c = p.wait(1)[0];
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
    let c = p.wait(1)[0];
    assert!(c.status.is_ok());
    let old = p.a.complete(c).unwrap().pop().unwrap().region.unwrap();
    assert_eq!(read_bytes(&old, 8), 5u64.to_be_bytes());
    assert_eq!(read_bytes(&target, 8), 9u64.to_be_bytes());
    p.send(SendOp::FetchAdd { remote, add: 3 }, Some(old), Some(8));
    let c = p.wait(1)[0];
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
    let resp = cs.iter().find(|c| c.qpn == p.b.qpn()).copied().unwrap();
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
    let resp = cs.iter().find(|c| c.qpn == p.b.qpn()).copied().unwrap();
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
