//! Checksum offloads of the Ethernet path: an SQ's Ethernet segment asks for the IPv4 header
//! and L4 checksums (cs_flags) and the frame leaves with them filled in; a received frame's
//! CQE carries the ones'-complement sum over its IP packet (what Linux uses for
//! CHECKSUM_COMPLETE) and whether the IPv4 header and TCP/UDP checksums were right. The
//! sums here are computed by the test's own RFC 1071 code, not the model's.

mod common;

use common::dp::Node;
use common::eth::Eth;
use mlx5_prm::CqeOpcode;

const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

/// RFC 1071: the folded ones'-complement sum of big-endian words, odd byte padded.
fn ones(data: &[u8], mut acc: u32) -> u16 {
    for (i, b) in data.iter().enumerate() {
        acc += if i % 2 == 0 {
            u32::from(*b) << 8
        } else {
            u32::from(*b)
        };
    }
    while acc > 0xffff {
        acc = (acc >> 16) + (acc & 0xffff);
    }
    acc as u16
}

/// L2 + IPv4 + UDP headers (42 bytes) for `payload` bytes, checksums left 0.
fn headers(payload: usize) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&MAC_A);
    h.extend_from_slice(&MAC_B);
    h.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload) as u16;
    h.extend_from_slice(&[0x45, 0]);
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[
        0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 192, 168, 7, 1, 192, 168, 7, 2,
    ]);
    h.extend_from_slice(&[0x9c, 0x40, 0x13, 0x88]);
    h.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h
}

/// Sends headers + payload with `cs_flags` over loopback; the received frame and its CQE's
/// (check_sum, l3_ok, l4_ok).
fn round_trip(cs_flags: u8, payload: &[u8]) -> (Vec<u8>, (u16, bool, bool)) {
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.n.dev().loopback(true);
    e.n.write(e.buf + 0x8000, payload);
    e.post_recv(0, 4096);
    e.cs_flags.set(cs_flags);
    e.send(&headers(payload.len()), 0x8000, payload.len() as u32);
    e.scq.expect(CqeOpcode::Req);
    let c = e.rcq.expect(CqeOpcode::RespSend);
    let frame = e.n.read(e.buf, c.byte_cnt() as usize);
    (frame, (c.check_sum(), c.l3_ok(), c.l4_ok()))
}

#[test]
fn requested_checksums_are_filled_in_and_verified_on_receive() {
    let payload: Vec<u8> = (0..777u32).map(|i| (i * 7 + 3) as u8).collect();
    let (f, (check_sum, l3_ok, l4_ok)) = round_trip(0xc0, &payload);
    assert_eq!(f.len(), 42 + payload.len());
    assert_eq!(ones(&f[14..34], 0), 0xffff, "IPv4 header checksum");
    let pseudo = ones(&f[26..34], 17 + (8 + payload.len()) as u32);
    assert_eq!(ones(&f[34..], u32::from(pseudo)), 0xffff, "UDP checksum");
    assert_ne!(&f[40..42], &[0, 0]);
    assert_eq!(check_sum, ones(&f[14..], 0), "CQE sum over the IP packet");
    assert!(l3_ok && l4_ok);
}

#[test]
fn without_offload_the_frame_is_sent_as_built_and_judged_as_it_is() {
    let (f, (check_sum, l3_ok, l4_ok)) = round_trip(0, b"plain");
    assert_eq!(&f[24..26], &[0, 0], "IPv4 checksum left 0");
    assert_eq!(check_sum, ones(&f[14..], 0));
    assert!(!l3_ok, "a zero IPv4 header checksum is wrong");
    assert!(l4_ok, "UDP checksum 0: none sent, nothing to verify");
}

#[test]
fn a_corrupted_checksum_is_reported_not_fixed() {
    let (mut f, _) = round_trip(0xc0, b"payload");
    f[41] ^= 0xff;
    let e = Eth::new(Node::inline(), &[MAC_A]);
    e.post_recv(0, 4096);
    assert!(e.n.dev().receive_frame(&f));
    let c = e.rcq.expect(CqeOpcode::RespSend);
    assert!(c.l3_ok() && !c.l4_ok());
    assert_eq!(e.n.read(e.buf, f.len()), f);
}
