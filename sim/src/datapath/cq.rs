//! Completion queues on the data path: writing CQEs into the ring with the pass-parity owner
//! bit, following the consumer index of the CQ doorbell record, detecting overflow, arming by
//! the UAR doorbell, and completion events with loose moderation.
//!
//! The device writes CQE number p (counting from 0 since the CQ was created) into slot
//! p mod 2^log_cq_size with owner = (p >> log_cq_size) & 1, so the first pass writes owner 0:
//! a ring the driver initialised with owner 1 (mlx5e's 0xf1) or with opcode invalid
//! (mlx5_ib's 0xf0) never shows a stale entry as new. The body goes first, then, after a
//! release fence, the last dword in one aligned 4-byte store, which carries the last byte
//! (opcode and owner): a driver that sees the new owner sees the whole entry. The driver polls
//! that dword with 4-byte loads, and the store has the same width: in the threaded mode the
//! two are threads of one process, and accesses of different widths racing would be a data
//! race (`mlx5_prm::rt::shared`).

use super::cqe::CqeWords;
use super::Side;
use crate::clock::Stamp;
use crate::dma::DmaSpace;
use crate::events;
use crate::model::Model;
use mlx5_prm::rt::{Bytes as _, BytesMut as _};
use mlx5_prm::{CqError, CqErrorSyndrome, Cqe64, CqeOpcode, CqeSyndrome, ErrCqe, EventType};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

/// Counters of the CQ doorbell record and the arm doorbell are 24 bits wide.
const MASK24: u32 = 0xff_ffff;
/// cqc.status after an overflow (MLX5_CQC_STATUS_CQ_OVERFLOW).
pub(crate) const STATUS_OVERFLOW: u8 = 0x9;
/// cqc.status after the device failed to write the ring or read the doorbell record.
pub(crate) const STATUS_WRITE_FAIL: u8 = 0xa;
/// Arm command of the CQ doorbell that waits for a solicited (or error) completion.
const ARM_SOLICITED: u32 = 1;

/// A CQE for `opcode` of queue `qpn`, WQE index `wqe_counter`; the caller fills in the rest.
pub(crate) fn cqe(opcode: CqeOpcode, qpn: u32, wqe_counter: u16) -> Cqe64 {
    let mut c = Cqe64::zeroed();
    c.set_opcode(opcode);
    c.set_qpn(qpn & MASK24);
    c.set_wqe_counter(wqe_counter);
    c
}

/// An error CQE (req_err or resp_err).
pub(crate) fn err_cqe(
    opcode: CqeOpcode,
    syndrome: CqeSyndrome,
    qpn: u32,
    wqe_counter: u16,
    s_wqe_opcode: u8,
) -> [u8; 64] {
    let mut c = ErrCqe::zeroed();
    c.set_opcode(opcode);
    c.set_syndrome(syndrome);
    c.set_qpn(qpn & MASK24);
    c.set_wqe_counter(wqe_counter);
    c.set_s_wqe_opcode(s_wqe_opcode);
    *c.storage()
}

/// Reads the consumer index of a CQ doorbell record.
///
/// An acquire fence follows: the slots it hands back are overwritten after it, and the
/// driver's reads of them (before its release fence and the index) must come first
/// (tests/tests/loom_cq.rs, `weak_device_reuses_slot_without_acquire`).
fn consumer_index(dma: &DmaSpace, dbr: u64) -> Option<u32> {
    let ci = dma.window(dbr, 4).map(|w| w.read_be32(0) & MASK24);
    fence(Ordering::Acquire);
    ci
}

/// Puts CQ `cqn` in error: the status QUERY_CQ shows, no more CQEs, and a cq_error event for
/// an EQ subscribed to it.
fn cq_error(m: &mut Model, dma: &DmaSpace, cqn: u32, status: u8, syndrome: CqErrorSyndrome) {
    if let Ok(cq) = m.cqs.get_mut(cqn) {
        cq.ctx.set_status(status);
    }
    m.stats.cqes_dropped += 1;
    let mut data = [0u8; 28];
    let mut ev = CqError::new_unchecked(&mut data[..]);
    ev.set_cqn(cqn & MASK24);
    ev.set_syndrome(syndrome);
    events::post(m, dma, EventType::CqError.raw(), 0, &data);
}

/// Writes `cqe` into CQ `cqn` (setting its owner bit) and raises the completion event the CQ's
/// arming and moderation call for. Returns false when nothing was written: no such CQ, the CQ
/// is in error, the ring is full (overflow, unless the CQ ignores overruns), or its memory is
/// gone. A successful completion gets the device clock in its timestamp, in the format of the
/// queue that completes (`stamp`: free-running ticks, or the UTC clock's seconds and
/// nanoseconds; chosen when the queue was created from its ts_format); an error CQE (which
/// should go through [`post_err`]) has its syndrome where the timestamp's low word would be,
/// and no timestamp.
pub(crate) fn post(side: &mut Side<'_>, cqn: u32, stamp: Stamp, cqe: [u8; 64]) -> bool {
    let mut words = CqeWords::from_bytes(&cqe);
    if !is_error(&words) {
        words.set(Cqe64::TIMESTAMP, side.stamp(stamp));
    }
    write(side, cqn, words)
}

/// Writes an error CQE (req_err or resp_err, see [`err_cqe`]) into CQ `cqn`: as [`post`],
/// with no timestamp, so in any queue's format.
pub(crate) fn post_err(side: &mut Side<'_>, cqn: u32, cqe: [u8; 64]) -> bool {
    let words = CqeWords::from_bytes(&cqe);
    debug_assert!(is_error(&words), "successful CQEs go through post");
    write(side, cqn, words)
}

/// [`post`] for a successful completion built as words (see [`CqeWords`]), the hot paths'
/// way: each word goes out in one 8-byte store, the last (owner bit included) after a release
/// fence.
pub(crate) fn post_words(side: &mut Side<'_>, cqn: u32, stamp: Stamp, mut cqe: CqeWords) -> bool {
    debug_assert!(!is_error(&cqe), "error CQEs go through post_err");
    cqe.set(Cqe64::TIMESTAMP, side.stamp(stamp));
    write(side, cqn, cqe)
}

/// Writes a finished CQE (see [`post`]).
fn write(side: &mut Side<'_>, cqn: u32, cqe: CqeWords) -> bool {
    let (m, dma) = (&mut *side.m, side.dma);
    let Ok(cq) = m.cqs.get_mut(cqn) else {
        m.stats.cqes_dropped += 1;
        return false;
    };
    if cq.ctx.status() != 0 {
        m.stats.cqes_dropped += 1;
        return false;
    }
    let log = cq.ctx.log_cq_size().min(24);
    let size = 1u32 << log;
    // The consumer index read earlier in this lock while it shows room (see `Memo`).
    let remembered = side
        .memo
        .cq_consumer
        .filter(|&(n, ci)| n == cqn && cq.producer.wrapping_sub(ci) & MASK24 < size);
    let ci = match remembered {
        Some((_, ci)) => ci,
        None => {
            let Some(ci) = consumer_index(dma, cq.ctx.dbr_addr()) else {
                m.dma_faults += 1;
                cq_error(
                    m,
                    dma,
                    cqn,
                    STATUS_WRITE_FAIL,
                    CqErrorSyndrome::CqAccessViolationError,
                );
                return false;
            };
            side.memo.cq_consumer = Some((cqn, ci));
            ci
        }
    };
    let full = cq.producer.wrapping_sub(ci) & MASK24 >= size;
    if !cq.ctx.oi() && (full || side.faults.is_some_and(|f| f.take_cq_overrun(cqn))) {
        cq_error(m, dma, cqn, STATUS_OVERFLOW, CqErrorSyndrome::CqOverrun);
        return false;
    }
    let entry: u64 = if cq.ctx.cqe_sz_raw() == 1 { 128 } else { 64 };
    let offset = u64::from(cq.producer & (size - 1)) * entry + (entry - 64);
    let window = cq
        .ring
        .addr(offset, 64)
        .and_then(|addr| dma.window(addr, 64));
    let Some(mut window) = window else {
        m.dma_faults += 1;
        cq_error(
            m,
            dma,
            cqn,
            STATUS_WRITE_FAIL,
            CqErrorSyndrome::CqAccessViolationError,
        );
        return false;
    };
    let owner = u64::from((cq.producer >> log) & 1);
    let CqeWords(words) = cqe;
    let last = (words[7] & !1) | owner;
    // CQ rings are page aligned and entries 64 or 128 bytes, so the words are aligned; word
    // by word otherwise.
    if !crate::dma::store_words(&mut window, &words[..7]) {
        for (k, &w) in words[..7].iter().enumerate() {
            window.write_be64(8 * k, w);
        }
    }
    window.write_be32(56, (last >> 32) as u32);
    fence(Ordering::Release);
    window.write_be32(60, last as u32);
    let byte63 = last as u8;
    let solicited = byte63 & 0x2 != 0
        || matches!(byte63 >> 4, o if o == CqeOpcode::ReqErr.raw() || o == CqeOpcode::RespErr.raw());
    let index = cq.producer;
    cq.producer = cq.producer.wrapping_add(1);
    if solicited {
        cq.last_solicited = Some(index);
    }
    if !cq.armed || (cq.arm_solicited && !solicited) {
        return true;
    }
    cq.unreported += 1;
    let max = u32::from(cq.ctx.cq_max_count());
    if max == 0 || cq.unreported >= max {
        fire(m, dma, cqn);
    } else if cq.ctx.cq_period() > 0 && cq.unreported_since.is_none() {
        cq.unreported_since = Some(Instant::now());
        m.pending.cqs.insert(cqn);
    }
    true
}

/// True for req_err and resp_err CQEs (laid out as err_cqe).
fn is_error(cqe: &CqeWords) -> bool {
    let opcode = cqe.get(Cqe64::OPCODE);
    opcode == CqeOpcode::ReqErr.raw().into() || opcode == CqeOpcode::RespErr.raw().into()
}

/// Writes the completion event of CQ `cqn` (which disarms it).
fn fire(m: &mut Model, dma: &DmaSpace, cqn: u32) {
    if let Ok(cq) = m.cqs.get_mut(cqn) {
        cq.unreported = 0;
        cq.unreported_since = None;
    }
    events::completion(m, dma, cqn);
}

/// The CQ arm doorbell (UAR + 0x20): high dword sn << 28 | cmd << 24 | ci, low dword the CQN.
/// Arms the CQ if it belongs to UAR page `uar`; fires at once when completions the driver has
/// not consumed (past ci) are already there, as the arm would otherwise miss them.
pub(crate) fn arm(m: &mut Model, dma: &DmaSpace, uar: u32, value: u64) {
    let cqn = (value as u32) & MASK24;
    let high = (value >> 32) as u32;
    let (cmd, ci) = ((high >> 24) & 0x7, high & MASK24);
    let Ok(cq) = m.cqs.get_mut(cqn) else {
        return;
    };
    if cq.uar != uar {
        return;
    }
    cq.armed = true;
    cq.arm_solicited = cmd == ARM_SOLICITED;
    cq.unreported = 0;
    cq.unreported_since = None;
    let size = 1u32 << cq.ctx.log_cq_size().min(24);
    let waiting = cq.producer.wrapping_sub(ci) & MASK24;
    if waiting == 0 || waiting > size {
        return;
    }
    let due = !cq.arm_solicited
        || cq
            .last_solicited
            .is_some_and(|s| s.wrapping_sub(ci) & MASK24 < waiting);
    if due {
        fire(m, dma, cqn);
    }
}

/// Moderation timers: armed CQs whose oldest unreported completion is cq_period microseconds
/// old fire now. Only the CQs listed as pending are looked at; those without a timer running
/// leave the list.
pub(crate) fn timers(m: &mut Model, dma: &DmaSpace, now: Instant) {
    if m.pending.cqs.is_empty() {
        return;
    }
    let listed: Vec<u32> = m.pending.cqs.iter().copied().collect();
    for cqn in listed {
        let due = match m.cqs.get(cqn) {
            Ok(cq) if cq.armed => cq.unreported_since.map(|t| {
                now.duration_since(t) >= Duration::from_micros(u64::from(cq.ctx.cq_period()))
            }),
            _ => None,
        };
        match due {
            Some(true) => {
                fire(m, dma, cqn);
                m.pending.cqs.remove(&cqn);
            }
            Some(false) => {}
            None => {
                m.pending.cqs.remove(&cqn);
            }
        }
    }
}
