//! Transmit: SQ objects run their WQEs (NOP; SEND, an Ethernet segment with inline headers or
//! a VLAN tag to insert, then gathered data; LSO, see [`lso`](super::lso)) and put the frames
//! on the port.

use super::super::cqe::CqeWords;
use super::super::csum;
use super::super::mem::{self, Access, Accessor, Extents};
use super::super::sendq::{self, Piece, Wqe, DS};
use super::super::{cq, Side};
use super::eseg::Eseg;
use super::lso;
use crate::caps::Caps;
use crate::clock::Stamp;
use crate::dma::DmaSpace;
use crate::exec::counters::VportCounters;
use crate::exec::mkey::Mkey;
use crate::model::Model;
use crate::table::Table;
use mlx5_prm::{Cqe64, CqeOpcode, CqeSyndrome, SendOpcode, SqState};

/// Largest frame an SQ sends (an LSO WQE sends several, each at most this long).
pub(super) const MAX_FRAME: usize = 64 * 1024;
/// Bytes of frames queued at the port after which a run stops before its next WQE, to go
/// on once they have left (`Pending::tx`): what the queue holds stays below this plus one
/// WQE's frames (64 KiB for a SEND, about 10 MiB for the largest LSO), however many WQEs a
/// doorbell announces. Batches of 32 frames of 64 KiB stay under it.
pub(crate) const PORT_QUEUE_BUDGET: usize = 4 << 20;
/// The bytes of a frame before the place a VLAN tag goes: the two MAC addresses.
const MACS: usize = 12;

/// Runs SQ object `sqn` (state RDY; in ERR its WQEs are flushed) up to the send counter of
/// its doorbell record. The counter is read again only once the WQEs it announced are done.
pub(crate) fn run(side: &mut Side<'_>, sqn: u32, bf: Option<&[u8]>) {
    // The WQE buffer is kept by the model between runs: clearing a fresh one cost more than a
    // short run's WQEs.
    let mut wqe = side
        .m
        .wqe_buffer
        .take()
        .unwrap_or_else(|| Box::new(Wqe::new()));
    run_with(side, sqn, bf, &mut wqe);
    side.m.wqe_buffer = Some(wqe);
}

fn run_with(side: &mut Side<'_>, sqn: u32, bf: Option<&[u8]>, wqe: &mut Wqe) {
    // What the SQ's context says is fixed for the run (commands do not run while the model
    // is locked): read once, not per WQE. Its state and consumer counter are not (a WQE in
    // error moves the SQ to ERR).
    let Ok(sq) = side.m.sqs.get(sqn) else {
        return;
    };
    let wq = sq.ctx.wq();
    let log = wq.log_wq_sz();
    let size = 1u32 << log.min(16);
    let dbr = wq.dbr_addr();
    let (cqn, flush_cqes, stamp) = (sq.cqn, sq.ctx.flush_in_error_en(), sq.stamp);
    let who = Accessor {
        pd: sq.pd,
        rlky: sq.ctx.rlky(),
    };
    let mut bf = bf;
    let mut done: u32 = 0;
    let mut counter: Option<u16> = None;
    // The doorbell record's window, for reading the counter again at the end of the run.
    let dma = side.dma;
    let mut record = None;
    loop {
        let Ok(sq) = side.m.sqs.get(sqn) else {
            return;
        };
        let flushing = match sq.ctx.state() {
            Ok(SqState::Rdy) => false,
            Ok(SqState::Err) => true,
            _ => return,
        };
        let ci = sq.ci;
        let pc = match counter {
            Some(pc) if pc != ci => pc,
            _ => match sendq::counter_held(dma, dbr, &mut record) {
                Some(pc) => pc,
                None => {
                    side.m.dma_faults += 1;
                    return;
                }
            },
        };
        counter = Some(pc);
        let pending = pc.wrapping_sub(ci);
        if pending == 0 || u32::from(pending) > size || done >= size {
            return;
        }
        if !flushing && side.m.outbox.bytes() >= PORT_QUEUE_BUDGET {
            side.m.pending.tx.insert(sqn);
            return;
        }
        let copy = bf
            .take()
            .filter(|b| sendq::index_of(b) == Some(ci) && b.len() >= sendq::ds(b).max(1) * DS);
        let read = match copy {
            Some(b) => {
                side.m.stats.blueflame_wqes += 1;
                wqe.copy_from(b);
                true
            }
            None => sendq::read(side.dma, &sq.ring, 0, log, ci, wqe),
        };
        if !read {
            side.m.dma_faults += 1;
            return;
        }
        if flushing {
            if flush_cqes {
                let e = cq::err_cqe(
                    CqeOpcode::ReqErr,
                    CqeSyndrome::WrFlushErr,
                    sqn,
                    ci,
                    sendq::opcode(wqe),
                );
                cq::post_err(side, cqn, e);
            }
        } else {
            execute(side, sqn, (cqn, stamp), who, wqe, ci);
        }
        let n = sendq::wqebbs(wqe);
        if let Ok(sq) = side.m.sqs.get_mut(sqn) {
            sq.ci = ci.wrapping_add(n);
        }
        done += u32::from(n);
    }
}

/// Executes one WQE of SQ `sqn` (in RDY; its CQ and its accessor passed in): NOP, SEND or
/// LSO. A CQE is written when the WQE asks for one (`ce` 2 or 3) and always on error; an
/// error moves the SQ to ERR.
fn execute(
    side: &mut Side<'_>,
    sqn: u32,
    (cqn, stamp): (u32, Stamp),
    who: Accessor,
    wqe: &[u8],
    index: u16,
) {
    let opcode = sendq::opcode(wqe);
    let ce = (wqe[11] >> 2) & 0x3;
    let end = sendq::ds(wqe) * DS;
    let result = match SendOpcode::from_raw(opcode.into()) {
        _ if end < DS => Err(CqeSyndrome::LocalQpOpErr),
        Some(SendOpcode::Nop) => Ok(()),
        Some(SendOpcode::Send) => {
            let fault = side.faults.is_some_and(|f| f.take_bad_lkey_send());
            send(side, who, wqe, end, fault)
        }
        Some(SendOpcode::Lso) => {
            let fault = side.faults.is_some_and(|f| f.take_bad_lkey_send());
            lso::send(side, who, wqe, end, fault)
        }
        _ => Err(CqeSyndrome::LocalQpOpErr),
    };
    match result {
        Ok(()) if ce >= 2 => {
            let mut c = CqeWords::new(CqeOpcode::Req, sqn, index);
            c.set(Cqe64::S_WQE_OPCODE, opcode.into());
            cq::post_words(side, cqn, stamp, c);
        }
        Ok(()) => {}
        Err(syndrome) => {
            let e = cq::err_cqe(CqeOpcode::ReqErr, syndrome, sqn, index, opcode);
            cq::post_err(side, cqn, e);
            if let Ok(sq) = side.m.sqs.get_mut(sqn) {
                sq.ctx.set_state(SqState::Err);
                side.m.pending.sqs.insert(sqn);
            }
        }
    }
}

/// SEND: one frame, queued at the port and counted (see [`frame`]).
fn send(
    side: &mut Side<'_>,
    who: Accessor,
    wqe: &[u8],
    end: usize,
    fault: bool,
) -> Result<(), CqeSyndrome> {
    let (m, dma) = (&mut *side.m, side.dma);
    let (mkeys, caps) = (&m.mkeys, &m.cur);
    let built = m
        .outbox
        .push_with(|f| frame(mkeys, caps, dma, who, wqe, end, fault, f));
    match built {
        Ok(()) => {
            count_sent(m);
            Ok(())
        }
        Err(e) => Err(e.syndrome(m)),
    }
}

/// Counts the frame just queued at the port as sent (the device's frame count, the vport's
/// and, while the port is up, the port's counters) and drops it again while the port is
/// down: a frame sent on a port that is down goes nowhere. Inlined, as it was before LSO
/// shared it: a call per frame.
#[inline(always)]
pub(crate) fn count_sent(m: &mut Model) {
    count(m, VportCounters::sent);
}

/// [`count_sent`] for a RoCE packet: the vport counts it as RDMA traffic, not Ethernet.
pub(crate) fn count_sent_roce(m: &mut Model) {
    count(m, VportCounters::rdma_sent);
}

#[inline(always)]
fn count(m: &mut Model, vport: impl FnOnce(&mut VportCounters, &[u8])) {
    m.stats.tx_frames += 1;
    let up = m.port.oper_up();
    if let Some(sent) = m.outbox.last() {
        vport(&mut m.vport_counters, sent);
        if up {
            m.port.counters.sent(sent);
        }
    }
    if !up && m.outbox.last().is_some() {
        m.outbox.pop();
        m.stats.tx_discarded += 1;
        m.port.counters.discarded();
    }
}

/// Why a frame could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameError {
    /// The WQE is bad: its error CQE's syndrome.
    Wqe(CqeSyndrome),
    /// Gathered memory is not mapped (a local protection error, and a DMA fault).
    Unmapped,
}

impl FrameError {
    /// The error CQE's syndrome; an unmapped buffer is also counted as a DMA fault.
    pub fn syndrome(self, m: &mut Model) -> CqeSyndrome {
        match self {
            FrameError::Wqe(s) => s,
            FrameError::Unmapped => {
                m.dma_faults += 1;
                CqeSyndrome::LocalProtErr
            }
        }
    }
}

/// Builds the frame of a SEND WQE at the end of `f`: the inline headers of the Ethernet
/// segment, then the gather list, then the checksums the segment asks for, over the frame
/// as sent; a segment asking for VLAN insertion goes to [`tagged`].
#[allow(clippy::too_many_arguments)]
fn frame(
    mkeys: &Table<Mkey>,
    caps: &Caps,
    dma: &DmaSpace,
    who: Accessor,
    wqe: &[u8],
    end: usize,
    fault: bool,
    f: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let e = Eseg::parse(wqe, end).map_err(FrameError::Wqe)?;
    let mut total = e.hdr as u64;
    for p in sendq::gather(wqe, e.data, end) {
        total += p
            .map_err(|_| FrameError::Wqe(CqeSyndrome::LocalQpOpErr))?
            .len();
    }
    if let Some(tag) = e.vlan {
        return tagged(mkeys, caps, dma, who, wqe, end, fault, &e, tag, total, f);
    }
    if total > MAX_FRAME as u64 {
        return Err(FrameError::Wqe(CqeSyndrome::LocalLengthErr));
    }
    let start = f.len();
    let (first, rest) = e.header(wqe);
    f.extend_from_slice(first);
    f.extend_from_slice(rest);
    gather_into(mkeys, dma, who, wqe, e.data, end, fault, f)?;
    if e.any_csum() {
        csum::tx(&mut f[start..], e.l3_csum(), e.l4_csum());
    }
    Ok(())
}

/// [`frame`] for a segment asking for VLAN insertion (allowed while `caps` say
/// wqe_vlan_insert): the gather list (`total` bytes) with `tag` put after its MAC addresses,
/// then the checksums. Kept out of line, off the path of untagged frames.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn tagged(
    mkeys: &Table<Mkey>,
    caps: &Caps,
    dma: &DmaSpace,
    who: Accessor,
    wqe: &[u8],
    end: usize,
    fault: bool,
    e: &Eseg,
    tag: [u8; 4],
    total: u64,
    f: &mut Vec<u8>,
) -> Result<(), FrameError> {
    if !caps.eth_cur.wqe_vlan_insert() {
        return Err(FrameError::Wqe(CqeSyndrome::LocalQpOpErr));
    }
    // The tag goes after the addresses: a frame too short to have them cannot take one.
    if total < MACS as u64 {
        return Err(FrameError::Wqe(CqeSyndrome::LocalLengthErr));
    }
    if total + tag.len() as u64 > MAX_FRAME as u64 {
        return Err(FrameError::Wqe(CqeSyndrome::LocalLengthErr));
    }
    let start = f.len();
    gather_into(mkeys, dma, who, wqe, e.data, end, fault, f)?;
    f.splice(start + MACS..start + MACS, tag);
    if e.any_csum() {
        csum::tx(&mut f[start..], e.l3_csum(), e.l4_csum());
    }
    Ok(())
}

/// Appends the gather list of `wqe[data..end]` (already checked by a walk of
/// [`sendq::gather`]) to `f`: inline segments from the WQE, data segments through their
/// lkey. With `fault` (see [`FaultInjector::bad_lkey_sends`](crate::FaultInjector::bad_lkey_sends))
/// the first data segment's key fails as an unknown key does, and a list without one fails
/// at its end the same way. Inlined: a call with its eight arguments was a visible share of
/// a small frame's cost.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn gather_into(
    mkeys: &Table<Mkey>,
    dma: &DmaSpace,
    who: Accessor,
    wqe: &[u8],
    data: usize,
    end: usize,
    fault: bool,
    f: &mut Vec<u8>,
) -> Result<(), FrameError> {
    // Matched rather than `flatten`ed: the adapter was not inlined, a call per piece.
    for p in sendq::gather(wqe, data, end) {
        match p {
            Err(_) => {}
            Ok(Piece::Inline { start, end }) => f.extend_from_slice(&wqe[start..end]),
            Ok(Piece::Data { len, lkey, addr }) => {
                if fault {
                    return Err(FrameError::Wqe(CqeSyndrome::LocalProtErr));
                }
                let mut e = Extents::new();
                mem::resolve_into(
                    mkeys,
                    lkey,
                    who,
                    addr,
                    len.into(),
                    Access::LocalRead,
                    &mut e,
                )
                .map_err(|_| FrameError::Wqe(CqeSyndrome::LocalProtErr))?;
                if !mem::read(dma, &e, f) {
                    return Err(FrameError::Unmapped);
                }
            }
        }
    }
    if fault {
        return Err(FrameError::Wqe(CqeSyndrome::LocalProtErr));
    }
    Ok(())
}
