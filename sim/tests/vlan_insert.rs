//! VLAN insertion on send: with `wqe_vlan_insert` advertised and no headers inlined (the
//! model's inline mode is "not required"), mlx5e asks the device for the tag in the Ethernet
//! segment (`eseg->insert`: type bit 15, bit 0 for a service tag, then the TCI) and the
//! device puts it after the two MAC addresses; when it inlines headers it writes the tag into
//! them itself (`mlx5e_insert_vlan`) and the device sends what it was given. Frames are judged
//! by the test's own parser and checksum.

mod common;

use common::tx::{parse, payload, Spec, Tx, Wqe, MAC_A, MAC_B};
use mlx5_prm::{CqeOpcode, SendOpcode, SqState};
use mlx5_sim::{Caps, Config};

/// An untagged IPv4/UDP frame of `len` payload bytes, checksums zero.
fn untagged(len: usize) -> Vec<u8> {
    let spec = Spec {
        tcp: false,
        ..Spec::TCP4
    };
    let mut f = spec.headers(len);
    f[24..26].fill(0);
    f[40..42].fill(0);
    f.extend_from_slice(&payload(len));
    f
}

/// Sends `frame` from the data buffer with `w`'s Ethernet segment; returns what left.
fn send(t: &Tx, w: Wqe, frame: &[u8]) -> Vec<Vec<u8>> {
    t.e.n.write(t.e.buf, frame);
    t.send(&w.data(t.e.key, t.e.buf, frame.len() as u32));
    t.frames()
}

#[test]
fn a_customer_tag_goes_after_the_addresses_and_the_checksums_cover_the_tagged_frame() {
    let t = Tx::new();
    let f = untagged(333);
    // Priority 5, VLAN 100; L3 and L4 checksums asked for.
    let out = send(&t, Wqe::send_vlan(0xc0, 0xa064, false), &f);
    t.e.scq.expect(CqeOpcode::Req);
    assert_eq!(out.len(), 1);
    let g = &out[0];
    assert_eq!(g.len(), f.len() + 4);
    assert_eq!(&g[..12], &f[..12]);
    assert_eq!(&g[12..16], &[0x81, 0x00, 0xa0, 0x64]);
    assert_eq!(&g[16..24], &f[12..20]);
    let p = parse(g);
    assert_eq!(p.vlan, Some(0xa064));
    assert!(p.ip_ok && p.l4_ok);
    assert_eq!(p.payload, payload(333));
}

#[test]
fn a_service_tag_uses_the_802_1ad_ethertype() {
    let t = Tx::new();
    let f = untagged(20);
    let out = send(&t, Wqe::send_vlan(0, 0x0007, true), &f);
    t.e.scq.expect(CqeOpcode::Req);
    assert_eq!(&out[0][12..16], &[0x88, 0xa8, 0x00, 0x07]);
    assert_eq!(&out[0][16..], &f[12..]);
}

#[test]
fn a_tag_the_driver_inlined_is_sent_as_given() {
    // mlx5e with headers inlined: the tag is part of the inline header (ihs + 4).
    let t = Tx::new();
    let spec = Spec {
        tcp: false,
        vlan: Some(0x0123),
        ..Spec::TCP4
    };
    let hdr = spec.headers(64);
    t.e.n.write(t.e.buf, &payload(64));
    t.send(&Wqe::eth(SendOpcode::Send, 0xc0, 0, &hdr).data(t.e.key, t.e.buf, 64));
    t.e.scq.expect(CqeOpcode::Req);
    let out = t.frames();
    let p = parse(&out[0]);
    assert_eq!((p.vlan, p.ip_ok, p.l4_ok), (Some(0x0123), true, true));
    assert_eq!(&out[0][..12], &[MAC_B, MAC_A].concat()[..]);
    assert_eq!(p.payload, payload(64));
}

#[test]
fn frames_a_tag_cannot_go_into() {
    // Fewer than 12 bytes: no room for the addresses the tag follows.
    let t = Tx::new();
    assert!(send(&t, Wqe::send_vlan(0, 5, false), &[1; 11]).is_empty());
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x1);
    assert_eq!(t.state(), SqState::Err);
    // The tag would make the frame longer than 64 KiB.
    let t = Tx::new();
    assert!(send(&t, Wqe::send_vlan(0, 5, false), &vec![0; 65533]).is_empty());
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x1);
    // 64 KiB exactly is still a frame.
    let t = Tx::new();
    assert_eq!(
        send(&t, Wqe::send_vlan(0, 5, false), &vec![0; 65532])[0].len(),
        65536
    );
    t.e.scq.expect(CqeOpcode::Req);
    // A trailer request (insert_trailer is not advertised).
    let t = Tx::new();
    let mut w = Wqe::send_vlan(0, 5, false);
    w.body[12..14].copy_from_slice(&0x4000u16.to_be_bytes());
    assert!(send(&t, w, &untagged(10)).is_empty());
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x2);
}

#[test]
fn without_the_capability_the_request_is_a_malformed_wqe() {
    let mut caps = Caps::connectx5();
    caps.eth_max.set_wqe_vlan_insert(false);
    caps.eth_cur.set_wqe_vlan_insert(false);
    let t = Tx::with_config(Config {
        caps,
        ..Config::default()
    });
    assert!(send(&t, Wqe::send_vlan(0, 5, false), &untagged(10)).is_empty());
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x2);
    assert_eq!(t.state(), SqState::Err);
}
