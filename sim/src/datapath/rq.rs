//! Receive queues, of QPs (the RQ part at the start of the QP buffer) and RQ objects: the
//! device learns how many receive WQEs were posted from the receive counter in dword 0 of the
//! doorbell record (there is no receive doorbell), reads the next WQE's scatter list when a
//! message needs it, scatters the data, and consumes it.

use super::mem::{self, Accessor, Extents, KeyError};
use super::memo::Memo;
use super::{cq, Side};
use crate::clock::Stamp;
use crate::dma::DmaSpace;
use crate::exec::wq::Rq;
use crate::model::Model;
use crate::pas::PageList;
use crate::stackvec::StackVec;
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{CqeOpcode, CqeSyndrome, RqState, INVALID_LKEY};

/// A receive queue: a QP's or an RQ object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Qp(u32),
    Rq(u32),
}

/// One scatter entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sge {
    pub len: u32,
    pub lkey: u32,
    pub addr: u64,
}

/// A scatter list: a receive WQE usually has one entry, kept inline.
pub(crate) type Sges = StackVec<Sge, 2>;

/// A posted receive WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Posted {
    /// Its index (the receive counter value it was posted at, 16 bits).
    pub index: u16,
    pub sges: Sges,
}

/// Where a receive queue lives and who owns it.
struct Ring<'a> {
    ring: &'a PageList,
    log_size: u8,
    log_stride: u8,
    dbr: u64,
    ci: u16,
    cqn: u32,
    stamp: Stamp,
}

fn ring(m: &Model, t: Target) -> Option<Ring<'_>> {
    match t {
        Target::Qp(qpn) => {
            let qp = m.qps.get(qpn).ok()?;
            Some(Ring {
                ring: qp.buf.as_ref()?,
                log_size: qp.ctx.log_rq_size(),
                log_stride: qp.ctx.log_rq_stride() + 4,
                dbr: qp.ctx.dbr_addr(),
                ci: qp.rq_ci,
                cqn: qp.cqn_rcv?,
                stamp: qp.stamp,
            })
        }
        Target::Rq(rqn) => Some(ring_of(m.rqs.get(rqn).ok()?)),
    }
}

/// The ring of RQ object `rq`.
fn ring_of(rq: &Rq) -> Ring<'_> {
    let wq = rq.ctx.wq();
    Ring {
        ring: &rq.ring,
        log_size: wq.log_wq_sz(),
        log_stride: wq.log_wq_stride(),
        dbr: wq.dbr_addr(),
        ci: rq.ci,
        cqn: rq.cqn,
        stamp: rq.stamp,
    }
}

/// What the next receive WQE of a ring is.
pub(crate) enum Peeked {
    /// Posted, at this index (its scatter list appended to the caller's list).
    Posted(u16),
    /// Nothing posted.
    Empty,
    /// The doorbell record or the WQE is not mapped (a DMA fault).
    Fault,
}

/// True when the queue exists and has a receive queue at all.
pub(crate) fn exists(m: &Model, t: Target) -> bool {
    ring(m, t).is_some()
}

/// Receive WQEs posted and not yet consumed: receive counter − consumer, 0 when the counter
/// cannot be read or claims more than the ring holds.
fn outstanding(dma: &DmaSpace, r: &Ring<'_>) -> Option<u16> {
    pending(r, receive_counter(dma, r)?)
}

/// The receive counter of the ring's doorbell record (dword 0, low 16 bits).
fn receive_counter(dma: &DmaSpace, r: &Ring<'_>) -> Option<u16> {
    let pc = dma.window(r.dbr, 4)?.read_be32(0) as u16;
    // The WQEs it covers are read after it (no doorbell orders them: see `sendq::posted`).
    super::sendq::posted();
    Some(pc)
}

/// WQEs outstanding when the receive counter is `pc`; `None` when it claims more than the
/// ring holds.
fn pending(r: &Ring<'_>, pc: u16) -> Option<u16> {
    let n = pc.wrapping_sub(r.ci);
    (u32::from(n) <= 1u32 << r.log_size.min(16)).then_some(n)
}

/// The next posted receive WQE, without consuming it.
pub(crate) fn peek(m: &mut Model, dma: &DmaSpace, t: Target) -> Option<Posted> {
    let mut sges = Sges::new();
    let index = peek_into(m, dma, t, &mut sges)?;
    Some(Posted { index, sges })
}

/// [`peek`], with the scatter list appended to `sges` (which stays where it is: moving
/// lists around by value cost more than filling them). Returns the WQE's index.
pub(crate) fn peek_into(m: &mut Model, dma: &DmaSpace, t: Target, sges: &mut Sges) -> Option<u16> {
    let r = ring(m, t)?;
    match read_posted(dma, &r, sges) {
        Peeked::Posted(index) => Some(index),
        Peeked::Empty => None,
        Peeked::Fault => {
            m.dma_faults += 1;
            None
        }
    }
}

/// [`peek_into`] for RQ object `rqn`, already looked up as `rq` (the Ethernet receive path),
/// leaving the fault to count to the caller. The receive counter is read once per lock while
/// it shows WQEs posted (see [`Memo`]).
pub(crate) fn peek_rq(
    rq: &Rq,
    rqn: u32,
    dma: &DmaSpace,
    memo: &mut Memo,
    sges: &mut Sges,
) -> Peeked {
    let r = ring_of(rq);
    let remembered = memo
        .rq_counter
        .filter(|&(n, _)| n == rqn)
        .and_then(|(_, pc)| pending(&r, pc))
        .filter(|&n| n > 0);
    let n = match remembered {
        Some(n) => n,
        None => {
            let Some(pc) = receive_counter(dma, &r) else {
                return Peeked::Fault;
            };
            memo.rq_counter = Some((rqn, pc));
            match pending(&r, pc) {
                Some(n) => n,
                None => return Peeked::Fault,
            }
        }
    };
    read_wqe(dma, &r, n, sges)
}

/// The next posted WQE of ring `r`: its scatter entries, each read in place from the ring, up
/// to an entry with the invalid lkey or the end of the stride.
fn read_posted(dma: &DmaSpace, r: &Ring<'_>, sges: &mut Sges) -> Peeked {
    let Some(n) = outstanding(dma, r) else {
        return Peeked::Fault;
    };
    read_wqe(dma, r, n, sges)
}

/// [`read_posted`] once the `n` WQEs outstanding are known.
fn read_wqe(dma: &DmaSpace, r: &Ring<'_>, n: u16, sges: &mut Sges) -> Peeked {
    if n == 0 {
        return Peeked::Empty;
    }
    let size = 1u64 << r.log_size.min(16);
    let stride = 1u64 << r.log_stride.min(16);
    // The size is a power of two: a mask instead of a division.
    let base = (u64::from(r.ci) & (size - 1)) * stride;
    for k in 0..stride / 16 {
        let seg = r
            .ring
            .addr(base + k * 16, 16)
            .and_then(|a| dma.window(a, 16));
        let Some(seg) = seg else {
            return Peeked::Fault;
        };
        let lkey = seg.read_be32(4);
        if u64::from(lkey) == INVALID_LKEY {
            break;
        }
        let s = sges.push_slot();
        s.len = seg.read_be32(0) & 0x7fff_ffff;
        s.lkey = lkey;
        s.addr = seg.read_be64(8);
    }
    Peeked::Posted(r.ci)
}

/// Consumes the next receive WQE.
pub(crate) fn consume(m: &mut Model, t: Target) {
    match t {
        Target::Qp(qpn) => {
            if let Ok(qp) = m.qps.get_mut(qpn) {
                qp.rq_ci = qp.rq_ci.wrapping_add(1);
            }
        }
        Target::Rq(rqn) => {
            if let Ok(rq) = m.rqs.get_mut(rqn) {
                rq.ci = rq.ci.wrapping_add(1);
            }
        }
    }
}

/// The receive CQ of the queue.
pub(crate) fn cqn(m: &Model, t: Target) -> Option<u32> {
    ring(m, t).map(|r| r.cqn)
}

/// The CQ the queue's receives complete to and the timestamp format of its CQEs.
pub(crate) fn completes_to(m: &Model, t: Target) -> Option<(u32, Stamp)> {
    ring(m, t).map(|r| (r.cqn, r.stamp))
}

/// Why a scatter failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScatterError {
    /// The data is longer than the scatter list.
    TooLong,
    /// A key refused the write, or the memory is not mapped.
    Protection,
}

/// Extents for the first `len` bytes of a scatter list, each entry checked for local write.
pub(crate) fn extents(
    m: &Model,
    who: Accessor,
    sges: &[Sge],
    len: u64,
) -> Result<Extents, ScatterError> {
    let mut out = Extents::new();
    extents_into(m, who, sges, len, &mut out)?;
    Ok(out)
}

/// The entries the first `len` bytes of a message fill, each with the bytes it takes (an
/// empty entry takes none); a list too short for them is an error.
fn covered(sges: &[Sge], len: u64) -> Result<impl Iterator<Item = (&Sge, u64)>, ScatterError> {
    let capacity: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
    if len > capacity {
        return Err(ScatterError::TooLong);
    }
    Ok(sges.iter().scan(len, |left, s| {
        if *left == 0 {
            return None;
        }
        let n = (*left).min(u64::from(s.len));
        *left -= n;
        Some((s, n))
    }))
}

/// [`extents`], appended to `out`.
fn extents_into(
    m: &Model,
    who: Accessor,
    sges: &[Sge],
    len: u64,
    out: &mut Extents,
) -> Result<(), ScatterError> {
    for (s, n) in covered(sges, len)? {
        mem::resolve_into(
            &m.mkeys,
            s.lkey,
            who,
            s.addr,
            n,
            mem::Access::LocalWrite,
            out,
        )
        .map_err(|_: KeyError| ScatterError::Protection)?;
    }
    Ok(())
}

/// Writes `data` through a scatter list.
pub(crate) fn scatter(
    m: &mut Model,
    dma: &DmaSpace,
    who: Accessor,
    sges: &[Sge],
    data: &[u8],
) -> Result<(), ScatterError> {
    let mut e = Extents::new();
    extents_into(m, who, sges, data.len() as u64, &mut e)?;
    if mem::write(dma, &e, data) {
        Ok(())
    } else {
        m.dma_faults += 1;
        Err(ScatterError::Protection)
    }
}

/// Checks that the first `len` bytes of a message fit the scatter list `sges` and that each
/// entry they use grants the local write, without listing the extents (see [`mem::check`]):
/// the in-memory transport then places the message a step at a time ([`place`]).
pub(crate) fn check(m: &Model, who: Accessor, sges: &[Sge], len: u64) -> Result<(), ScatterError> {
    for (s, n) in covered(sges, len)? {
        mem::check(m, s.lkey, who, s.addr, n, mem::Access::LocalWrite)
            .map_err(|_: KeyError| ScatterError::Protection)?;
    }
    Ok(())
}

/// Completes every posted receive WQE of `t` with a flush error (the queue is in error).
pub(crate) fn flush(side: &mut Side<'_>, t: Target) {
    let Some(r) = ring(side.m, t) else {
        return;
    };
    let Some(n) = outstanding(side.dma, &r) else {
        return;
    };
    let (cqn, ci) = (r.cqn, r.ci);
    let qn = match t {
        Target::Qp(n) | Target::Rq(n) => n,
    };
    for k in 0..n {
        let index = ci.wrapping_add(k);
        let e = cq::err_cqe(CqeOpcode::RespErr, CqeSyndrome::WrFlushErr, qn, index, 0);
        cq::post_err(side, cqn, e);
        consume(side.m, t);
    }
}

/// Consumes the next WQE with an error CQE (the receive failed) on the queue's CQ.
pub(crate) fn fail(side: &mut Side<'_>, t: Target, index: u16, syndrome: CqeSyndrome) {
    let Some(cqn) = cqn(side.m, t) else {
        return;
    };
    let qn = match t {
        Target::Qp(n) | Target::Rq(n) => n,
    };
    consume(side.m, t);
    let e = cq::err_cqe(CqeOpcode::RespErr, syndrome, qn, index, 0);
    cq::post_err(side, cqn, e);
}

/// Moves RQ object `rqn` to ERR and flushes what is posted.
pub(crate) fn rq_error(side: &mut Side<'_>, rqn: u32) {
    if let Ok(rq) = side.m.rqs.get_mut(rqn) {
        rq.ctx.set_state(RqState::Err);
        side.m.pending.rqs.insert(rqn);
    }
    flush(side, Target::Rq(rqn));
}

/// Writes `data`, bytes `at ..` of a message, into the scatter list `sges`, as its packets
/// come (a read response at its offset, a SEND packet after the ones before, a step of an
/// in-memory message). The error is the completion syndrome: a key that does not grant the
/// write or memory not mapped, or a list too short for the data; either way nothing of
/// `data` is written, as every entry it needs is checked first.
pub(crate) fn place(
    side: &mut Side<'_>,
    who: Accessor,
    sges: &[Sge],
    at: u64,
    data: &[u8],
) -> Result<(), CqeSyndrome> {
    let mut skip = at;
    let mut left = data.len() as u64;
    let mut e = Extents::new();
    for s in sges {
        if left == 0 {
            break;
        }
        let len = u64::from(s.len);
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = (len - skip).min(left);
        mem::resolve_into(
            &side.m.mkeys,
            s.lkey,
            who,
            s.addr.wrapping_add(skip),
            n,
            mem::Access::LocalWrite,
            &mut e,
        )
        .map_err(|_| CqeSyndrome::LocalProtErr)?;
        left -= n;
        skip = 0;
    }
    if left > 0 {
        return Err(CqeSyndrome::LocalLengthErr);
    }
    if mem::write(side.dma, &e, data) {
        Ok(())
    } else {
        side.m.dma_faults += 1;
        Err(CqeSyndrome::LocalProtErr)
    }
}
