//! Receive-side scaling: a hashing TIR spreads frames over the RQs of its RQ table, and the
//! CQE reports the hash (rss_hash_result) and what it covered (rss_hash_type).
//!
//! Every expected hash comes from the test's own bit-by-bit Toeplitz (checked first against
//! Microsoft's published RSS verification vectors, "Verifying the RSS Hash Calculation") or
//! its own XOR; every expected RQ from the table the test wrote, indexed as ethtool's
//! indirection table is (`hash % size`), laid out as mlx5e lays it out (`en/rqt.c`: entry i
//! for channel i % channels, bit-reversed for the XOR hash).

mod common;

use common::rx::{frame, Rx};
use mlx5_prm::{cmd, TircRxHashFn};

/// The key of Microsoft's RSS verification suite.
const KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// One published vector: source and port, destination and port, the hash over the
/// addresses and the hash over addresses and TCP ports.
type Vector<const N: usize> = ([u8; N], u16, [u8; N], u16, u32, u32);

/// Microsoft's IPv4 vectors.
const V4: [Vector<4>; 5] = [
    (
        [66, 9, 149, 187],
        2794,
        [161, 142, 100, 80],
        1766,
        0x323e_8fc2,
        0x51cc_c178,
    ),
    (
        [199, 92, 111, 2],
        14230,
        [65, 69, 140, 83],
        4739,
        0xd718_262a,
        0xc626_b0ea,
    ),
    (
        [24, 19, 198, 95],
        12898,
        [12, 22, 207, 184],
        38024,
        0xd2d0_a5de,
        0x5c2b_394a,
    ),
    (
        [38, 27, 205, 30],
        48228,
        [209, 142, 163, 6],
        2217,
        0x8298_9176,
        0xafc7_327f,
    ),
    (
        [153, 39, 163, 191],
        44251,
        [202, 188, 127, 2],
        1303,
        0x5d18_09c5,
        0x10e8_28a2,
    ),
];

/// Microsoft's IPv6 vectors.
const V6: [Vector<16>; 3] = [
    (
        // 3ffe:2501:200:1fff::7 -> 3ffe:2501:200:3::1
        [
            0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x07,
        ],
        2794,
        [
            0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x01,
        ],
        1766,
        0x2cc1_8cd5,
        0x4020_7d3d,
    ),
    (
        // 3ffe:501:8::260:97ff:fe40:efab -> ff02::1
        [
            0x3f, 0xfe, 0x05, 0x01, 0x00, 0x08, 0, 0, 0x02, 0x60, 0x97, 0xff, 0xfe, 0x40, 0xef,
            0xab,
        ],
        14230,
        [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01],
        4739,
        0x0f0c_461c,
        0xdde5_1bbf,
    ),
    (
        // 3ffe:1900:4545:3:200:f8ff:fe21:67cf -> fe80::200:f8ff:fe21:67cf
        [
            0x3f, 0xfe, 0x19, 0x00, 0x45, 0x45, 0x00, 0x03, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21,
            0x67, 0xcf,
        ],
        44251,
        [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67, 0xcf,
        ],
        38024,
        0x4b61_e985,
        0x02d1_feef,
    ),
];

/// rx_hash_field_select.selected_fields bits.
const SRC_IP: u32 = 1;
const DST_IP: u32 = 2;
const SPORT: u32 = 4;
const DPORT: u32 = 8;
const IP: u32 = SRC_IP | DST_IP;
const IP_PORTS: u32 = IP | SPORT | DPORT;

const TCP: u8 = 6;
const UDP: u8 = 17;

/// The Toeplitz hash as its definition reads: for input bit i set, XOR in the 32 key bits
/// i..i+32 (bits counted from the most significant bit of the first byte).
fn toeplitz(key: &[u8; 40], input: &[u8]) -> u32 {
    let key_bit = |b: usize| {
        key.get(b / 8)
            .map_or(0, |k| u32::from(k >> (7 - b % 8) & 1))
    };
    let mut h = 0;
    for i in 0..input.len() * 8 {
        if input[i / 8] >> (7 - i % 8) & 1 == 1 {
            h ^= (0..32).fold(0u32, |k, j| k << 1 | key_bit(i + j));
        }
    }
    h
}

/// Source address and port, destination address and port as hash input.
fn tuple(src: &[u8], sport: u16, dst: &[u8], dport: u16) -> Vec<u8> {
    let mut t = src.to_vec();
    t.extend_from_slice(dst);
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t
}

/// An indirect Toeplitz TIR over `rqt` with the verification key.
fn toeplitz_tir(rx: &Rx, rqt: u32, ipv6: bool, udp: bool, fields: u32, symmetric: bool) -> u32 {
    rx.indirect_tir(rqt, |c| {
        c.set_rx_hash_fn(TircRxHashFn::Toeplitz);
        c.set_rx_hash_symmetric(symmetric);
        for (k, w) in KEY.chunks(4).enumerate() {
            c.set_rx_hash_toeplitz_key(k, u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
                .unwrap();
        }
        let mut s = c.rx_hash_field_selector_outer_mut();
        s.set_l3_prot_type(ipv6);
        s.set_l4_prot_type(udp);
        s.set_selected_fields(fields);
    })
}

/// mlx5e's uniform indirection table: 256 entries, entry i on channel i % channels.
fn uniform(channels: usize) -> Vec<usize> {
    (0..256).map(|i| i % channels).collect()
}

#[test]
fn the_tests_toeplitz_reproduces_the_published_vectors() {
    for (src, sport, dst, dport, ip, tcp) in V4 {
        let t = tuple(&src, sport, &dst, dport);
        assert_eq!((toeplitz(&KEY, &t[..8]), toeplitz(&KEY, &t)), (ip, tcp));
    }
    for (src, sport, dst, dport, ip, tcp) in V6 {
        let t = tuple(&src, sport, &dst, dport);
        assert_eq!((toeplitz(&KEY, &t[..32]), toeplitz(&KEY, &t)), (ip, tcp));
    }
}

#[test]
fn the_cqe_carries_the_published_toeplitz_hashes_and_the_rq_they_pick() {
    let rx = Rx::new(2, 64, |_| {});
    let table = uniform(2);
    let rqt = rx.rqt(256, &table);
    let tirs = [
        toeplitz_tir(&rx, rqt, false, false, IP, false),
        toeplitz_tir(&rx, rqt, false, false, IP_PORTS, false),
        toeplitz_tir(&rx, rqt, true, false, IP, false),
        toeplitz_tir(&rx, rqt, true, false, IP_PORTS, false),
    ];
    let check = |f: &[u8], tir: u32, hash: u32, kind: u8| {
        rx.steer_all_to(tir);
        assert!(rx.receive(f));
        let g = rx.got();
        assert_eq!(g.cqe.rss_hash_result(), hash);
        assert_eq!(g.cqe.rss_hash_type(), kind);
        assert_eq!(g.rq, table[hash as usize % 256], "hash {hash:#x}");
        assert_eq!(g.data, f);
    };
    for (src, sport, dst, dport, ip, tcp) in V4 {
        let f = frame::v4(None, TCP, (src, sport), (dst, dport), 20);
        // IPv4 source and destination: code 1 in bits 1:0 and 3:2; TCP ports: code 1 in bits
        // 5:4 and 7:6 (Linux reads 3:2 as the L3 hash and 7:6 as the L4 hash).
        check(&f, tirs[0], ip, 0x05);
        check(&f, tirs[1], tcp, 0x55);
    }
    for (src, sport, dst, dport, ip, tcp) in V6 {
        let f = frame::v6(TCP, (src, sport), (dst, dport), 20);
        check(&f, tirs[2], ip, 0x0a);
        check(&f, tirs[3], tcp, 0x5a);
    }
}

#[test]
fn flows_spread_over_a_table_as_ethtool_indexes_it() {
    let rx = Rx::new(4, 64, |_| {});
    let table = uniform(4);
    let rqt = rx.rqt(256, &table);
    rx.steer_all_to(toeplitz_tir(&rx, rqt, false, true, IP_PORTS, false));
    let mut per_rq = [0; 4];
    for k in 0..48u16 {
        let (src, dst) = ([10, 0, 0, 1 + (k % 3) as u8], [10, 0, 1, 2]);
        let (sport, dport) = (40000 + k * 7, 4791);
        let f = frame::v4(None, UDP, (src, sport), (dst, dport), 64);
        let want = toeplitz(&KEY, &tuple(&src, sport, &dst, dport));
        assert!(rx.receive(&f));
        let g = rx.got();
        assert_eq!(g.cqe.rss_hash_result(), want);
        assert_eq!(g.cqe.rss_hash_type(), 0x05 | 0xa0, "IPv4 and UDP");
        assert_eq!(g.rq, table[(want & 0xff) as usize]);
        per_rq[g.rq] += 1;
        rx.post(g.rq, 1);
    }
    assert!(per_rq.iter().all(|&n| n > 0), "{per_rq:?}");

    // A table whose size is not a power of two is indexed by the remainder.
    let odd = rx.rqt(4, &[2, 0, 1]);
    rx.steer_all_to(toeplitz_tir(&rx, odd, false, true, IP_PORTS, false));
    for sport in [1u16, 2, 3, 4, 5, 6] {
        let (src, dst) = ([192, 168, 0, 1], [192, 168, 0, 2]);
        let f = frame::v4(None, UDP, (src, sport), (dst, 53), 10);
        let want = toeplitz(&KEY, &tuple(&src, sport, &dst, 53));
        assert!(rx.receive(&f));
        assert_eq!(rx.got().rq, [2, 0, 1][want as usize % 3]);
    }
}

#[test]
fn a_symmetric_hash_is_the_same_both_ways_and_xors_each_pair() {
    let rx = Rx::new(2, 64, |_| {});
    let rqt = rx.rqt(256, &uniform(2));
    let sym = toeplitz_tir(&rx, rqt, false, false, IP_PORTS, true);
    let plain = toeplitz_tir(&rx, rqt, false, false, IP_PORTS, false);
    let (a, b) = (([10, 1, 2, 3], 33000u16), ([172, 16, 9, 8], 443u16));
    let there = frame::v4(None, TCP, a, b, 30);
    let back = frame::v4(None, TCP, b, a, 30);
    // RXH_XFRM_SYM_XOR: src ^ dst in place of both addresses, sport ^ dport of both ports.
    let x: Vec<u8> = a.0.iter().zip(b.0).map(|(p, q)| p ^ q).collect();
    let p = a.1 ^ b.1;
    let want = toeplitz(&KEY, &tuple(&x, p, &x, p));
    rx.steer_all_to(sym);
    let mut rqs = Vec::new();
    for f in [&there, &back] {
        assert!(rx.receive(f));
        let g = rx.got();
        assert_eq!(g.cqe.rss_hash_result(), want);
        assert_eq!(g.cqe.rss_hash_type(), 0x55);
        rqs.push(g.rq);
    }
    assert_eq!(rqs[0], rqs[1], "both directions on one RQ");
    rx.steer_all_to(plain);
    let mut plain_hashes = Vec::new();
    for f in [&there, &back] {
        assert!(rx.receive(f));
        plain_hashes.push(rx.got().cqe.rss_hash_result());
    }
    assert_eq!(
        plain_hashes,
        [
            toeplitz(&KEY, &tuple(&a.0, a.1, &b.0, b.1)),
            toeplitz(&KEY, &tuple(&b.0, b.1, &a.0, a.1))
        ]
    );
    assert_ne!(plain_hashes[0], plain_hashes[1]);
}

#[test]
fn the_inverted_xor8_with_the_table_mlx5e_writes_for_it() {
    let rx = Rx::new(4, 64, |_| {});
    // en/rqt.c for ETH_RSS_HASH_XOR: entry i holds the channel of indirection entry
    // bitrev8(i), indirection entry j being channel j % 4.
    let table: Vec<usize> = (0..256u32)
        .map(|i| ((i as u8).reverse_bits() % 4) as usize)
        .collect();
    let rqt = rx.rqt(256, &table);
    let tir = rx.indirect_tir(rqt, |c| {
        c.set_rx_hash_fn(TircRxHashFn::InvertXor8);
        let mut s = c.rx_hash_field_selector_outer_mut();
        s.set_l4_prot_type(true);
        s.set_selected_fields(IP_PORTS);
    });
    rx.steer_all_to(tir);
    let mut seen = [false; 4];
    for k in 0..24u16 {
        let (src, dst) = ([10, 0, 0, 9], [10, 0, 0, 10]);
        let (sport, dport) = (5000 + k, 6000);
        let f = frame::v4(None, UDP, (src, sport), (dst, dport), 8);
        let x = tuple(&src, sport, &dst, dport)
            .iter()
            .fold(0u8, |a, b| a ^ b);
        assert!(rx.receive(&f));
        let g = rx.got();
        assert_eq!(g.cqe.rss_hash_result(), u32::from(x));
        // The queue ethtool's table promises for hash x: indirection entry x % 256.
        assert_eq!(g.rq, usize::from(x) % 4, "xor {x:#x}");
        seen[g.rq] = true;
        rx.post(g.rq, 1);
    }
    assert_eq!(seen, [true; 4]);
}

#[test]
fn frames_hash_over_what_they_have_of_the_selected_protocols() {
    let rx = Rx::new(2, 64, |_| {});
    let table = uniform(2);
    let rqt = rx.rqt(256, &table);
    let tcp4 = toeplitz_tir(&rx, rqt, false, false, IP_PORTS, false);
    rx.steer_all_to(tcp4);
    let (src, dst) = ([10, 9, 8, 7], [10, 9, 8, 6]);
    let addrs = toeplitz(&KEY, &[src, dst].concat());
    // UDP at a TCP selector: the addresses alone.
    assert!(rx.receive(&frame::v4(None, UDP, (src, 1000), (dst, 2000), 10)));
    let g = rx.got();
    assert_eq!(
        (g.cqe.rss_hash_result(), g.cqe.rss_hash_type()),
        (addrs, 0x05)
    );
    assert_eq!(g.rq, table[(addrs & 0xff) as usize]);
    // An IPv4 fragment has no ports to hash.
    let mut frag = frame::v4(None, TCP, (src, 1000), (dst, 2000), 10);
    frag[20] |= 0x20; // more fragments
    let c = !common::rx::ones(&{
        let mut h = frag[14..34].to_vec();
        h[10..12].fill(0);
        h
    });
    frag[24..26].copy_from_slice(&c.to_be_bytes());
    assert!(rx.receive(&frag));
    assert_eq!(rx.got().cqe.rss_hash_result(), addrs);
    // IPv6 and non-IP frames at an IPv4 selector: nothing hashed, entry 0.
    let v6 = frame::v6(TCP, ([1; 16], 1), ([2; 16], 2), 10);
    let mut arp = frame::l2(None, 0x0806);
    arp.resize(60, 0);
    for f in [v6, arp] {
        assert!(rx.receive(&f));
        let g = rx.got();
        assert_eq!((g.cqe.rss_hash_result(), g.cqe.rss_hash_type()), (0, 0));
        assert_eq!(g.rq, table[0]);
    }
}

#[test]
fn tirs_that_do_not_hash_report_no_hash() {
    let rx = Rx::new(2, 64, |_| {});
    let rqt = rx.rqt(256, &[1, 0]);
    let f = frame::v4(None, TCP, ([1, 2, 3, 4], 5), ([6, 7, 8, 9], 10), 10);
    // A direct TIR (mlx5e's per-channel TIRs hash nothing) and an indirect one without a
    // hash function (entry 0 of its table).
    for (tir, rq) in [(rx.direct_tir(1), 1), (rx.indirect_tir(rqt, |_| {}), 1)] {
        rx.steer_all_to(tir);
        assert!(rx.receive(&f));
        let g = rx.got();
        assert_eq!(
            (g.rq, g.cqe.rss_hash_result(), g.cqe.rss_hash_type()),
            (rq, 0, 0)
        );
    }
    // mlx5e's direct TIRs: inverted XOR8 over no field, through a one-entry table.
    let one = rx.rqt(1, &[0]);
    rx.steer_all_to(rx.indirect_tir(one, |c| c.set_rx_hash_fn(TircRxHashFn::InvertXor8)));
    assert!(rx.receive(&f));
    let g = rx.got();
    assert_eq!(
        (g.rq, g.cqe.rss_hash_result(), g.cqe.rss_hash_type()),
        (0, 0, 0)
    );
}

/// Two source ports whose flows (otherwise equal) land on different RQs of `table`.
fn ports_on_two_rqs(src: [u8; 4], dst: [u8; 4], table: &[usize]) -> (u16, u16) {
    let rq = |p: u16| table[(toeplitz(&KEY, &tuple(&src, p, &dst, 80)) & 0xff) as usize];
    let a = 1024;
    let b = (1025..).find(|&p| rq(p) != rq(a)).unwrap();
    (a, b)
}

#[test]
fn the_steering_memo_never_hands_one_flows_rq_to_another() {
    let rx = Rx::new(2, 64, |_| {});
    let table = uniform(2);
    let rqt = rx.rqt(256, &table);
    rx.steer_all_to(toeplitz_tir(&rx, rqt, false, false, IP_PORTS, false));
    let (src, dst) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (a, b) = ports_on_two_rqs(src, dst, &table);
    let rq_of = |p: u16| table[(toeplitz(&KEY, &tuple(&src, p, &dst, 80)) & 0xff) as usize];
    // Back-to-back frames of one flow (the memo's case), then the other flow, in any order;
    // the same flow with other payload bytes stays where it was.
    for (port, payload) in [
        (a, 10),
        (a, 10),
        (b, 10),
        (b, 10),
        (a, 30),
        (b, 30),
        (a, 10),
    ] {
        assert!(rx.receive(&frame::v4(None, TCP, (src, port), (dst, 80), payload)));
        let g = rx.got();
        assert_eq!(g.rq, rq_of(port), "port {port}");
        assert_eq!(
            g.cqe.rss_hash_result(),
            toeplitz(&KEY, &tuple(&src, port, &dst, 80))
        );
        rx.post(g.rq, 1);
    }
}

#[test]
fn a_new_table_or_hash_applies_to_the_next_frame() {
    let rx = Rx::new(2, 64, |_| {});
    let table = uniform(2);
    let rqt = rx.rqt(256, &table);
    let tir = toeplitz_tir(&rx, rqt, false, false, IP_PORTS, false);
    rx.steer_all_to(tir);
    let (src, dst) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let f = frame::v4(None, TCP, (src, 7777), (dst, 80), 10);
    let h = toeplitz(&KEY, &tuple(&src, 7777, &dst, 80));
    assert!(rx.receive(&f));
    assert_eq!(rx.got().rq, table[(h & 0xff) as usize]);
    // MODIFY_RQT swaps the channels.
    let swapped: Vec<usize> = table.iter().map(|q| 1 - q).collect();
    rx.modify_rqt(rqt, &swapped);
    assert!(rx.receive(&f));
    assert_eq!(rx.got().rq, swapped[(h & 0xff) as usize]);
    // MODIFY_TIR: the addresses alone.
    rx.n.host
        .run::<cmd::ModifyTir>(0, 0, 0, |i| {
            i.set_tirn(tir);
            i.bitmask_mut().set_hash(true);
            let mut c = i.ctx_mut();
            c.set_rx_hash_fn(TircRxHashFn::Toeplitz);
            for (k, w) in KEY.chunks(4).enumerate() {
                c.set_rx_hash_toeplitz_key(k, u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
                    .unwrap();
            }
            c.rx_hash_field_selector_outer_mut().set_selected_fields(IP);
        })
        .ok();
    assert!(rx.receive(&f));
    let g = rx.got();
    let ip = toeplitz(&KEY, &[src, dst].concat());
    assert_eq!((g.cqe.rss_hash_result(), g.cqe.rss_hash_type()), (ip, 0x05));
    assert_eq!(g.rq, swapped[(ip & 0xff) as usize]);
}
