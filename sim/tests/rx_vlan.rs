//! VLAN stripping on receive: an RQ with vsd clear (mlx5e's default, C-tag receive offload
//! on) gets a C-tagged frame without its tag and finds the tag in the CQE (has_vlan,
//! vlan_info: the whole TCI, which mlx5e hands the stack); steering still sees the tag (a VLAN
//! rule picks the frame by its VID); an RQ with vsd set gets the frame as it came. The
//! checksum fields stay those of the IP packet, which is what mlx5e's CHECKSUM_COMPLETE needs
//! from a stripped frame (it adds the sum of any tag still in the skb, and of the bytes past
//! the IP packet, itself). Expected bytes and sums come from the test's own code.

mod common;

use common::rx::{frame, group, ones, Rx};
use mlx5_prm::{CqeL3HdrType, CqeL4HdrType, ModifyRqBitmask};

const UDP: u8 = 17;
/// Priority 5, DEI 0, VID 42.
const TCI: u16 = 5 << 13 | 42;

/// A UDP/IPv4 frame behind a C-tag with `tci` (none: untagged).
fn udp(tci: Option<u16>) -> Vec<u8> {
    frame::v4(tci, UDP, ([10, 0, 0, 1], 5000), ([10, 0, 0, 2], 6000), 100)
}

/// `f` with the four bytes after the MAC addresses removed.
fn untagged(f: &[u8]) -> Vec<u8> {
    [&f[..12], &f[16..]].concat()
}

/// A receive side with two RQs: a VLAN rule (index 0) sends VID 42 to RQ 0 with flow tag
/// 0x42, everything else goes to RQ 1.
fn vlan_rx(tweak: impl Fn(&mut mlx5_prm::Rqc<&mut [u8]>)) -> Rx {
    let rx = Rx::new(2, 16, tweak);
    let vlan = group(&rx.n, rx.table, 0, 7, 1, |h| {
        h.set_cvlan_tag(true);
        h.set_first_vid(0xfff);
    });
    let to0 = rx.direct_tir(0);
    rx.entry(vlan, 0, 0x42, to0, |h| {
        h.set_cvlan_tag(true);
        h.set_first_vid(42);
    });
    rx.steer_all_to(rx.direct_tir(1));
    rx
}

#[test]
fn a_c_tag_is_stripped_into_the_cqe_after_steering_saw_it() {
    let rx = vlan_rx(|_| {});
    let f = udp(Some(TCI));
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!(g.rq, 0, "the VLAN rule matched the tag");
    assert_eq!(g.cqe.qpn() & 0xfff, 0x42, "its flow tag");
    let want = untagged(&f);
    assert_eq!(g.data, want);
    assert_eq!(g.cqe.byte_cnt() as usize, f.len() - 4);
    assert!(g.cqe.has_vlan());
    assert_eq!(g.cqe.vlan_info(), TCI);
    // The IP packet is untouched: its sum, and the verdicts on its checksums.
    assert_eq!(g.cqe.check_sum(), ones(&want[14..]));
    assert_eq!(g.cqe.check_sum(), ones(&f[18..]));
    assert!(g.cqe.l3_ok() && g.cqe.l4_ok());
    assert_eq!(g.cqe.l3_hdr_type(), Ok(CqeL3HdrType::Ipv4));
    assert_eq!(g.cqe.l4_hdr_type(), Ok(CqeL4HdrType::Udp));

    // Another VID misses the VLAN rule, and is stripped all the same.
    let other = udp(Some(43));
    assert!(rx.receive(&other));
    let g = rx.got();
    assert_eq!((g.rq, g.cqe.vlan_info()), (1, 43));
    assert!(g.cqe.has_vlan());
    assert_eq!(g.data, untagged(&other));

    // Untagged and S-tagged (0x88a8) frames are delivered as they came.
    let mut s_tagged = udp(Some(TCI));
    s_tagged[12..14].copy_from_slice(&0x88a8u16.to_be_bytes());
    for f in [udp(None), s_tagged] {
        assert!(rx.receive(&f));
        let g = rx.got();
        assert_eq!(g.rq, 1);
        assert!(!g.cqe.has_vlan());
        assert_eq!(g.cqe.vlan_info(), 0);
        assert_eq!(g.data, f);
    }
}

#[test]
fn with_vsd_the_frame_keeps_its_tag() {
    let rx = vlan_rx(|c| c.set_vsd(true));
    let f = udp(Some(TCI));
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!(g.rq, 0);
    assert_eq!(g.data, f);
    assert_eq!(g.cqe.byte_cnt() as usize, f.len());
    assert!(!g.cqe.has_vlan());
    assert_eq!(g.cqe.vlan_info(), 0);
    // The sum is the IP packet's still (mlx5e adds the tag's bytes when the skb has them).
    assert_eq!(g.cqe.check_sum(), ones(&f[18..]));
    assert!(g.cqe.l3_ok() && g.cqe.l4_ok());

    // MODIFY_RQ clears vsd on RQ 0 (ethtool -K rxvlan on): the next frame is stripped.
    rx.modify_rq(0, ModifyRqBitmask::Vsd.raw().into(), |c| c.set_vsd(false));
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!((g.rq, g.cqe.vlan_info()), (0, TCI));
    assert_eq!(g.data, untagged(&f));
    // ... and setting it again keeps the tag.
    rx.modify_rq(0, ModifyRqBitmask::Vsd.raw().into(), |c| c.set_vsd(true));
    assert!(rx.receive(&f));
    assert_eq!(rx.got().data, f);
}

#[test]
fn a_tagged_frame_shorter_than_its_headers_is_stripped_as_far_as_it_goes() {
    let rx = vlan_rx(|_| {});
    // Addresses and a C-tag only: nothing after the tag to keep.
    let f = frame::l2(Some(TCI), 0x0800)[..16].to_vec();
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!(g.data, f[..12]);
    assert_eq!((g.cqe.has_vlan(), g.cqe.vlan_info()), (true, TCI));
    assert_eq!(g.cqe.l3_hdr_type(), Ok(CqeL3HdrType::None));
}
