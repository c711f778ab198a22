//! The requests the responder answers with data: RDMA READ (response packets split at the
//! path MTU) and the atomics (the original value in an atomic ACK), each remembered so that
//! a duplicate request is served again from memory, and the handling of duplicates.

use super::super::wire::{aeth, op, Aeth, Ext, Kind, Packet, Pos};
use super::super::{psn_add, psn_diff, room, transmit, PSN_MASK};
use super::{answer, bth, Qpv, ReadDone, Responder, Serving, Verdict, HISTORY};
use crate::datapath::{mem, Side};
use crate::exec::counters::{rc_event, RcCounts};
use std::collections::VecDeque;

/// The PSNs a read of `len` bytes takes: one response packet per MTU, at least one.
pub(super) fn read_packets(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu).max(1)
}

pub(super) fn read(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, pkt: &Packet<'_>) -> Verdict {
    let reth = pkt.reth;
    if !v.rre {
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    }
    // Longer than the device's largest message: a length error, an invalid request (IBTA
    // vol. 1 9.7.5.1.3; soft-RoCE checks the length before the key too).
    if u64::from(reth.len) > v.max_msg {
        return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
    }
    let len = u64::from(reth.len);
    if mem::check(
        side.m,
        reth.rkey,
        v.who,
        reth.va,
        len,
        mem::Access::RemoteRead,
    )
    .is_err()
    {
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    }
    rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.rx_read_requests);
    r.msn = psn_add(r.msn, 1);
    let done = ReadDone {
        first_psn: pkt.bth.psn,
        npkts: read_packets(reth.len, v.mtu),
        va: reth.va,
        rkey: reth.rkey,
        len: reth.len,
    };
    match serve_read(side, v, r, &done, pkt.bth.psn) {
        Served::All => {}
        Served::Paused(next) => pause(side, v, r, done, next),
        Served::Failed => return Verdict::Nak(aeth::NAK_REMOTE_ACCESS),
    }
    remember(&mut r.reads, done);
    Verdict::Done(done.npkts)
}

/// The read's responses from packet `next` on go out later (see [`resume`](super::resume)).
fn pause(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, rd: ReadDone, next: u32) {
    r.serving = Some(Serving { rd, next });
    side.m.pending.roce.insert(v.qpn);
}

/// Sends what is left of the read being answered, as far as there is room; true while some
/// is still left.
pub(super) fn pump(side: &mut Side<'_>, v: &Qpv, r: &mut Responder) -> bool {
    if let Some(s) = r.serving.take() {
        let from = psn_add(s.rd.first_psn, s.next);
        match serve_read(side, v, r, &s.rd, from) {
            Served::Paused(next) => pause(side, v, r, s.rd, next),
            // A key gone since the request (or memory unmapped): the responses stop; the
            // requester times out and asks again, and the request then fails its check.
            Served::All | Served::Failed => {}
        }
    }
    r.serving.is_some()
}

pub(super) fn remember<T>(list: &mut VecDeque<T>, item: T) {
    if list.len() >= HISTORY {
        list.pop_front();
    }
    list.push_back(item);
}

/// How far [`serve_read`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Served {
    /// Every response packet went out.
    All,
    /// The port's queue filled up: the packets from this one on are still to go.
    Paused(u32),
    /// The memory could not be read.
    Failed,
}

/// Sends the response packets of read `rd`, from PSN `from` (its first, or where a
/// duplicate request resumes it), while there is room for them: a read of up to
/// `log_max_msg` bytes answered at once queued a gigabyte of frames for one request.
pub(super) fn serve_read(
    side: &mut Side<'_>,
    v: &Qpv,
    r: &Responder,
    rd: &ReadDone,
    from: u32,
) -> Served {
    let Some(p) = v.path else {
        return Served::All;
    };
    let start = psn_diff(from, rd.first_psn).max(0) as u32;
    let mtu = u64::from(v.mtu);
    let mut buf = Vec::new();
    for i in start..rd.npkts {
        if !room(side.m) {
            return Served::Paused(i);
        }
        let off = u64::from(i) * mtu;
        let n = u64::from(rd.len).saturating_sub(off).min(mtu);
        buf.clear();
        if n > 0 {
            let Ok(e) = mem::resolve(
                side.m,
                rd.rkey,
                v.who,
                rd.va.wrapping_add(off),
                n,
                mem::Access::RemoteRead,
            ) else {
                return Served::Failed;
            };
            if !mem::read(side.dma, &e, &mut buf) {
                side.m.dma_faults += 1;
                return Served::Failed;
            }
        }
        let pos = match (i == 0, i + 1 == rd.npkts) {
            (true, true) => Pos::Only,
            (true, false) => Pos::First,
            (false, true) => Pos::Last,
            (false, false) => Pos::Middle,
        };
        let opcode = match pos {
            Pos::Only => op::READ_RESPONSE_ONLY,
            Pos::First => op::READ_RESPONSE_FIRST,
            Pos::Middle => op::READ_RESPONSE_MIDDLE,
            Pos::Last => op::READ_RESPONSE_LAST,
        };
        let ext = if pos == Pos::Middle {
            Ext::new()
        } else {
            Ext::new().aeth(Aeth {
                syndrome: aeth::ACK,
                msn: r.msn,
            })
        };
        let bth = bth(v, opcode, psn_add(rd.first_psn, i));
        transmit(side, &p, &bth, ext.as_slice(), &buf);
    }
    Served::All
}

pub(super) fn atomic(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, pkt: &Packet<'_>) -> Verdict {
    let a = pkt.atomic;
    if !v.rae {
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    }
    if a.va % 8 != 0 {
        return Verdict::Nak(aeth::NAK_INVALID_REQUEST);
    }
    let Ok(e) = mem::resolve(side.m, a.rkey, v.who, a.va, 8, mem::Access::RemoteAtomic) else {
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    };
    let mut old = Vec::with_capacity(8);
    if !mem::read(side.dma, &e, &mut old) || old.len() != 8 {
        side.m.dma_faults += 1;
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&old);
    let orig = u64::from_be_bytes(b);
    let new = if pkt.bth.opcode == op::COMPARE_SWAP {
        if orig == a.compare {
            a.swap_add
        } else {
            orig
        }
    } else {
        orig.wrapping_add(a.swap_add)
    };
    if !mem::write(side.dma, &e, &new.to_be_bytes()) {
        side.m.dma_faults += 1;
        return Verdict::Nak(aeth::NAK_REMOTE_ACCESS);
    }
    rc_event(side.m, v.qpn, |c: &mut RcCounts| &mut c.rx_atomic_requests);
    r.msn = psn_add(r.msn, 1);
    remember(&mut r.atomics, (pkt.bth.psn, orig));
    atomic_ack(side, v, r, pkt.bth.psn, orig);
    Verdict::Done(1)
}

fn atomic_ack(side: &mut Side<'_>, v: &Qpv, r: &Responder, psn: u32, orig: u64) {
    let Some(p) = v.path else {
        return;
    };
    let ext = Ext::new()
        .aeth(Aeth {
            syndrome: aeth::ACK,
            msn: r.msn,
        })
        .atomic_ack(orig);
    transmit(
        side,
        &p,
        &bth(v, op::ATOMIC_ACKNOWLEDGE, psn),
        ext.as_slice(),
        &[],
    );
}

/// A request with a PSN already passed: ACK sends and writes again, serve reads again from
/// the PSN asked for, answer atomics from their saved result.
pub(super) fn duplicate(side: &mut Side<'_>, v: &Qpv, r: &mut Responder, pkt: &Packet<'_>) {
    match pkt.shape.kind {
        // A resent SEND or WRITE is acknowledged again, once per resent run: at the packets
        // that ask for an ACK (the last of each message, and every so often), with the PSN of
        // everything received so far. Answering every duplicate would ACK the requester while
        // it is still resending, which soft-RoCE does not always survive (its requester was
        // seen to stop for good after an ACK that arrived mid-resend).
        Kind::Send | Kind::Write if pkt.bth.ack_req => {
            let last = psn_add(r.epsn, PSN_MASK);
            answer(side, v, r, aeth::ACK, last);
        }
        Kind::Send | Kind::Write => {}
        Kind::Read => {
            let psn = pkt.bth.psn;
            let Some(rd) = r.reads.iter().copied().find(|rd| {
                psn_diff(psn, rd.first_psn) >= 0
                    && psn_diff(psn_add(rd.first_psn, rd.npkts), psn) > 0
            }) else {
                return;
            };
            // The retried request names the rest of the original range.
            let off = u64::from(psn_diff(psn, rd.first_psn) as u32) * u64::from(v.mtu);
            let reth = pkt.reth;
            if reth.rkey != rd.rkey || reth.va != rd.va.wrapping_add(off) {
                return;
            }
            if let Served::Paused(next) = serve_read(side, v, r, &rd, psn) {
                pause(side, v, r, rd, next);
            }
        }
        Kind::Atomic => {
            let psn = pkt.bth.psn;
            if let Some(&(_, orig)) = r.atomics.iter().find(|(p, _)| *p == psn) {
                atomic_ack(side, v, r, psn, orig);
            }
        }
        _ => {}
    }
}
