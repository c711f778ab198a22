//! RC on the device model: SEND/RECV ping-pong, RDMA WRITE (with and without immediate), RDMA
//! READ, compare-and-swap and fetch-and-add between two connected QPs, each buffer coming back
//! with its completion; a wrong rkey gives the remote access error CQE and moves the QP to
//! ERR. Inline and threaded.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::{Completion, Cq};
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::*;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::rt::{Bytes, BytesMut};
use mlx5_prm::{CqeOpcode, CqeSyndrome, QpMtu, QpState};
use mlx5_sim::{Config, Mode};
use std::time::{Duration, Instant};

const ALL: Access = Access {
    local_write: true,
    remote_read: true,
    remote_write: true,
    remote_atomic: true,
};

struct Pair {
    hca: Hca<SimBackend>,
    cq: Cq,
    a: Qp<Rts>,
    b: Qp<Rts>,
}

/// Takes a new QP through INIT and RTR to RTS, connected to QP `peer`.
fn up(qp: Qp<Reset>, hca: &mut Hca<SimBackend>, peer: u32) -> Qp<Rts> {
    let init = InitParams {
        port: 1,
        pkey_index: 0,
        access: RemoteAccess {
            read: true,
            write: true,
            atomic: true,
        },
    };
    let rtr = RtrParams {
        mtu: QpMtu::Mtu1k,
        log_msg_max: 20,
        remote_qpn: peer,
        next_rcv_psn: 0,
        log_rra_max: 2,
        min_rnr_nak: 1,
        path: RocePath {
            rmac: [2, 0, 0, 0, 0, 1],
            rgid: [0; 16],
            src_addr_index: 0,
            hop_limit: 64,
            port: 1,
        },
    };
    let rts = RtsParams {
        next_send_psn: 0,
        retry_count: 7,
        rnr_retry: 7,
        log_sra_max: 2,
        ack_timeout: 14,
    };
    let qp = qp.to_init(hca, &init).map_err(|(e, _)| e).unwrap();
    let qp = qp.to_rtr(hca, &rtr).map_err(|(e, _)| e).unwrap();
    qp.to_rts(hca, &rts).map_err(|(e, _)| e).unwrap()
}

fn connect(mode: Mode) -> Pair {
    let (backend, _device) = SimBackend::new(Config {
        mode,
        ..Config::default()
    });
    let mut hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let eqn = hca.info().eqn;
    let cq = Cq::create(&mut hca, 8, eqn).unwrap();
    let config = QpConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        log_rq_stride: 1,
        send_cq: cq.cqn(),
        recv_cq: cq.cqn(),
    };
    let a = Qp::create(&mut hca, config.clone()).unwrap();
    let b = Qp::create(&mut hca, config).unwrap();
    let (qa, qb) = (a.qpn(), b.qpn());
    let a = up(a, &mut hca, qb);
    let b = up(b, &mut hca, qa);
    Pair { hca, cq, a, b }
}

impl Pair {
    /// Polls the CQ until `n` completions arrived (bounded).
    fn wait(&mut self, n: usize) -> Vec<Completion> {
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while out.len() < n && Instant::now() < deadline {
            self.cq.poll(self.hca.backend(), n - out.len(), &mut out);
            std::thread::yield_now();
        }
        assert_eq!(out.len(), n, "completions: {out:?}");
        out
    }

    fn region(&mut self, len: usize) -> Region {
        Region::register(&mut self.hca, len, ALL).unwrap()
    }

    fn send(&mut self, op: SendOp, region: Option<Region>, len: Option<usize>) {
        let be = self.hca.backend();
        self.a
            .post_send(
                be,
                SendRequest {
                    id: 1,
                    op,
                    region,
                    len,
                    signaled: true,
                    inline: None,
                },
            )
            .map_err(|(e, _)| e)
            .unwrap();
    }
}

fn write_bytes(r: &Region, data: &[u8]) {
    let mut b = r.bytes();
    b.write_bytes(0, data);
}

fn read_bytes(r: &Region, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    r.bytes().read_bytes(0, &mut v);
    v
}

fn every_operation(mode: Mode) {
    let mut p = connect(mode);

    // SEND / RECV, both ways (ping-pong).
    for round in 0..4u8 {
        let (rx, tx) = (p.region(4096), p.region(64));
        let msg = [b'p', b'i', b'n', b'g', round];
        write_bytes(&tx, &msg);
        p.b.post_recv(p.hca.backend(), 10 + u64::from(round), rx)
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
    let remote = RemoteAddr {
        addr: target.addr(),
        rkey: target.rkey(),
    };
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
    p.b.post_recv(p.hca.backend(), 99, rx)
        .map_err(|(e, _)| e)
        .unwrap();
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
    let device = p.hca.backend().device().clone();
    assert_eq!(
        device.blueflame_wqes(),
        0,
        "no copies before BlueFlame is on"
    );
    p.a.set_blueflame(true);
    let rx = p.region(64);
    p.b.post_recv(p.hca.backend(), 100, rx)
        .map_err(|(e, _)| e)
        .unwrap();
    let be = p.hca.backend();
    let req = SendRequest {
        id: 2,
        op: SendOp::Send,
        region: None,
        len: None,
        signaled: true,
        inline: Some(b"inline hello".to_vec()),
    };
    p.a.post_send(be, req).map_err(|(e, _)| e).unwrap();
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
    assert!(p.a.post_send(p.hca.backend(), too_long).is_err());

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
    let mut hca = p.hca;
    assert_eq!(p.a.query_state(&mut hca).unwrap(), QpState::Err);
}

#[test]
fn every_operation_inline() {
    every_operation(Mode::Inline);
}

#[test]
fn every_operation_threaded() {
    every_operation(Mode::Threaded);
}

/// RC between QPs on two devices joined by an in-memory wire: SEND/RECV, RDMA WRITE and READ,
/// and fetch-and-add cross it, inline and threaded.
#[test]
fn rc_across_a_wire_between_two_devices() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let mut side = Vec::new();
        let mut devices = Vec::new();
        for _ in 0..2 {
            let (be, dev) = SimBackend::new(Config {
                mode,
                ..Config::default()
            });
            let mut hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
            let eqn = hca.info().eqn;
            let cq = Cq::create(&mut hca, 6, eqn).unwrap();
            let config = QpConfig {
                log_sq_size: 4,
                log_rq_size: 4,
                log_rq_stride: 1,
                send_cq: cq.cqn(),
                recv_cq: cq.cqn(),
            };
            let qp = Qp::create(&mut hca, config).unwrap();
            side.push((hca, cq, qp));
            devices.push(dev);
        }
        let _wire = mlx5_sim::Wire::connect(&devices[0], &devices[1]);
        let (mut hb, mut cqb, qb) = side.pop().unwrap();
        let (mut ha, mut cqa, qa) = side.pop().unwrap();
        let (na, nb) = (qa.qpn(), qb.qpn());
        let mut a = up(qa, &mut ha, nb);
        let mut b = up(qb, &mut hb, na);
        let wait = |cq: &mut Cq, hca: &Hca<SimBackend>| -> Completion {
            let mut out = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(5);
            while out.is_empty() && Instant::now() < deadline {
                cq.poll(hca.backend(), 1, &mut out);
                std::thread::yield_now();
            }
            let c = out.pop().expect("a completion");
            assert!(c.status.is_ok(), "{c:?}");
            c
        };
        let post = |qp: &mut Qp<Rts>, hca: &Hca<SimBackend>, op, region: Region, len| {
            let req = SendRequest {
                id: 0,
                op,
                region: Some(region),
                len: Some(len),
                signaled: true,
                inline: None,
            };
            qp.post_send(hca.backend(), req)
                .map_err(|(e, _)| e)
                .unwrap();
        };

        // SEND from a (device 0) lands in b's receive (device 1).
        let rx = Region::register(&mut hb, 256, ALL).unwrap();
        b.post_recv(hb.backend(), 1, rx)
            .map_err(|(e, _)| e)
            .unwrap();
        let tx = Region::register(&mut ha, 64, ALL).unwrap();
        write_bytes(&tx, b"across the wire");
        post(&mut a, &ha, SendOp::Send, tx, 15);
        let c = wait(&mut cqb, &hb);
        assert_eq!((c.qpn, c.byte_cnt), (nb, 15), "{mode:?}");
        let rx = b.complete(c).unwrap().pop().unwrap().region.unwrap();
        assert_eq!(read_bytes(&rx, 15), b"across the wire");
        a.complete(wait(&mut cqa, &ha)).unwrap();

        // RDMA WRITE, READ and fetch-and-add on device 1's memory from device 0.
        let target = Region::register(&mut hb, 64, ALL).unwrap();
        let remote = RemoteAddr {
            addr: target.addr(),
            rkey: target.rkey(),
        };
        let src = Region::register(&mut ha, 64, ALL).unwrap();
        write_bytes(&src, &40u64.to_be_bytes());
        post(&mut a, &ha, SendOp::Write(remote), src, 8);
        a.complete(wait(&mut cqa, &ha)).unwrap();
        assert_eq!(read_bytes(&target, 8), 40u64.to_be_bytes());
        let old = Region::register(&mut ha, 8, ALL).unwrap();
        post(&mut a, &ha, SendOp::FetchAdd { remote, add: 2 }, old, 8);
        let old = a
            .complete(wait(&mut cqa, &ha))
            .unwrap()
            .pop()
            .unwrap()
            .region
            .unwrap();
        assert_eq!(read_bytes(&old, 8), 40u64.to_be_bytes());
        let dst = Region::register(&mut ha, 64, ALL).unwrap();
        post(&mut a, &ha, SendOp::Read(remote), dst, 8);
        let dst = a
            .complete(wait(&mut cqa, &ha))
            .unwrap()
            .pop()
            .unwrap()
            .region
            .unwrap();
        assert_eq!(read_bytes(&dst, 8), 42u64.to_be_bytes(), "{mode:?}");
    }
}
