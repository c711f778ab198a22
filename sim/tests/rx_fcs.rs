//! FCS scatter: the Ethernet capabilities advertise scatter_fcs, and an RQ created (or
//! modified) with it gets each frame followed by the frame's 4-byte FCS, counted in
//! byte_cnt, as Linux's NETIF_F_RXFCS expects (mlx5e then sizes its buffers for it and leaves
//! the FCS at the end of the skb; its CHECKSUM_COMPLETE fix-up adds the bytes past the IP
//! packet, so check_sum still covers the IP packet alone). The FCS is checked against the
//! CRC of a known frame, against the test's own bit-by-bit CRC-32, and by the receiver's
//! residue check.

mod common;

use common::rx::{frame, ones, Rx, BUF};
use mlx5_prm::cmd::{self, QueryHcaCapOpMod};
use mlx5_prm::{CqeOpcode, ModifyRqBitmask, PerProtocolNetworkingOffloadCaps};

/// IEEE 802.3's CRC-32, bit by bit: reflected polynomial 0xEDB88320, preset and final
/// complement.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A 60-byte frame (addresses aa.., 55.., length 4, then de ad be ef and padding) and its
/// FCS as zlib's crc32 computes it, in wire order.
const KNOWN: ([u8; 18], [u8; 4]) = (
    [
        0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x00, 0x04, 0xde,
        0xad, 0xbe, 0xef,
    ],
    [0x54, 0xd9, 0x31, 0xe4],
);

#[test]
fn the_tests_crc_is_the_standard_one() {
    assert_eq!(
        crc32(b"123456789"),
        0xcbf4_3926,
        "the CRC catalogue's check value"
    );
    let mut known = KNOWN.0.to_vec();
    known.resize(60, 0);
    assert_eq!(crc32(&known).to_le_bytes(), KNOWN.1);
}

fn scatter_fcs_rx() -> Rx {
    let rx = Rx::new(1, 16, |c| c.set_scatter_fcs(true));
    rx.steer_all_to(rx.direct_tir(0));
    rx
}

#[test]
fn the_capability_is_advertised_and_the_fcs_follows_the_frame() {
    let rx = scatter_fcs_rx();
    let r =
        rx.n.host
            .simple::<cmd::QueryHcaCap>(QueryHcaCapOpMod::EthernetOffloadsCur)
            .ok();
    assert!(PerProtocolNetworkingOffloadCaps::new_unchecked(&r.out[0x10..0x110]).scatter_fcs());

    let mut known = KNOWN.0.to_vec();
    known.resize(60, 0);
    assert!(rx.receive(&known));
    let g = rx.got();
    assert_eq!(g.cqe.byte_cnt(), 64);
    assert_eq!(&g.data[..60], &known[..]);
    assert_eq!(&g.data[60..], &KNOWN.1);
    assert_eq!(
        crc32(&g.data),
        0x2144_df1c,
        "the residue of a frame and its FCS"
    );

    // An IP frame: the sum covers the IP packet, not the FCS behind it.
    let f = frame::v4(None, 17, ([10, 0, 0, 1], 1), ([10, 0, 0, 2], 2), 333);
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!(g.data.len(), f.len() + 4);
    assert_eq!(&g.data[f.len()..], &crc32(&f).to_le_bytes());
    assert_eq!(g.cqe.check_sum(), ones(&f[14..]));
    assert!(g.cqe.l3_ok() && g.cqe.l4_ok());
}

#[test]
fn a_stripped_frame_keeps_the_fcs_it_had_on_the_wire() {
    let rx = scatter_fcs_rx();
    let f = frame::v4(Some(7), 17, ([10, 0, 0, 1], 1), ([10, 0, 0, 2], 2), 50);
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!(g.cqe.vlan_info(), 7);
    assert_eq!(g.data.len(), f.len() - 4 + 4);
    assert_eq!(
        &g.data[..g.data.len() - 4],
        &[&f[..12], &f[16..]].concat()[..]
    );
    assert_eq!(&g.data[g.data.len() - 4..], &crc32(&f).to_le_bytes());
}

#[test]
fn the_fcs_needs_room_in_the_receive_buffer() {
    let rx = scatter_fcs_rx();
    let fits_bare = frame::v4(None, 17, ([1; 4], 1), ([2; 4], 2), BUF as usize - 42);
    assert_eq!(fits_bare.len() as u64, BUF);
    assert!(!rx.receive(&fits_bare));
    rx.rqs[0].cq.expect_err(CqeOpcode::RespErr, 0x1);
    // The RQ stays ready: a smaller frame goes through.
    let small = frame::v4(None, 17, ([1; 4], 1), ([2; 4], 2), 10);
    assert!(rx.receive(&small));
    assert_eq!(rx.got().data.len(), small.len() + 4);

    // Without scatter_fcs (MODIFY_RQ, as ethtool -K rx-fcs off), the same frame fits.
    rx.modify_rq(0, ModifyRqBitmask::ScatterFcs.raw().into(), |c| {
        c.set_scatter_fcs(false)
    });
    assert!(rx.receive(&fits_bare));
    let g = rx.got();
    assert_eq!(g.data, fits_bare);
    assert_eq!(u64::from(g.cqe.byte_cnt()), BUF);
}
