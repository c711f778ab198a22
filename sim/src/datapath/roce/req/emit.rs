//! Putting a requester's packets on the port: each WQE's packets in PSN order, as far as
//! the port's queue has room, the rest on a later run (see [`super::super::room`]).

use super::*;

/// What [`emit`] stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Emitted {
    /// Every packet of the WQE is on its way.
    All,
    /// The port's queue (or the device's own loopback queue) is full: the rest goes out on
    /// a later run, once frames have left.
    NoRoom,
    /// The message's memory could not be read: the WQE failed (reported when it reaches the
    /// head) and nothing after it goes out.
    Failed,
}

/// Puts the packets of `e` from its next one on onto the port, while there is room: a WQE
/// may name a message of up to `log_max_msg` bytes, and building all its frames at once let
/// one doorbell queue a gigabyte.
pub(super) fn emit(
    side: &mut Side<'_>,
    v: &Qpv,
    p: &Path,
    e: &mut Inflight,
    buf: &mut Vec<u8>,
) -> Emitted {
    let mtu = u64::from(v.mtu);
    let bth = |opcode: u8, i: u32, last: bool| Bth {
        opcode,
        se: last && e.se,
        mig: false,
        pad: 0,
        pkey: wire::DEFAULT_PKEY,
        dqpn: v.dqpn,
        ack_req: last || i % ACK_REQ_EVERY == ACK_REQ_EVERY - 1,
        psn: psn_add(e.first_psn, i),
    };
    while e.next < e.npkts {
        if !super::super::room(side.m) {
            return Emitted::NoRoom;
        }
        let i = e.next;
        match e.op {
            Op::Nop => {}
            Op::Send | Op::Write => {
                let write = e.op == Op::Write;
                let wop = SendOpcode::from_raw(e.opcode.into());
                let lo = (u64::from(i) * mtu).min(e.len);
                let hi = (lo + mtu).min(e.len);
                buf.clear();
                if !e.src.read(side, v.requester.who, lo, hi, buf) {
                    e.failed = Some(CqeSyndrome::LocalProtErr);
                    return Emitted::Failed;
                }
                let pos = match (i == 0, i + 1 == e.npkts) {
                    (true, true) => Pos::Only,
                    (true, false) => Pos::First,
                    (false, true) => Pos::Last,
                    (false, false) => Pos::Middle,
                };
                let opcode = opcode_of(write, wop, pos);
                let mut ext = Ext::new();
                if write && matches!(pos, Pos::First | Pos::Only) {
                    ext = ext.reth(Reth {
                        va: e.raddr,
                        rkey: e.rkey,
                        len: e.len as u32,
                    });
                }
                if matches!(pos, Pos::Last | Pos::Only)
                    && matches!(
                        wop,
                        Some(
                            SendOpcode::SendImm | SendOpcode::SendInval | SendOpcode::RdmaWriteImm
                        )
                    )
                {
                    ext = ext.imm(e.imm);
                }
                let last = matches!(pos, Pos::Last | Pos::Only);
                transmit(side, p, &bth(opcode, i, last), ext.as_slice(), buf);
                e.next += 1;
                continue;
            }
            Op::Read => {
                let off = u64::from(i) * mtu;
                let ext = Ext::new().reth(Reth {
                    va: e.raddr.wrapping_add(off),
                    rkey: e.rkey,
                    len: e.len.saturating_sub(off) as u32,
                });
                transmit(
                    side,
                    p,
                    &bth(op::READ_REQUEST, i, true),
                    ext.as_slice(),
                    &[],
                );
            }
            Op::Atomic { compare_swap } => {
                let opcode = if compare_swap {
                    op::COMPARE_SWAP
                } else {
                    op::FETCH_ADD
                };
                let ext = Ext::new().atomic(AtomicEth {
                    va: e.raddr,
                    rkey: e.rkey,
                    swap_add: e.swap_add,
                    compare: e.compare,
                });
                transmit(side, p, &bth(opcode, 0, true), ext.as_slice(), &[]);
            }
        }
        // A read's request covers all its responses; NOPs and atomics are one packet.
        e.next = e.npkts;
    }
    Emitted::All
}

/// Puts on the port, in order, what the WQEs in flight have not sent yet (after a resend
/// moved them back, or a run that stopped for room); false when it stopped before the end
/// (the requester's `unsent` stays set).
pub(super) fn pump(side: &mut Side<'_>, v: &Qpv, r: &mut Requester) -> bool {
    let Some(p) = v.path else {
        return true;
    };
    let Requester { inflight, buf, .. } = r;
    for e in inflight.iter_mut() {
        if e.failed.is_some() || emit(side, v, &p, e, buf) != Emitted::All {
            return false;
        }
    }
    r.unsent = false;
    true
}

/// The BTH opcode of a send or write packet at `pos`, for WQE opcode `wop`.
fn opcode_of(write: bool, wop: Option<SendOpcode>, pos: Pos) -> u8 {
    let imm = matches!(wop, Some(SendOpcode::SendImm | SendOpcode::RdmaWriteImm));
    let inv = wop == Some(SendOpcode::SendInval);
    match (write, pos) {
        (false, Pos::First) => op::SEND_FIRST,
        (false, Pos::Middle) => op::SEND_MIDDLE,
        (false, Pos::Last) if imm => op::SEND_LAST_IMM,
        (false, Pos::Last) if inv => op::SEND_LAST_INV,
        (false, Pos::Last) => op::SEND_LAST,
        (false, Pos::Only) if imm => op::SEND_ONLY_IMM,
        (false, Pos::Only) if inv => op::SEND_ONLY_INV,
        (false, Pos::Only) => op::SEND_ONLY,
        (true, Pos::First) => op::WRITE_FIRST,
        (true, Pos::Middle) => op::WRITE_MIDDLE,
        (true, Pos::Last) if imm => op::WRITE_LAST_IMM,
        (true, Pos::Last) => op::WRITE_LAST,
        (true, Pos::Only) if imm => op::WRITE_ONLY_IMM,
        (true, Pos::Only) => op::WRITE_ONLY,
    }
}
