//! Bad input on the RoCEv2 receive path (issue 16, "Bad input"): frames with a bad ICRC, an
//! unknown QPN, a PSN outside the window, a cut-short header or lying length, a bogus opcode
//! sequence, or an RETH outside the memory region are dropped or NAKed as the InfiniBand
//! specification (vol. 1 ch. 9, with the RoCEv2 annex A17) says, counted, and leave the
//! device answering. The test plays the peer: it writes request frames with its own builder
//! (`roce_bad_input/frame.rs`, ICRC included, checked first against frames the model sends)
//! and reads the device's ACKs and NAKs off the link.
//!
//! What the spec says, by class of responder error (IBTA vol. 1 §9.9.3; Linux's soft-RoCE
//! `rxe_resp.c` follows the same classes): class A, a packet the transport cannot trust
//! (bad ICRC, unknown QP, malformed header), is dropped silently; class B, a PSN sequence
//! error, gets one NAK (PSN sequence error) and the QP stays up; class C, an invalid request
//! (opcode out of sequence, misaligned atomic, length errors) or a remote access error (R_Key,
//! bounds, rights), gets a NAK with code 1 or 2 and the responder QP goes to the error state.
//! A duplicate (a PSN already passed) is acknowledged again, not executed again.

mod roce_bad_input {
    pub mod dut;
    pub mod frame;
    pub mod fuzz;
    pub mod rig;
}
#[path = "roce_bad_input/class_c.rs"]
mod class_c;

use mlx5_prm::{Cqe64, CqeOpcode, QpState};
use roce_bad_input::dut::{Dut, ALL, DUT, FIRST_PSN, MR_LEN, MTU, PEER, PEER_QPN};
use roce_bad_input::frame::{self, op, syn, Pkt, Seen};
use roce_bad_input::rig::with_rig;

/// PSN `a + n`, 24 bits.
fn psn(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & 0xff_ffff
}

/// Delivers `f` to the device and returns what it sent back, each frame parsed and its ICRC
/// checked.
fn deliver(d: &Dut<'_>, f: &[u8]) -> Vec<Seen> {
    d.rig.dev.receive_frame(f);
    d.rig
        .tap
        .take()
        .iter()
        .map(|f| {
            let s = frame::parse(f).expect("a RoCEv2 frame");
            assert!(s.icrc_ok, "the model's ICRC");
            assert_eq!((s.src, s.dst, s.dqpn), (DUT, PEER, PEER_QPN), "addressing");
            s
        })
        .collect()
}

fn inject(d: &Dut<'_>, p: &Pkt) -> Vec<Seen> {
    deliver(d, &frame::build(&PEER, &DUT, p))
}

/// Exactly one ACK/NAK came back: its (syndrome, PSN, MSN).
#[track_caller]
fn one_answer(seen: &[Seen]) -> (u8, u32, u32) {
    assert_eq!(seen.len(), 1, "one answer: {seen:?}");
    assert_eq!(seen[0].opcode, op::ACKNOWLEDGE);
    let (s, msn) = seen[0].aeth.unwrap();
    (s, seen[0].psn, msn)
}

/// A good SEND_ONLY at `at` with `data`: acknowledged, delivered into the next receive WQE.
#[track_caller]
fn good_send(d: &Dut<'_>, at: u32, msn: u32, data: &[u8]) {
    let seen = inject(d, &Pkt::new(op::SEND_ONLY, d.qpn, at).payload(data));
    assert_eq!(
        one_answer(&seen),
        (syn::ACK, at, msn),
        "ACK of the good send"
    );
    let e = d.rcq.poll(d.rig).expect("a receive CQE");
    let c = Cqe64::new_unchecked(e);
    assert_eq!(c.opcode(), Ok(CqeOpcode::RespSend));
    assert_eq!(c.byte_cnt() as usize, data.len());
    assert_eq!(d.recv_buf(c.wqe_counter(), data.len()), data);
    d.post_recv();
}

fn stats(d: &Dut<'_>) -> mlx5_sim::RoceStats {
    d.rig.dev.roce_stats()
}

/// Sanity: a good send is ACKed (AETH ACK, the request's PSN, MSN 1) and lands in memory.
#[test]
fn a_good_request_is_acknowledged() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        assert_eq!(d.state(), QpState::Rts);
        good_send(&d, FIRST_PSN, 1, b"hello, responder");
        good_send(&d, psn(FIRST_PSN, 1), 2, &[7u8; 1000]);
        // Across the PSN wrap.
        good_send(&d, psn(FIRST_PSN, 2), 3, &[]);
        assert_eq!(stats(&d).rx_packets, 3);
        assert!(rig.guards_intact());
    });
}

/// The test's ICRC (bit-by-bit CRC-32 over the masked headers) is the one the model puts on
/// its frames: ACKs, and read responses with payload and pad bytes, each checked in
/// `deliver`; and the CRC itself gives the published CRC-32 check value.
#[test]
fn the_tests_icrc_matches_the_models_frames() {
    assert_eq!(!frame::crc32_bits(!0, b"123456789"), 0xcbf4_3926);
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let data: Vec<u8> = (0..MR_LEN).map(|i| (i * 7 + 3) as u8).collect();
        rig.write(d.mr_va, &data);
        // 2999 bytes: three responses (first, middle, last), the last with one pad byte.
        let len = 2 * MTU + 951;
        let seen = inject(
            &d,
            &Pkt::new(op::READ_REQUEST, d.qpn, FIRST_PSN).reth(d.mr_va, d.rkey, len as u32),
        );
        let ops: Vec<u8> = seen.iter().map(|s| s.opcode).collect();
        assert_eq!(
            ops,
            [
                op::READ_RESPONSE_FIRST,
                op::READ_RESPONSE_MIDDLE,
                op::READ_RESPONSE_LAST
            ]
        );
        let psns: Vec<u32> = seen.iter().map(|s| s.psn).collect();
        assert_eq!(psns, [FIRST_PSN, psn(FIRST_PSN, 1), psn(FIRST_PSN, 2)]);
        let got: Vec<u8> = seen.iter().flat_map(|s| s.payload.clone()).collect();
        assert_eq!(got, &data[..len]);
        assert_eq!(seen[2].aeth, Some((syn::ACK, 1)));
        assert_eq!(d.counters().rx_read_requests(), 1);
        // The next request follows the read's three PSNs.
        good_send(&d, psn(FIRST_PSN, 3), 2, b"after the read");
    });
}

/// Fields a router may change are outside the ICRC: a frame whose TTL, DSCP/ECN, IP checksum
/// and UDP checksum differ from the sender's is still taken.
#[test]
fn variant_fields_are_masked_out_of_the_icrc() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let mut f = frame::build(
            &PEER,
            &DUT,
            &Pkt::new(op::SEND_ONLY, d.qpn, FIRST_PSN).payload(b"routed"),
        );
        f[frame::ETH + 1] = 0x2e; // DSCP 11, ECN 2
        f[frame::ETH + 8] = 3; // TTL after a few hops
        frame::fix_ip_checksum(&mut f);
        f[frame::ETH + frame::IP + 6] = 0x12; // a UDP checksum (not checked by RoCEv2)
        f[frame::ETH + frame::IP + 7] = 0x34;
        let seen = deliver(&d, &f);
        assert_eq!(one_answer(&seen), (syn::ACK, FIRST_PSN, 1));
        assert_eq!(stats(&d).icrc_errors, 0);
    });
}

/// A bad ICRC (the CRC itself, or a bit of the covered packet changed after it was computed)
/// is dropped without an answer and counted; the QP goes on.
#[test]
fn a_bad_icrc_is_dropped_silently() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let good = frame::build(
            &PEER,
            &DUT,
            &Pkt::new(op::SEND_ONLY, d.qpn, FIRST_PSN).payload(b"intact payload"),
        );
        let n = good.len();
        // Each a change the ICRC covers: the ICRC itself, the PSN, the payload, the IP
        // identification (with the IP checksum made right again).
        let flips: [(usize, u8); 5] = [
            (n - 1, 0x80),
            (n - 4, 0x01),
            (frame::BTH_AT + 11, 0x04),
            (frame::BTH_AT + 14, 0x10),
            (frame::ETH + 4, 0x01),
        ];
        for (at, bit) in flips {
            let mut f = good.clone();
            f[at] ^= bit;
            frame::fix_ip_checksum(&mut f);
            let before = stats(&d).icrc_errors;
            assert!(deliver(&d, &f).is_empty(), "no answer to a bad ICRC");
            assert_eq!(stats(&d).icrc_errors, before + 1, "byte {at}");
        }
        assert!(d.rcq.poll(rig).is_none(), "nothing delivered");
        assert_eq!(stats(&d).rx_packets, 0);
        // The port's counter for them, as PPCNT's extended Ethernet group reports it.
        assert_eq!(ppcnt_icrc_errors(rig), flips.len() as u64);
        good_send(&d, FIRST_PSN, 1, b"intact payload");
        assert_eq!(ppcnt_icrc_errors(rig), flips.len() as u64);
    });
}

/// rx_icrc_encapsulated of PPCNT's extended Ethernet group (0x5), read with ACCESS_REGISTER.
fn ppcnt_icrc_errors(rig: &roce_bad_input::rig::Rig) -> u64 {
    use mlx5_prm::cmd::{AccessRegister, AccessRegisterOpMod};
    use mlx5_prm::rt::Command as _;
    use mlx5_prm::{EthExtendedCntrsGrpDataLayout, PpcntCounterGroup, PpcntReg};
    const PPCNT: u16 = 0x5008;
    let mut buf = vec![0u8; 16 + 0x100];
    AccessRegister::input(&mut buf[..], AccessRegisterOpMod::Read)
        .unwrap()
        .set_register_id(PPCNT);
    let mut r = PpcntReg::new_unchecked(&mut buf[16..]);
    r.set_local_port(1);
    r.set_grp(PpcntCounterGroup::EthernetExtended);
    let out = rig.exec(&buf, 16 + 0x100).ok();
    let g = EthExtendedCntrsGrpDataLayout::new_unchecked(&out[16 + 8..16 + 0x100]);
    (u64::from(g.rx_icrc_encapsulated_high()) << 32) | u64::from(g.rx_icrc_encapsulated_low())
}

/// A request for a QP number the device does not have, or has but not ready (RST), is
/// dropped and counted.
#[test]
fn an_unknown_qpn_is_dropped() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        for qpn in [d.qpn + 1, 0xff_fffe, 0] {
            let before = stats(&d).unknown_qpn;
            let seen = inject(&d, &Pkt::new(op::SEND_ONLY, qpn, FIRST_PSN).payload(b"x"));
            assert!(seen.is_empty());
            assert_eq!(stats(&d).unknown_qpn, before + 1, "QPN {qpn:#x}");
        }
        assert!(d.rcq.poll(rig).is_none());
        good_send(&d, FIRST_PSN, 1, b"y");
    });
}

/// PSNs ahead of the expected one: one NAK (PSN sequence error, code 0) carrying the
/// expected PSN, then silence for further out-of-order packets; each counted in
/// out_of_sequence. Nothing is executed, and the expected packet then goes through.
#[test]
fn a_psn_ahead_gets_one_sequence_nak_then_silence() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        good_send(&d, FIRST_PSN, 1, b"first");
        let e = psn(FIRST_PSN, 1);
        let ahead = |n: u32| Pkt::new(op::SEND_ONLY, d.qpn, psn(e, n)).payload(b"early");
        assert_eq!(
            one_answer(&inject(&d, &ahead(3))),
            (syn::NAK_SEQUENCE, e, 1)
        );
        assert!(inject(&d, &ahead(4)).is_empty(), "silence after the NAK");
        assert!(
            inject(&d, &ahead(0x7f_ffff)).is_empty(),
            "the far end of the window"
        );
        assert_eq!(d.counters().out_of_sequence(), 3);
        assert!(d.rcq.poll(rig).is_none(), "nothing executed");
        assert_eq!(d.state(), QpState::Rts);
        good_send(&d, e, 2, b"in order");
        // A new gap after the recovery gets its own NAK.
        let e = psn(e, 1);
        assert_eq!(
            one_answer(&inject(&d, &ahead(5))),
            (syn::NAK_SEQUENCE, psn(e, 0), 2)
        );
    });
}

/// A PSN behind the expected one (a duplicate): ACKed again with the MSN unchanged, not
/// executed again, counted in duplicate_request.
#[test]
fn a_duplicate_is_acknowledged_again_not_executed() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        good_send(&d, FIRST_PSN, 1, b"once");
        good_send(&d, psn(FIRST_PSN, 1), 2, b"twice");
        let seen = inject(
            &d,
            &Pkt::new(op::SEND_ONLY, d.qpn, psn(FIRST_PSN, 1)).payload(b"twice"),
        );
        assert_eq!(one_answer(&seen), (syn::ACK, psn(FIRST_PSN, 1), 2));
        assert!(d.rcq.poll(rig).is_none(), "not delivered again");
        // A duplicate write is not written again.
        let w = Pkt::new(op::WRITE_ONLY, d.qpn, psn(FIRST_PSN, 2))
            .reth(d.mr_va, d.rkey, 4)
            .payload(b"abcd");
        assert_eq!(
            one_answer(&inject(&d, &w)),
            (syn::ACK, psn(FIRST_PSN, 2), 3)
        );
        rig.write(d.mr_va, b"ABCD");
        assert_eq!(
            one_answer(&inject(&d, &w)),
            (syn::ACK, psn(FIRST_PSN, 2), 3)
        );
        assert_eq!(rig.read(d.mr_va, 4), b"ABCD");
        // A resent packet that does not ask for an ACK gets none (the packet of the same run
        // that asks does): no ACK reaches a requester in the middle of its resend.
        let quiet = Pkt::new(op::SEND_ONLY, d.qpn, psn(FIRST_PSN, 1))
            .payload(b"twice")
            .unacked();
        assert!(inject(&d, &quiet).is_empty(), "no ACK without AckReq");
        assert_eq!(d.counters().duplicate_request(), 3);
        good_send(&d, psn(FIRST_PSN, 3), 4, b"on");
    });
}

/// Headers cut short and length fields that lie: a frame too short to be seen as UDP to
/// port 4791 is not RoCE's and goes to Ethernet steering (which drops it); one that is RoCEv2
/// but broken is dropped and counted as malformed. Never an answer, never a panic, and the QP
/// goes on.
#[test]
fn truncated_headers_and_lying_lengths_are_dropped() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let w = Pkt::new(op::WRITE_ONLY, d.qpn, FIRST_PSN)
            .reth(d.mr_va, d.rkey, 8)
            .payload(b"12345678");
        let good = frame::build(&PEER, &DUT, &w);
        // Not recognisably RoCEv2: cut inside Ethernet, IP, UDP.
        for n in [0, 10, frame::ETH + 10, frame::ETH + frame::IP + 5] {
            let (before, drops) = (stats(&d), rig.dev.rx_dropped());
            assert!(deliver(&d, &good[..n]).is_empty());
            assert_eq!(stats(&d), before, "cut at {n}: not RoCE's to count");
            assert_eq!(
                rig.dev.rx_dropped(),
                drops + 1,
                "cut at {n}: an Ethernet drop"
            );
        }
        let mut broken: Vec<(&str, Vec<u8>)> = vec![
            // Cut inside the BTH and the RETH, the IP length now longer than the frame.
            ("BTH cut", good[..frame::BTH_AT + 6].to_vec()),
            ("RETH cut", good[..frame::BTH_AT + 12 + 7].to_vec()),
            // Cut with the lengths made consistent and a valid ICRC.
            (
                "BTH cut, consistent",
                frame::cut(&PEER, &DUT, &w, frame::BTH_AT + 6),
            ),
            (
                "RETH cut, consistent",
                frame::cut(&PEER, &DUT, &w, frame::BTH_AT + 12 + 7),
            ),
        ];
        let mut lie = |what: &'static str, edit: &dyn Fn(&mut Vec<u8>)| {
            let mut f = good.clone();
            edit(&mut f);
            broken.push((what, f));
        };
        let ip_len = frame::ETH + 2;
        let udp_len = frame::ETH + frame::IP + 4;
        lie("IP length past the frame", &|f| {
            f[ip_len..ip_len + 2].copy_from_slice(&2000u16.to_be_bytes());
            frame::fix_ip_checksum(f);
        });
        lie("IP length short of the UDP", &|f| {
            f[ip_len..ip_len + 2].copy_from_slice(&30u16.to_be_bytes());
            frame::fix_ip_checksum(f);
        });
        lie("UDP length short", &|f| {
            let v = u16::from_be_bytes([f[udp_len], f[udp_len + 1]]) - 4;
            f[udp_len..udp_len + 2].copy_from_slice(&v.to_be_bytes());
            frame::reseal(f);
        });
        lie("UDP length long", &|f| {
            let v = u16::from_be_bytes([f[udp_len], f[udp_len + 1]]) + 4;
            f[udp_len..udp_len + 2].copy_from_slice(&v.to_be_bytes());
            frame::reseal(f);
        });
        lie("UDP length below BTH + ICRC", &|f| {
            f[udp_len..udp_len + 2].copy_from_slice(&10u16.to_be_bytes());
        });
        lie("IPv4 options (IHL 6)", &|f| {
            // Four NOP options after the fixed header, the lengths grown to match.
            f[frame::ETH] = 0x46;
            let at = frame::ETH + frame::IP;
            f.splice(at..at, [1u8; 4]);
            let v = u16::from_be_bytes([f[ip_len], f[ip_len + 1]]) + 4;
            f[ip_len..ip_len + 2].copy_from_slice(&v.to_be_bytes());
            f[frame::ETH + 10] = 0;
            f[frame::ETH + 11] = 0;
            let c = frame::ip_checksum(&f[frame::ETH..frame::ETH + 24]);
            f[frame::ETH + 10..frame::ETH + 12].copy_from_slice(&c.to_be_bytes());
        });
        lie("an IP fragment (MF)", &|f| {
            f[frame::ETH + 6] = 0x20;
            frame::reseal(f);
        });
        lie("pad count past the payload", &|f| {
            f[frame::BTH_AT + 1] = 0x30;
            let end = f.len() - 4;
            f.truncate(frame::BTH_AT + 12 + 16 + 2);
            let cut = end - f.len();
            let v = |x: u16| (x - cut as u16).to_be_bytes();
            let (i, u) = (
                u16::from_be_bytes([f[ip_len], f[ip_len + 1]]),
                u16::from_be_bytes([f[udp_len], f[udp_len + 1]]),
            );
            f[ip_len..ip_len + 2].copy_from_slice(&v(i));
            f[udp_len..udp_len + 2].copy_from_slice(&v(u));
            frame::seal(f);
        });
        for (what, f) in &broken {
            let before = stats(&d);
            assert!(deliver(&d, f).is_empty(), "{what}: no answer");
            let after = stats(&d);
            assert_eq!(after.malformed, before.malformed + 1, "{what}: malformed");
            assert_eq!(after.rx_packets, before.rx_packets, "{what}");
        }
        assert_eq!(rig.read(d.mr_va, 8), [0; 8], "nothing written");
        assert_eq!(d.state(), QpState::Rts);
        assert_eq!(one_answer(&inject(&d, &w)), (syn::ACK, FIRST_PSN, 1));
        assert_eq!(rig.read(d.mr_va, 8), b"12345678");
    });
}

/// Opcodes that are not RC (another transport, reserved codes) or a BTH transport version
/// other than 0: dropped as a bad opcode.
#[test]
fn foreign_opcodes_and_versions_are_dropped() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        for opcode in [0x15, 0x1f, 0x24, 0x64, 0xff] {
            let before = stats(&d).bad_opcode;
            assert!(inject(&d, &Pkt::new(opcode, d.qpn, FIRST_PSN)).is_empty());
            assert_eq!(stats(&d).bad_opcode, before + 1, "opcode {opcode:#x}");
        }
        let mut f = frame::build(
            &PEER,
            &DUT,
            &Pkt::new(op::SEND_ONLY, d.qpn, FIRST_PSN).payload(b"v1"),
        );
        f[frame::BTH_AT + 1] |= 0x1; // TVer 1
        frame::reseal(&mut f);
        assert!(deliver(&d, &f).is_empty());
        assert_eq!(stats(&d).bad_opcode, 6);
        good_send(&d, FIRST_PSN, 1, b"v0");
    });
}

/// The `roce_rx` fuzz target's program (`roce_bad_input/fuzz.rs`) on random inputs, and on
/// the fuzz seeds: no panic, no write outside guest RAM or the region, the device answers.
#[test]
fn random_frame_programs_never_break_the_device() {
    use proptest::prelude::*;
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(input in prop::collection::vec(any::<u8>(), 0..2048))| {
        roce_bad_input::fuzz::run(&input);
    });
    let seeds = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/roce_rx");
    let mut n = 0;
    for e in std::fs::read_dir(seeds).expect("the seeds") {
        roce_bad_input::fuzz::run(&std::fs::read(e.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n >= 6, "seeds");
}
