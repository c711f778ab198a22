//! Large send offload (send opcode 0x0e) as Linux's mlx5e posts it for TSO, TSO6 and UDP GSO:
//! every header inline in the Ethernet segment, the mss there, the payload in the gather
//! list. Each segment leaves as a frame of its own; the test's own parser and RFC 1071 sums
//! judge lengths, IPv4 IDs, TCP sequence numbers and flags (as Linux's software GSO sets
//! them), checksums and the payload. Malformed LSO WQEs get the PRM's error CQE and move the
//! SQ to ERR without sending anything.

mod common;

use common::tx::{ones, parse, payload, Spec, Tx, Wqe};
use mlx5_prm::cmd;
use mlx5_prm::{CqeOpcode, QueryVportCounterOut, SendOpcode, SqState};
use mlx5_sim::{Caps, Config};

const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const CWR: u8 = 0x80;
/// cs_flags as mlx5e sets them for a GSO skb: L3 and L4 checksums.
const CSUM: u8 = 0xc0;

/// Posts an LSO of `data` behind `spec`'s headers with `mss`, the payload gathered from
/// `cuts.len() + 1` data segments (cut at the given offsets) of a buffer of its own; rings,
/// expects the CQE and returns the frames.
fn lso(t: &Tx, spec: Spec, mss: u16, data: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let hdr = spec.headers(data.len());
    let (addr, key) = t.buffer(data);
    let mut w = Wqe::eth(SendOpcode::Lso, CSUM, mss, &hdr);
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&data.len())) {
        w = w.data(key, addr + from as u64, (to - from) as u32);
        from = to;
    }
    let index = t.pc();
    t.send(&w);
    let c = t.e.scq.expect(CqeOpcode::Req);
    assert_eq!(c.wqe_counter(), index);
    (hdr, t.frames())
}

/// Checks `frames` as the segments of an LSO of `data` with headers `hdr` of `spec`: each
/// header equal to the original but for the fields segmentation changes, those as Linux's
/// software GSO would have set them, checksums right, payloads in order.
fn check(spec: Spec, hdr: &[u8], mss: usize, data: &[u8], frames: &[Vec<u8>]) {
    let n = data.len().div_ceil(mss).max(1);
    assert_eq!(frames.len(), n, "segments");
    let l3 = if spec.vlan.is_some() { 18 } else { 14 };
    let l4 = hdr.len()
        - if spec.tcp {
            20 + 4 * usize::from(spec.tcp_opt_words)
        } else {
            8
        };
    // Header bytes segmentation changes: IP lengths, ID and checksum; L4 sequence number,
    // flags, length and checksum.
    let mut changes = vec![false; hdr.len()];
    let mut mark = |at: usize, len: usize| changes[at..at + len].fill(true);
    if spec.v6 {
        mark(l3 + 4, 2);
    } else {
        mark(l3 + 2, 4);
        mark(l3 + 10, 2);
    }
    if spec.tcp {
        mark(l4 + 4, 4);
        mark(l4 + 13, 1);
        mark(l4 + 16, 2);
    } else {
        mark(l4 + 4, 4);
    }
    let mut all = Vec::new();
    for (k, f) in frames.iter().enumerate() {
        let seg = &data[(k * mss).min(data.len())..((k + 1) * mss).min(data.len())];
        assert_eq!(f.len(), hdr.len() + seg.len(), "segment {k}");
        for (i, (&a, &b)) in f.iter().zip(hdr).enumerate() {
            assert!(changes[i] || a == b, "segment {k}: header byte {i}");
        }
        let p = parse(f);
        assert_eq!(p.vlan, spec.vlan);
        assert!(p.ip_ok, "segment {k}: IPv4 header checksum");
        assert!(p.l4_ok, "segment {k}: L4 checksum");
        if spec.v6 {
            assert_eq!(usize::from(p.ip_len), hdr.len() - l3 - 40 + seg.len());
        } else {
            assert_eq!(usize::from(p.ip_len), hdr.len() - l3 + seg.len());
            assert_eq!(p.ip_id, 0x1234u16.wrapping_add(k as u16), "IPv4 ID");
        }
        if spec.tcp {
            assert_eq!(p.seq, 1000 + (k * mss) as u32, "sequence number");
            let mut flags = spec.flags;
            if k + 1 < n {
                flags &= !(FIN | PSH);
            }
            if k > 0 {
                flags &= !CWR;
            }
            assert_eq!(p.flags, flags, "segment {k}: TCP flags");
        } else {
            assert_eq!(usize::from(p.udp_len), 8 + seg.len());
        }
        assert_eq!(p.payload, seg);
        all.extend_from_slice(&p.payload);
    }
    assert_eq!(all, data);
}

#[test]
fn tcp_over_ipv4_in_segments_the_last_one_short() {
    let t = Tx::new();
    // FIN, PSH and CWR set on the packet: FIN/PSH only on the last segment, CWR on the first.
    let spec = Spec {
        flags: FIN | PSH | ACK | CWR,
        ..Spec::TCP4
    };
    let data = payload(4500);
    let (hdr, frames) = lso(&t, spec, 1000, &data, &[700, 701, 2999]);
    check(spec, &hdr, 1000, &data, &frames);
    assert_eq!(frames[0][14 + 20 + 13], CWR | ACK);
    assert_eq!(frames[2][14 + 20 + 13], ACK);
    assert_eq!(frames[4][14 + 20 + 13], FIN | PSH | ACK);
    // Each segment is a frame on the port: the device's count and the vport's.
    assert_eq!(t.e.n.dev().tx_frames(), 5);
    let r =
        t.e.n
            .host
            .run::<cmd::QueryVportCounter>(0, 0, 0, |_| {})
            .ok();
    let v = QueryVportCounterOut::new_unchecked(&r.out[..]);
    let sent = v.transmitted_eth_unicast();
    assert_eq!((sent.packets(), sent.octets()), (5, (5 * 54 + 4500) as u64));
}

#[test]
fn tcp_over_ipv6_with_options_and_a_vlan_tag_the_driver_inlined() {
    let t = Tx::new();
    // As mlx5e_insert_vlan: the tag inside the inline headers (ihs + 4).
    let spec = Spec {
        v6: true,
        vlan: Some(0x6005),
        tcp_opt_words: 3,
        ..Spec::TCP4
    };
    let data = payload(10_000);
    let (hdr, frames) = lso(&t, spec, 1388, &data, &[4096]);
    assert_eq!(hdr.len(), 18 + 40 + 32);
    check(spec, &hdr, 1388, &data, &frames);
}

#[test]
fn ipv4_options_and_an_exact_multiple_of_mss() {
    let t = Tx::new();
    let spec = Spec {
        ip_opt_words: 10,
        tcp_opt_words: 10,
        ..Spec::TCP4
    };
    let data = payload(3 * 512);
    let (hdr, frames) = lso(&t, spec, 512, &data, &[]);
    assert_eq!(hdr.len(), 14 + 60 + 60, "the longest headers there are");
    check(spec, &hdr, 512, &data, &frames);
}

#[test]
fn udp_gso_over_ipv4_and_ipv6() {
    for v6 in [false, true] {
        let t = Tx::new();
        let spec = Spec {
            v6,
            tcp: false,
            ..Spec::TCP4
        };
        let data = payload(5000);
        let (hdr, frames) = lso(&t, spec, 1472, &data, &[100]);
        check(spec, &hdr, 1472, &data, &frames);
        assert_eq!(frames.len(), 4);
    }
}

#[test]
fn a_payload_within_one_mss_is_one_frame_and_none_is_the_headers_alone() {
    let t = Tx::new();
    let spec = Spec {
        flags: FIN | PSH | ACK | CWR,
        ..Spec::TCP4
    };
    for len in [1000, 1, 0] {
        let data = payload(len);
        let (hdr, frames) = lso(&t, spec, 1000, &data, &[]);
        check(spec, &hdr, 1000, &data, &frames);
        assert_eq!(parse(&frames[0]).flags, spec.flags, "first and last");
    }
}

#[test]
fn inline_payload_and_checksums_without_cs_flags() {
    // Payload partly inline in the WQE (an inline data segment), partly gathered; cs_flags 0:
    // segmentation fills in both checksums anyway.
    let t = Tx::new();
    let spec = Spec::TCP4;
    let data = payload(300);
    let hdr = spec.headers(data.len());
    let (addr, key) = t.buffer(&data[40..]);
    let w = Wqe::eth(SendOpcode::Lso, 0, 128, &hdr)
        .inline(&data[..40])
        .data(key, addr, 260);
    t.send(&w);
    t.e.scq.expect(CqeOpcode::Req);
    check(spec, &hdr, 128, &data, &t.frames());
}

#[test]
fn the_largest_lso_is_512_kib_of_payload() {
    assert_eq!(Caps::connectx5().eth_max.max_lso_cap(), 19);
    assert_eq!(Caps::connectx5_linux_ethernet().eth_cur.max_lso_cap(), 19);
    let t = Tx::new();
    let spec = Spec::TCP4;
    let data = payload(1 << 19);
    let (hdr, frames) = lso(&t, spec, 1448, &data, &[65536, 131072, 300_001]);
    // The IPv4 total length of the headers as given does not fit (BIG TCP leaves 0): each
    // segment gets its own anyway.
    check(spec, &hdr, 1448, &data, &frames);
    assert_eq!(frames.len(), (1usize << 19).div_ceil(1448));

    // One byte more: local length error, nothing sent, the SQ in ERR.
    let t = Tx::new();
    let data = payload((1 << 19) + 1);
    let (addr, key) = t.buffer(&data);
    t.send(
        &Wqe::eth(SendOpcode::Lso, CSUM, 1448, &spec.headers(data.len())).data(
            key,
            addr,
            data.len() as u32,
        ),
    );
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x1);
    assert!(t.frames().is_empty());
    assert_eq!(t.state(), SqState::Err);
}

#[test]
fn a_profile_with_a_smaller_max_lso_cap_is_held_to_it() {
    let mut caps = Caps::connectx5();
    caps.eth_max.set_max_lso_cap(16);
    caps.eth_cur.set_max_lso_cap(16);
    let t = Tx::with_config(Config {
        caps,
        ..Config::default()
    });
    let spec = Spec::TCP4;
    let data = payload(1 << 16);
    let (hdr, frames) = lso(&t, spec, 9000, &data, &[]);
    check(spec, &hdr, 9000, &data, &frames);
    let data = payload((1 << 16) + 1);
    let (addr, key) = t.buffer(&data);
    t.send(
        &Wqe::eth(SendOpcode::Lso, CSUM, 9000, &spec.headers(data.len())).data(
            key,
            addr,
            data.len() as u32,
        ),
    );
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x1);
}

/// Posts the WQE `build` makes on a fresh SQ: it must fail with `syndrome`, send nothing,
/// leave the SQ in ERR, and the SEND after it must be flushed.
#[track_caller]
fn refused(syndrome: u8, build: impl FnOnce(&Tx) -> Wqe) {
    let t = Tx::new();
    t.send(&build(&t));
    let c = t.e.scq.expect_err(CqeOpcode::ReqErr, syndrome);
    assert_eq!(c.wqe_counter(), 0);
    assert!(t.frames().is_empty(), "nothing sent");
    assert_eq!(t.e.n.dev().tx_frames(), 0);
    assert_eq!(t.state(), SqState::Err);
    let hdr = Spec::TCP4.headers(10);
    t.send(&Wqe::eth(SendOpcode::Send, 0, 0, &hdr).data(t.e.key, t.e.buf, 10));
    t.e.scq.expect_err(CqeOpcode::ReqErr, 0x5);
    assert!(t.frames().is_empty());
}

/// An LSO of 3000 bytes from the SQ's data buffer behind `hdr`.
fn lso3000(t: &Tx, hdr: &[u8], mss: u16) -> Wqe {
    Wqe::eth(SendOpcode::Lso, CSUM, mss, hdr).data(t.e.key, t.e.buf, 3000)
}

#[test]
fn malformed_lso_wqes_get_error_cqes() {
    const QP_OP: u8 = 0x2;
    const LENGTH: u8 = 0x1;
    const PROT: u8 = 0x4;
    let spec = Spec::TCP4;
    let hdr = spec.headers(3000);

    // mss 0.
    refused(QP_OP, |t| lso3000(t, &hdr, 0));
    // Headers not all inline: only L2 (the IP and TCP headers in the gather list), or all
    // but the last TCP byte.
    refused(QP_OP, |t| lso3000(t, &hdr[..14], 1000));
    refused(QP_OP, |t| lso3000(t, &hdr[..hdr.len() - 1], 1000));
    // A payload byte inline after the headers.
    let mut more = hdr.clone();
    more.push(0xab);
    refused(QP_OP, |t| lso3000(t, &more, 1000));
    // Neither TCP nor UDP (ICMP), an IPv4 fragment, IPv6 with a hop-by-hop extension header,
    // no IP at all (ARP).
    let mut icmp = hdr.clone();
    icmp[14 + 9] = 1;
    refused(QP_OP, |t| lso3000(t, &icmp, 1000));
    let mut frag = hdr.clone();
    frag[14 + 6] = 0x20;
    refused(QP_OP, |t| lso3000(t, &frag, 1000));
    let mut hbh = Spec { v6: true, ..spec }.headers(3000);
    hbh[14 + 6] = 0;
    refused(QP_OP, |t| lso3000(t, &hbh, 1000));
    let mut arp = hdr.clone();
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    refused(QP_OP, |t| lso3000(t, &arp, 1000));
    // An inline header size beyond the WQE's end.
    refused(QP_OP, |t| {
        let mut w = lso3000(t, &hdr, 1000);
        w.body[12..14].copy_from_slice(&300u16.to_be_bytes());
        w
    });
    // A VLAN insert request instead of inline headers.
    refused(QP_OP, |t| {
        let mut w = lso3000(t, &hdr, 1000);
        w.body[12..16].copy_from_slice(&[0x80, 0, 0, 5]);
        w
    });
    // A segment longer than the largest frame: mss 65535 with 54 bytes of headers.
    refused(LENGTH, |t| {
        let (addr, key) = t.buffer(&payload(70_000));
        Wqe::eth(SendOpcode::Lso, CSUM, 65535, &spec.headers(70_000)).data(key, addr, 70_000)
    });
    // More than 65535 segments (Linux never makes more): mss 1 and 65536 bytes.
    refused(LENGTH, |t| {
        let (addr, key) = t.buffer(&payload(65536));
        Wqe::eth(SendOpcode::Lso, CSUM, 1, &spec.headers(65536)).data(key, addr, 65536)
    });
    // A bad key in the gather list.
    refused(PROT, |t| {
        Wqe::eth(SendOpcode::Lso, CSUM, 1000, &hdr).data(t.e.key ^ 0x100, t.e.buf, 3000)
    });
}

#[test]
fn the_most_segments_an_lso_may_make() {
    // 65535 segments of one byte each: Linux's limit, accepted.
    let t = Tx::new();
    let spec = Spec {
        tcp: false,
        ..Spec::TCP4
    };
    let data = payload(65535);
    let (hdr, frames) = lso(&t, spec, 1, &data, &[]);
    assert_eq!(frames.len(), 65535);
    for k in [0, 1, 30_000, 65534] {
        let p = parse(&frames[k]);
        assert_eq!(p.payload, [data[k]]);
        assert!(p.ip_ok && p.l4_ok);
        assert_eq!(&frames[k][..12], &hdr[..12]);
    }
    // The test's own sum over one whole frame's UDP datagram, spelled out once.
    let f = &frames[7];
    let pseudo = u64::from(ones(&f[26..34], 0)) + 17 + 9;
    assert_eq!(ones(&f[34..], pseudo), 0xffff);
}
