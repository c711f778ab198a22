//! Frames built and parsed back, checked field by field against offsets written out here
//! (not through the module's own parser), and the ways a frame is refused.

use super::*;
use crate::datapath::fcs;

fn path(v4: bool) -> Path {
    let (sip, dip) = if v4 {
        (mapped([10, 79, 0, 2]), mapped([10, 79, 0, 3]))
    } else {
        let mut s = [0u8; 16];
        s[0] = 0xfe;
        s[1] = 0x80;
        s[15] = 2;
        let mut d = s;
        d[15] = 3;
        (s, d)
    };
    Path {
        dmac: [0x52, 0x54, 0, 0x12, 0x34, 0x56],
        smac: [2, 0, 0, 0x79, 0, 2],
        vlan: None,
        v4,
        sip,
        dip,
        tclass: 0x68,
        flow_label: 0x12345,
        hop_limit: 1,
        sport: 0xc123,
    }
}

fn bth(opcode: u8, psn: u32) -> Bth {
    Bth {
        opcode,
        se: true,
        mig: false,
        pad: 0,
        pkey: DEFAULT_PKEY,
        dqpn: 0x11,
        ack_req: true,
        psn,
    }
}

#[test]
fn the_icrc_seed_is_the_crc_register_after_eight_ones_bytes() {
    // Linux's soft-RoCE starts its ICRC from this register value, which stands for the
    // masked local route header.
    assert_eq!(fcs::crc32_update(!0, &[0xff; 8]), 0xdebb_20e3);
}

#[test]
fn an_ipv4_send_only_frame_has_every_field_where_the_annex_puts_it() {
    let mut f = Vec::new();
    let payload = b"hello, rxe";
    build(
        &mut f,
        &path(true),
        &bth(op::SEND_ONLY, 0x00ab_cdef),
        &[],
        payload,
    );
    // 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 10 payload + 2 pad + 4 ICRC.
    assert_eq!(f.len(), 70);
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    assert_eq!(f[14], 0x45);
    assert_eq!(f[15], 0x68, "traffic class");
    assert_eq!(u16::from_be_bytes([f[16], f[17]]), 56, "IPv4 total length");
    assert_eq!(f[22], 1, "TTL");
    assert_eq!(f[23], 17, "UDP");
    // The IPv4 header checksum verifies: the ones' complement sum over the header is 0xffff.
    let sum: u32 = f[14..34]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    let folded = (sum & 0xffff) + (sum >> 16);
    assert_eq!(folded, 0xffff);
    assert_eq!(
        u16::from_be_bytes([f[34], f[35]]),
        0xc123,
        "UDP source port"
    );
    assert_eq!(u16::from_be_bytes([f[36], f[37]]), 4791);
    assert_eq!(u16::from_be_bytes([f[38], f[39]]), 36, "UDP length");
    assert_eq!(&f[40..42], &[0, 0], "no UDP checksum over IPv4");
    // BTH: opcode, SE | pad 2, P_Key, reserved + QPN, AckReq + PSN.
    assert_eq!(
        &f[42..54],
        &[0x04, 0xa0, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0xab, 0xcd, 0xef]
    );
    assert_eq!(&f[54..64], payload);
    assert_eq!(&f[64..66], &[0, 0]);
    // The ICRC, computed here from the annex's masking rules.
    let mut m = f[14..66].to_vec();
    m[1] = 0xff; // TOS
    m[8] = 0xff; // TTL
    m[10] = 0xff; // checksum
    m[11] = 0xff;
    m[26] = 0xff; // UDP checksum
    m[27] = 0xff;
    m[32] = 0xff; // BTH reserved byte
    let mut with = vec![0xff; 8];
    with.extend_from_slice(&m);
    assert_eq!(&f[66..70], &fcs::crc32(&with).to_le_bytes());

    let p = parse(&f).unwrap();
    assert_eq!(
        p.bth,
        Bth {
            pad: 2,
            ..bth(op::SEND_ONLY, 0x00ab_cdef)
        }
    );
    assert_eq!(p.payload, payload);
    assert_eq!(p.dst_ip, mapped([10, 79, 0, 3]));
    assert_eq!((p.sport, p.v4), (0xc123, true));
}

#[test]
fn ipv6_frames_carry_a_udp_checksum_and_round_trip() {
    let mut f = Vec::new();
    let reth = Reth {
        va: 0x1122_3344_5566_7788,
        rkey: 0x99,
        len: 4096,
    };
    let ext = Ext::new().reth(reth).imm(0xfeed);
    build(
        &mut f,
        &path(false),
        &bth(op::WRITE_ONLY_IMM, 7),
        ext.as_slice(),
        &[9; 64],
    );
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    let udp = 14 + 40;
    assert_ne!(&f[udp + 6..udp + 8], &[0, 0]);
    let p = parse(&f).unwrap();
    assert_eq!(
        (p.reth, p.imm, p.payload.len(), p.v4),
        (reth, 0xfeed, 64, false)
    );
    assert_eq!(p.shape.kind, Kind::Write);
}

#[test]
fn acks_read_requests_and_atomics_round_trip() {
    for (opcode, ext) in [
        (
            op::ACKNOWLEDGE,
            Ext::new().aeth(Aeth {
                syndrome: aeth::ACK,
                msn: 5,
            }),
        ),
        (
            op::ATOMIC_ACKNOWLEDGE,
            Ext::new()
                .aeth(Aeth {
                    syndrome: aeth::ACK,
                    msn: 6,
                })
                .atomic_ack(42),
        ),
        (
            op::READ_REQUEST,
            Ext::new().reth(Reth {
                va: 8,
                rkey: 3,
                len: 9000,
            }),
        ),
        (
            op::FETCH_ADD,
            Ext::new().atomic(AtomicEth {
                va: 64,
                rkey: 4,
                swap_add: 1,
                compare: 0,
            }),
        ),
    ] {
        let mut f = Vec::new();
        build(&mut f, &path(true), &bth(opcode, 1), ext.as_slice(), &[]);
        let p = parse(&f).unwrap();
        assert_eq!(p.bth.opcode, opcode);
        assert!(p.payload.is_empty());
    }
}

#[test]
fn broken_frames_are_refused_for_their_reason() {
    let mut f = Vec::new();
    build(
        &mut f,
        &path(true),
        &bth(op::SEND_ONLY, 1),
        &[],
        &[1, 2, 3, 4],
    );
    // A flipped payload bit: the ICRC catches it.
    let mut bad = f.clone();
    bad[55] ^= 1;
    assert_eq!(parse(&bad), Err(Refused::Icrc));
    // Cut short: lengths no longer add up.
    assert_eq!(parse(&f[..f.len() - 1]), Err(Refused::Malformed));
    // The variant fields may change on the way (a router's TTL, ECN marking).
    let mut routed = f.clone();
    routed[22] = 0;
    routed[15] |= 3;
    assert!(parse(&routed).is_ok());
    // Not UDP port 4791: not RoCE at all.
    let mut other = f.clone();
    other[37] ^= 1;
    assert_eq!(parse(&other), Err(Refused::NotRoce));
    // A UC opcode (transport 001b).
    let mut uc = Vec::new();
    build(&mut uc, &path(true), &bth(0x24, 1), &[], &[]);
    assert_eq!(parse(&uc), Err(Refused::Opcode));
}

#[test]
fn no_frame_makes_the_parser_read_past_its_end() {
    let mut f = Vec::new();
    build(
        &mut f,
        &path(true),
        &bth(op::WRITE_FIRST, 1),
        Ext::new().reth(Reth::default()).as_slice(),
        &[7; 256],
    );
    for cut in 0..f.len() {
        let _ = parse(&f[..cut]);
    }
    let mut x = 0x1234_5678u32;
    for _ in 0..2000 {
        let mut g = f.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let at = x as usize % g.len();
            g[at] = (x >> 8) as u8;
        }
        let _ = parse(&g);
    }
}
