//! Class C responder errors (IBTA vol. 1 §9.9.3): requests the responder refuses with a NAK
//! and moves its QP to ERR for, an opcode out of sequence or a misaligned atomic (invalid
//! request, NAK code 1) and an RETH or atomic outside what the memory region and the QP's
//! rights allow (remote access error, code 2); and read requests at the length edges.

use super::roce_bad_input::dut::{Dut, Rights, ALL, FIRST_PSN, MR_LEN, MTU};
use super::roce_bad_input::frame::{op, syn, Pkt, Seen};
use super::roce_bad_input::rig::with_rig;
use super::{good_send, inject, one_answer, psn, stats};
use mlx5_prm::QpState;

/// A class C error: the request's NAK with `syndrome`, PSN `at` and MSN `msn`, the QP in ERR
/// (where a further request is dropped as for an unknown QP), and, brought back to RTS, a
/// working QP again.
#[track_caller]
fn fatal_nak(d: &Dut<'_>, seen: &[Seen], syndrome: u8, at: u32, msn: u32) {
    assert_eq!(one_answer(seen), (syndrome, at, msn), "the NAK");
    assert_eq!(d.state(), QpState::Err, "the responder QP goes to ERR");
    let before = stats(d).unknown_qpn;
    let again = Pkt::new(op::SEND_ONLY, d.qpn, psn(at, 1)).payload(b"late");
    assert!(inject(d, &again).is_empty(), "silence in ERR");
    assert_eq!(stats(d).unknown_qpn, before + 1);
    d.reconnect();
    good_send(d, FIRST_PSN, 1, b"back in RTS");
    assert!(d.mr_guards_intact());
}

fn mtu_bytes(b: u8) -> Vec<u8> {
    vec![b; MTU]
}

/// SEND_MIDDLE with no message begun: NAK invalid request (code 1), QP to ERR, counted in
/// resp_remote_invalid_request.
#[test]
fn send_middle_without_first_is_an_invalid_request() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let seen = inject(
            &d,
            &Pkt::new(op::SEND_MIDDLE, d.qpn, FIRST_PSN).payload(&mtu_bytes(1)),
        );
        fatal_nak(&d, &seen, syn::NAK_INVALID_REQUEST, FIRST_PSN, 0);
        assert_eq!(d.counters().resp_remote_invalid_request(), 1);
    });
}

/// Messages interleaved: after SEND_FIRST, a WRITE_LAST, a WRITE_MIDDLE or a new SEND_ONLY
/// is out of sequence (IBTA's "missing last packet" case is class C on RC): NAK invalid
/// request; a WRITE_LAST with no write begun likewise.
#[test]
fn an_opcode_out_of_sequence_is_an_invalid_request() {
    let intruders = [
        Pkt::new(op::WRITE_LAST, 0, 0).payload(b"tail"),
        Pkt::new(op::WRITE_MIDDLE, 0, 0).payload(&mtu_bytes(2)),
        Pkt::new(op::SEND_ONLY, 0, 0).payload(b"new message"),
        Pkt::new(op::WRITE_FIRST, 0, 0).payload(&mtu_bytes(3)),
    ];
    for (k, intruder) in intruders.iter().enumerate() {
        with_rig(|rig| {
            let d = Dut::new(rig, ALL);
            let first = Pkt::new(op::SEND_FIRST, d.qpn, FIRST_PSN).payload(&mtu_bytes(4));
            assert_eq!(one_answer(&inject(&d, &first)), (syn::ACK, FIRST_PSN, 0));
            let mut p = intruder.clone();
            p.dqpn = d.qpn;
            p.psn = psn(FIRST_PSN, 1);
            if p.opcode == op::WRITE_FIRST {
                p = p.reth(d.mr_va, d.rkey, 2 * MTU as u32);
                let payload = std::mem::take(&mut p.payload);
                p = p.payload(&payload);
            }
            let seen = inject(&d, &p);
            fatal_nak(&d, &seen, syn::NAK_INVALID_REQUEST, psn(FIRST_PSN, 1), 0);
            assert_eq!(d.counters().resp_remote_invalid_request(), 1, "case {k}");
        });
    }
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let seen = inject(
            &d,
            &Pkt::new(op::WRITE_LAST, d.qpn, FIRST_PSN).payload(b"tail"),
        );
        fatal_nak(&d, &seen, syn::NAK_INVALID_REQUEST, FIRST_PSN, 0);
    });
}

/// RETHs the memory region does not allow: a range running past its end, an R_Key that
/// names no key, a QP without remote write (or read) rights. Remote access error NAK
/// (code 2), QP to ERR, resp_remote_access_errors; nothing written outside the region.
#[test]
fn an_reth_outside_the_region_is_a_remote_access_error() {
    type Case = fn(&Dut<'_>) -> Pkt;
    let cases: [(&str, Rights, Case); 7] = [
        ("write past the end", ALL, |d| {
            Pkt::new(op::WRITE_ONLY, d.qpn, FIRST_PSN)
                .reth(d.mr_va + MR_LEN - 4, d.rkey, 8)
                .payload(b"overflow")
        }),
        ("write before the start", ALL, |d| {
            Pkt::new(op::WRITE_ONLY, d.qpn, FIRST_PSN)
                .reth(d.mr_va - 4, d.rkey, 8)
                .payload(b"underflo")
        }),
        ("write whose RETH length runs past the end", ALL, |d| {
            Pkt::new(op::WRITE_FIRST, d.qpn, FIRST_PSN)
                .reth(d.mr_va + MR_LEN - MTU as u64, d.rkey, 2 * MTU as u32)
                .payload(&mtu_bytes(9))
        }),
        ("write with a bad R_Key", ALL, |d| {
            Pkt::new(op::WRITE_ONLY, d.qpn, FIRST_PSN)
                .reth(d.mr_va, d.rkey ^ 0x0100, 4)
                .payload(b"key!")
        }),
        (
            "write without remote write rights",
            Rights {
                write: false,
                ..ALL
            },
            |d| {
                Pkt::new(op::WRITE_ONLY, d.qpn, FIRST_PSN)
                    .reth(d.mr_va, d.rkey, 4)
                    .payload(b"nope")
            },
        ),
        (
            "read without remote read rights",
            Rights { read: false, ..ALL },
            |d| Pkt::new(op::READ_REQUEST, d.qpn, FIRST_PSN).reth(d.mr_va, d.rkey, 16),
        ),
        ("read past the end", ALL, |d| {
            Pkt::new(op::READ_REQUEST, d.qpn, FIRST_PSN).reth(d.mr_va + 8, d.rkey, MR_LEN as u32)
        }),
    ];
    for (what, rights, case) in cases {
        with_rig(|rig| {
            let d = Dut::new(rig, rights);
            let seen = inject(&d, &case(&d));
            assert_eq!(seen.len(), 1, "{what}: {seen:?}");
            fatal_nak(&d, &seen, syn::NAK_REMOTE_ACCESS, FIRST_PSN, 0);
            assert_eq!(d.counters().resp_remote_access_errors(), 1, "{what}");
            assert_eq!(rig.read(d.mr_va, 16), [0; 16], "{what}: nothing written");
            assert!(rig.guards_intact());
        });
    }
}

/// Read requests at the edges: a DMA length over the device's largest message (2^30, its
/// `log_max_msg`) is a length error, NAK invalid request, whatever the key (checked first, as
/// soft-RoCE does); the largest message itself past the region is a remote access error;
/// neither is answered with a million response packets. A zero-length read with no key and
/// no address is answered with one empty READ_RESPONSE_ONLY (a zero-length RDMA operation
/// need not carry a valid R_Key or VA: IBTA C9-88).
#[test]
fn read_requests_at_the_length_edges() {
    for (len, nak) in [
        (u32::MAX, syn::NAK_INVALID_REQUEST),
        ((1 << 30) + 1, syn::NAK_INVALID_REQUEST),
        (1 << 30, syn::NAK_REMOTE_ACCESS),
    ] {
        with_rig(|rig| {
            let d = Dut::new(rig, ALL);
            let seen = inject(
                &d,
                &Pkt::new(op::READ_REQUEST, d.qpn, FIRST_PSN).reth(d.mr_va, d.rkey, len),
            );
            fatal_nak(&d, &seen, nak, FIRST_PSN, 0);
        });
    }
    // A write likewise.
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let w = Pkt::new(op::WRITE_FIRST, d.qpn, FIRST_PSN)
            .reth(d.mr_va, d.rkey, (1 << 30) + 1)
            .payload(&mtu_bytes(4));
        fatal_nak(&d, &inject(&d, &w), syn::NAK_INVALID_REQUEST, FIRST_PSN, 0);
    });
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        let seen = inject(
            &d,
            &Pkt::new(op::READ_REQUEST, d.qpn, FIRST_PSN).reth(d.mr_va, d.rkey, 1 << 31),
        );
        fatal_nak(&d, &seen, syn::NAK_INVALID_REQUEST, FIRST_PSN, 0);
        let seen = inject(
            &d,
            &Pkt::new(op::READ_REQUEST, d.qpn, psn(FIRST_PSN, 1)).reth(0, 0, 0),
        );
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].opcode, op::READ_RESPONSE_ONLY);
        assert_eq!(seen[0].psn, psn(FIRST_PSN, 1));
        assert_eq!(seen[0].aeth, Some((syn::ACK, 2)));
        assert!(seen[0].payload.is_empty());
        // A zero-length write with no key is acknowledged, writing nothing.
        let w = Pkt::new(op::WRITE_ONLY, d.qpn, psn(FIRST_PSN, 2)).reth(0, 0, 0);
        assert_eq!(
            one_answer(&inject(&d, &w)),
            (syn::ACK, psn(FIRST_PSN, 2), 3)
        );
        assert_eq!(d.state(), QpState::Rts);
        good_send(&d, psn(FIRST_PSN, 3), 4, b"still here");
    });
}

/// Atomics: a misaligned address is an invalid request (code 1), one outside the region a
/// remote access error (code 2); a good one answers with the original value.
#[test]
fn atomics_misaligned_or_outside_are_refused() {
    with_rig(|rig| {
        let d = Dut::new(rig, ALL);
        rig.write(d.mr_va + 8, &40u64.to_be_bytes());
        let fa = Pkt::new(op::FETCH_ADD, d.qpn, FIRST_PSN).atomic(d.mr_va + 8, d.rkey, 2, 0);
        let seen = inject(&d, &fa);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].opcode, op::ATOMIC_ACKNOWLEDGE);
        assert_eq!(
            (seen[0].aeth, seen[0].atomic_orig),
            (Some((syn::ACK, 1)), Some(40))
        );
        assert_eq!(rig.read(d.mr_va + 8, 8), 42u64.to_be_bytes());
        let p = psn(FIRST_PSN, 1);
        let odd = Pkt::new(op::FETCH_ADD, d.qpn, p).atomic(d.mr_va + 4, d.rkey, 1, 0);
        let seen = inject(&d, &odd);
        fatal_nak(&d, &seen, syn::NAK_INVALID_REQUEST, p, 1);
        let out = Pkt::new(op::COMPARE_SWAP, d.qpn, psn(FIRST_PSN, 1)).atomic(
            d.mr_va + MR_LEN,
            d.rkey,
            1,
            0,
        );
        let seen = inject(&d, &out);
        fatal_nak(&d, &seen, syn::NAK_REMOTE_ACCESS, psn(FIRST_PSN, 1), 1);
    });
}
