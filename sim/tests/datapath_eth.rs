//! The Ethernet data path: an SQ object sends frames built from the Ethernet segment's inline
//! headers and the gather list; frames come back through loopback, a wire or the test, are
//! steered by destination MAC through the NIC receive flow table to a TIR and its RQ, and land
//! in a receive WQE with a CQE; frames that match nothing, or find no receive WQE, are dropped.

mod common;

use common::dp::Node;
use common::eth::{id_at, l2, Eth};
use mlx5_prm::cmd;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{CqeL3HdrType, CqeOpcode, TircDispType};
use mlx5_sim::{Link, Wire};
use std::sync::{Arc, Mutex};

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

/// L2 plus a minimal IPv4 header (inline header of 34 bytes).
fn l3(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut h = l2(dst, src);
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[9] = 17;
    h.extend_from_slice(&ip);
    h
}

#[test]
fn loopback_delivers_by_destination_mac() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let dev = e.n.dev().clone();
    dev.loopback(true);
    let payload: Vec<u8> = (0..200u8).collect();
    e.n.write(e.buf + 0x8000, &payload);
    e.post_recv(0, 2048);
    let hdr = l3(MAC_A, MAC_B);
    e.send(&hdr, 0x8000, 200);
    let c = e.scq.expect(CqeOpcode::Req);
    assert_eq!((c.wqe_counter(), c.qpn()), (0, e.sqn));
    let c = e.rcq.expect(CqeOpcode::RespSend);
    assert_eq!(c.byte_cnt(), 234);
    assert_eq!(c.wqe_counter(), 0);
    assert_eq!(c.qpn(), 0x100, "the flow tag of the matching entry");
    assert_eq!(c.l3_hdr_type(), Ok(CqeL3HdrType::Ipv4));
    let frame = e.n.read(e.buf, 234);
    assert_eq!(&frame[..34], &hdr[..]);
    assert_eq!(&frame[34..], &payload[..]);
    assert_eq!(
        (dev.tx_frames(), dev.rx_frames(), dev.rx_dropped()),
        (1, 1, 0)
    );

    // Another destination MAC matches nothing: dropped, no CQE, the receive WQE stays.
    e.send(&l2(MAC_B, MAC_A), 0x8000, 10);
    e.scq.expect(CqeOpcode::Req);
    assert!(e.rcq.poll().is_none());
    assert_eq!(
        (dev.tx_frames(), dev.rx_frames(), dev.rx_dropped()),
        (2, 1, 1)
    );

    // No receive WQE posted: dropped too.
    e.send(&l2(MAC_A, MAC_B), 0x8000, 10);
    e.scq.expect(CqeOpcode::Req);
    assert_eq!(dev.rx_dropped(), 2);
    // With one posted, a frame from outside lands in it.
    e.post_recv(0x1000, 2048);
    let mut frame = l2(MAC_A, MAC_B);
    frame.extend_from_slice(b"from outside");
    assert!(dev.receive_frame(&frame));
    let c = e.rcq.expect(CqeOpcode::RespSend);
    assert_eq!((c.byte_cnt(), c.wqe_counter()), (frame.len() as u32, 1));
    assert_eq!(e.n.read(e.buf + 0x1000, frame.len()), frame);
    // A frame larger than the buffer: the receive completes in error (local length).
    e.post_recv(0x2000, 8);
    assert!(!dev.receive_frame(&frame));
    e.rcq.expect_err(CqeOpcode::RespErr, 0x1);
}

#[test]
fn a_wire_carries_frames_between_devices() {
    let a = Eth::new(Node::inline(), &[MAC_A]);
    let b = Eth::new(Node::inline(), &[MAC_B]);
    let _wire = Wire::connect(a.n.dev(), b.n.dev());
    b.post_recv(0, 1024);
    a.n.write(a.buf + 0x100, b"over the wire");
    a.send(&l2(MAC_B, MAC_A), 0x100, 13);
    a.scq.expect(CqeOpcode::Req);
    let c = b.rcq.expect(CqeOpcode::RespSend);
    assert_eq!(c.byte_cnt(), 27);
    assert_eq!(&b.n.read(b.buf + 14, 13), b"over the wire");
    // A frame for a MAC that b does not steer is dropped at b.
    a.send(&l2(MAC_A, MAC_A), 0x100, 13);
    a.scq.expect(CqeOpcode::Req);
    assert_eq!((b.n.dev().rx_frames(), b.n.dev().rx_dropped()), (1, 1));
    assert_eq!(a.n.dev().tx_frames(), 2);
    assert_eq!(a.n.dev().rx_frames(), 0);
}

#[derive(Default)]
struct Capture(Mutex<Vec<Vec<u8>>>);

impl Link for Capture {
    fn transmit(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

#[test]
fn an_attached_link_sees_each_frame() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let cap = Arc::new(Capture::default());
    e.n.dev().attach_link(cap.clone());
    e.n.write(e.buf, &[9; 100]);
    // Headers of 2 bytes only (all in the Ethernet segment), then 18, then 34.
    for hdr in [vec![0xab, 0xcd], l2(MAC_B, MAC_A), l3(MAC_B, MAC_A)] {
        e.send(&hdr, 0, 100);
        e.scq.expect(CqeOpcode::Req);
        let f = cap.0.lock().unwrap().pop().unwrap();
        assert_eq!(&f[..hdr.len()], &hdr[..]);
        assert_eq!(&f[hdr.len()..], &[9; 100][..]);
    }
    // A bad lkey: error CQE, the SQ goes to ERR, later WQEs are flushed.
    let key = e.key;
    let bad = Eth {
        key: key ^ 0x100,
        ..e
    };
    bad.send(&l2(MAC_B, MAC_A), 0, 10);
    bad.scq.expect_err(CqeOpcode::ReqErr, 0x4);
    bad.send(&l2(MAC_B, MAC_A), 0, 10);
    bad.scq.expect_err(CqeOpcode::ReqErr, 0x5);
    assert_eq!(cap.0.lock().unwrap().len(), 0);
}

#[test]
fn frames_need_the_port_up() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.post_recv(0, 2048);
    e.n.dev().raise_port_change(1, false);
    assert!(!e.n.dev().receive_frame(&l2(MAC_A, MAC_B)));
    e.n.dev().raise_port_change(1, true);
    assert!(e.n.dev().receive_frame(&l2(MAC_A, MAC_B)));
    // Garbage frames never panic and are dropped.
    for len in [0usize, 1, 5, 13, 17] {
        assert!(!e.n.dev().receive_frame(&vec![0xff; len]));
    }
}

#[test]
fn an_indirect_tir_delivers_to_the_first_rq_of_its_table() {
    let e = Eth::new(Node::inline(), &[]);
    let host = &e.n.host;
    let rqtn = id_at(
        &host
            .run::<cmd::CreateRqt>(0, 8, 0, |i| {
                let mut c = i.rqt_context_mut();
                c.set_rqt_max_size(2);
                c.set_rqt_actual_size(2);
                let raw = i.storage_mut();
                raw.write_be32(0x110, e.rqn);
                raw.write_be32(0x114, e.rqn);
            })
            .ok(),
    );
    let tirn = id_at(
        &host
            .run::<cmd::CreateTir>(0, 0, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_transport_domain(e.td);
                c.set_disp_type(TircDispType::Indirect);
                c.set_indirect_table(rqtn);
            })
            .ok(),
    );
    e.add_entry(3, MAC_B, tirn);
    e.post_recv(0, 256);
    assert!(!e.n.dev().receive_frame(&l2(MAC_A, MAC_B)));
    assert!(e.n.dev().receive_frame(&l2(MAC_B, MAC_A)));
    assert_eq!(e.rcq.expect(CqeOpcode::RespSend).qpn(), 0x103);
}

/// Many frames through one doorbell, looped back under one lock of the model: the RQ's
/// receive counter and the CQs' consumer indexes may be read once for the batch, but an RQ
/// that runs out of WQEs and CQs that fill up are noticed at the frame where it happens.
#[test]
fn a_batch_runs_out_of_receive_wqes_and_overflows_cqs_where_it_happens() {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    let dev = e.n.dev().clone();
    dev.loopback(true);
    for k in 0..3 {
        e.post_recv(k * 256, 256);
    }
    let mut first8 = 0;
    for _ in 0..5 {
        first8 = e.post_send(&l2(MAC_A, MAC_B), 0, 10);
    }
    e.ring_send(first8);
    assert_eq!((dev.rx_frames(), dev.rx_dropped()), (3, 2));
    for k in 0..3 {
        assert_eq!(e.rcq.expect(CqeOpcode::RespSend).wqe_counter(), k);
    }
    assert!(e.rcq.poll().is_none());
    for k in 0..5 {
        assert_eq!(e.scq.expect(CqeOpcode::Req).wqe_counter(), k);
    }
    // Receive WQEs posted after the batch are found by the next one.
    e.post_recv(0, 256);
    e.send(&l2(MAC_A, MAC_B), 0, 10);
    assert_eq!(e.rcq.expect(CqeOpcode::RespSend).wqe_counter(), 3);
    e.scq.expect(CqeOpcode::Req);

    // 20 frames into CQs of 16 entries nobody consumes: both overflow at the 17th CQE.
    for _ in 0..20 {
        e.post_recv(0, 256);
    }
    for _ in 0..20 {
        first8 = e.post_send(&l2(MAC_A, MAC_B), 0, 10);
    }
    e.ring_send(first8);
    for cq in [&e.scq, &e.rcq] {
        assert_eq!(e.n.query_cq(cq.cqn).cq_context().status(), 0x9, "overflow");
        for _ in 0..16 {
            assert!(cq.poll().is_some());
        }
        assert!(cq.poll().is_none(), "nothing overwritten");
    }
}
