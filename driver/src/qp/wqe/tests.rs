//! The word writer against the generated setters: for every shape of request, the units the
//! writer stores over a slot full of stale bytes equal, byte for byte, the same WQE built
//! field by field in a zeroed block (how the driver built them before).

use super::*;

/// A slot as a previous request of another shape might have left it.
const STALE: u8 = 0xff;

/// The reference: a zeroed basic block, every field set with the generated setters.
fn reference(w: &SendWqe<'_>) -> ([u8; WQEBB], u8) {
    let mut block = [0u8; WQEBB];
    let mut ds = 1u8;
    let mut at = UNIT;
    let remote = match w.remote {
        Remote::None => None,
        Remote::Addr(r) | Remote::Atomic(r, ..) => Some(r),
    };
    if let Some(r) = remote {
        let mut seg = WqeRaddrSeg::new_unchecked(&mut block[at..at + UNIT]);
        seg.set_raddr(r.addr);
        seg.set_rkey(r.rkey);
        (at, ds) = (at + UNIT, ds + 1);
    }
    if let Remote::Atomic(_, swap_add, compare) = w.remote {
        let mut seg = WqeAtomicSeg::new_unchecked(&mut block[at..at + UNIT]);
        seg.set_swap_add(swap_add);
        seg.set_compare(compare);
        (at, ds) = (at + UNIT, ds + 1);
    }
    match w.local {
        Local::None => {}
        Local::Inline(data) => {
            let mut hdr = WqeInlineSeg::new_unchecked(&mut block[at..at + INLINE_DATA]);
            hdr.set_inline(true);
            hdr.set_byte_count(data.len() as u16);
            block[at + INLINE_DATA..at + INLINE_DATA + data.len()].copy_from_slice(data);
            ds += (INLINE_DATA + data.len()).div_ceil(UNIT) as u8;
        }
        Local::Gather { len, lkey, addr } => {
            let mut seg = WqeDataSeg::new_unchecked(&mut block[at..at + UNIT]);
            seg.set_byte_count(len);
            seg.set_lkey(lkey);
            seg.set_addr(addr);
            ds += 1;
        }
    }
    let mut ctrl = WqeCtrlSeg::new_unchecked(&mut block[..UNIT]);
    ctrl.set_opcode(w.opcode);
    ctrl.set_wqe_index(w.index);
    ctrl.set_qpn(w.qpn);
    ctrl.set_ds(ds);
    ctrl.set_ce(if w.signaled {
        WqeCompletionMode::CqUpdate
    } else {
        WqeCompletionMode::OnError
    });
    ctrl.set_imm(w.imm);
    (block, ds)
}

/// Writes `w` over a stale slot and checks it against the reference; returns `ds`.
fn check(w: &SendWqe<'_>) -> u8 {
    let (want, want_ds) = reference(w);
    let mut got = [STALE; WQEBB];
    let ds = w.write(&mut got);
    assert_eq!(ds, want_ds, "{w:?}");
    let used = usize::from(ds) * UNIT;
    assert_eq!(got[..used], want[..used], "{w:?}");
    assert!(
        got[used..].iter().all(|&b| b == STALE),
        "wrote past ds: {w:?}"
    );
    let first8 = u64::from_be_bytes(got[..8].try_into().unwrap());
    assert_eq!(first8, w.ctrl0(ds), "the doorbell word");
    ds
}

fn wqe<'a>(opcode: SendOpcode, remote: Remote, local: Local<'a>) -> SendWqe<'a> {
    SendWqe {
        opcode,
        imm: 0,
        index: 0xa5c3,
        qpn: 0x00ab_cdef,
        signaled: true,
        remote,
        local,
    }
}

const R: RemoteAddr = RemoteAddr {
    addr: 0x8877_6655_4433_2211,
    rkey: 0xdead_beef,
};
const GATHER: Local<'static> = Local::Gather {
    len: 0x0102_0304,
    lkey: 0x5a5a_0001,
    addr: 0x1122_3344_5566_7788,
};

#[test]
fn every_operation_matches_the_field_by_field_reference_over_stale_bytes() {
    use SendOpcode::*;
    let data: Vec<u8> = (1..=44).collect();
    let cases = [
        (Send, Remote::None, GATHER, 2),
        (SendImm, Remote::None, GATHER, 2),
        (Send, Remote::None, Local::None, 1),
        (Send, Remote::None, Local::Inline(&data[..44]), 4),
        (SendImm, Remote::None, Local::Inline(&data[..13]), 3),
        (RdmaWrite, Remote::Addr(R), GATHER, 3),
        (RdmaWriteImm, Remote::Addr(R), GATHER, 3),
        (RdmaWrite, Remote::Addr(R), Local::Inline(&data[..28]), 4),
        (RdmaWriteImm, Remote::Addr(R), Local::Inline(&data[..9]), 3),
        (RdmaWrite, Remote::Addr(R), Local::None, 2),
        (RdmaRead, Remote::Addr(R), GATHER, 3),
        (
            AtomicCs,
            Remote::Atomic(R, 0x0f0f_0f0f_0f0f_0f0f, u64::MAX),
            GATHER,
            4,
        ),
        (AtomicFa, Remote::Atomic(R, 7, 0), GATHER, 4),
    ];
    for (opcode, remote, local, ds) in cases {
        for (signaled, imm) in [(true, 0x1234_5678), (false, 0)] {
            let w = SendWqe {
                signaled,
                imm,
                ..wqe(opcode, remote, local)
            };
            assert_eq!(check(&w), ds, "{w:?}");
        }
    }
}

#[test]
fn inline_data_of_every_length_is_padded_with_zeros_to_its_last_unit() {
    let data: Vec<u8> = (0..44).map(|b| 0x80 | b).collect();
    for len in 0..=44 {
        let w = wqe(SendOpcode::Send, Remote::None, Local::Inline(&data[..len]));
        assert_eq!(
            usize::from(check(&w)),
            1 + (INLINE_DATA + len).div_ceil(UNIT)
        );
    }
    for len in 0..=28 {
        let w = wqe(
            SendOpcode::RdmaWrite,
            Remote::Addr(R),
            Local::Inline(&data[..len]),
        );
        assert_eq!(
            usize::from(check(&w)),
            2 + (INLINE_DATA + len).div_ceil(UNIT)
        );
    }
}

#[test]
fn values_wider_than_their_field_stay_in_it() {
    // A QP number has 24 bits: the writer drops the rest as the generated setter does, so ds
    // and the opcode survive. (The generated setter would refuse it in a debug build.)
    let w = SendWqe {
        qpn: 0xff12_3456,
        ..wqe(SendOpcode::Send, Remote::None, GATHER)
    };
    let mut got = [STALE; WQEBB];
    let ds = w.write(&mut got);
    let ctrl = WqeCtrlSeg::new_unchecked(&got[..UNIT]);
    assert_eq!((ctrl.qpn(), ctrl.ds(), ds), (0x12_3456, 2, 2));
    assert_eq!(ctrl.opcode(), Ok(SendOpcode::Send));
}
