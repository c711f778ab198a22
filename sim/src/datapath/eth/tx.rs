//! Transmit: SQ objects run their SEND WQEs (an Ethernet segment with inline headers, then
//! gathered data) and put the frames on the port.

use super::super::cqe::CqeWords;
use super::super::csum;
use super::super::mem::{self, Access, Accessor, Extents};
use super::super::sendq::{self, Piece, Wqe, DS};
use super::super::{cq, Side};
use crate::dma::DmaSpace;
use crate::exec::mkey::Mkey;
use crate::table::Table;
use mlx5_prm::{Cqe64, CqeOpcode, CqeSyndrome, SendOpcode, SqState};

/// Largest frame an SQ sends (there is no LSO in the model).
const MAX_FRAME: usize = 64 * 1024;
/// Byte offset of inline_hdr_sz inside the Ethernet segment, and of its first two bytes.
const INLINE_HDR_SZ: usize = 12;
const INLINE_HDR_START: usize = 14;
/// Byte offset of cs_flags inside the Ethernet segment, and its outer checksum bits.
const CS_FLAGS: usize = 4;
const L4_CSUM: u8 = 0x80;
const L3_CSUM: u8 = 0x40;
/// Bytes of the inline header that fit in the Ethernet segment itself.
const INLINE_IN_ESEG: usize = 2;

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
    let (cqn, flush_cqes) = (sq.cqn, sq.ctx.flush_in_error_en());
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
                cq::post(side, cqn, e);
            }
        } else {
            execute(side, sqn, cqn, who, wqe, ci);
        }
        let n = sendq::wqebbs(wqe);
        if let Ok(sq) = side.m.sqs.get_mut(sqn) {
            sq.ci = ci.wrapping_add(n);
        }
        done += u32::from(n);
    }
}

/// Executes one WQE of SQ `sqn` (in RDY; its CQ and its accessor passed in): NOP, or SEND
/// with an Ethernet segment.
fn execute(side: &mut Side<'_>, sqn: u32, cqn: u32, who: Accessor, wqe: &[u8], index: u16) {
    let opcode = sendq::opcode(wqe);
    let ce = (wqe[11] >> 2) & 0x3;
    let end = sendq::ds(wqe) * DS;
    let result = match SendOpcode::from_raw(opcode.into()) {
        _ if end < DS => Err(CqeSyndrome::LocalQpOpErr),
        Some(SendOpcode::Nop) => Ok(()),
        Some(SendOpcode::Send) => {
            let (m, dma) = (&mut *side.m, side.dma);
            let mkeys = &m.mkeys;
            let built = m.outbox.push_with(|f| frame(mkeys, dma, who, wqe, end, f));
            match built {
                Ok(()) => {
                    m.stats.tx_frames += 1;
                    if let Some(sent) = m.outbox.last() {
                        m.vport_counters.sent(sent);
                        if m.port.oper_up() {
                            m.port.counters.sent(sent);
                        }
                    }
                    if !m.port.oper_up() {
                        m.outbox.pop();
                    }
                    Ok(())
                }
                Err(FrameError::Unmapped) => {
                    m.dma_faults += 1;
                    Err(CqeSyndrome::LocalProtErr)
                }
                Err(FrameError::Wqe(syndrome)) => Err(syndrome),
            }
        }
        _ => Err(CqeSyndrome::LocalQpOpErr),
    };
    match result {
        Ok(()) if ce >= 2 => {
            let mut c = CqeWords::new(CqeOpcode::Req, sqn, index);
            c.set(Cqe64::S_WQE_OPCODE, opcode.into());
            cq::post_words(side, cqn, c);
        }
        Ok(()) => {}
        Err(syndrome) => {
            let e = cq::err_cqe(CqeOpcode::ReqErr, syndrome, sqn, index, opcode);
            cq::post(side, cqn, e);
            if let Ok(sq) = side.m.sqs.get_mut(sqn) {
                sq.ctx.set_state(SqState::Err);
                side.m.pending.sqs.insert(sqn);
            }
        }
    }
}

/// Why a frame could not be built.
enum FrameError {
    /// The WQE is bad: its error CQE's syndrome.
    Wqe(CqeSyndrome),
    /// Gathered memory is not mapped (a local protection error, and a DMA fault).
    Unmapped,
}

/// Builds the frame of a SEND WQE at the end of `f`: the inline headers of the Ethernet
/// segment (inline_hdr_sz bytes: two in the segment, the rest in the following 16-byte
/// units), then the gather list.
fn frame(
    mkeys: &Table<Mkey>,
    dma: &DmaSpace,
    who: Accessor,
    wqe: &[u8],
    end: usize,
    f: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let eseg = DS;
    if end < eseg + DS {
        return Err(FrameError::Wqe(CqeSyndrome::LocalQpOpErr));
    }
    let start = f.len();
    let cs_flags = wqe[eseg + CS_FLAGS];
    let hdr = usize::from(u16::from_be_bytes([
        wqe[eseg + INLINE_HDR_SZ],
        wqe[eseg + INLINE_HDR_SZ + 1],
    ]));
    let first = hdr.min(INLINE_IN_ESEG);
    let rest = hdr - first;
    let after = eseg + DS;
    if rest > end.saturating_sub(after) {
        return Err(FrameError::Wqe(CqeSyndrome::LocalQpOpErr));
    }
    let data = after + rest.div_ceil(DS) * DS;
    let mut total = hdr as u64;
    for p in sendq::gather(wqe, data, end) {
        total += p
            .map_err(|_| FrameError::Wqe(CqeSyndrome::LocalQpOpErr))?
            .len();
    }
    if total > MAX_FRAME as u64 {
        return Err(FrameError::Wqe(CqeSyndrome::LocalLengthErr));
    }
    f.extend_from_slice(&wqe[eseg + INLINE_HDR_START..eseg + INLINE_HDR_START + first]);
    f.extend_from_slice(&wqe[after..after + rest]);
    for p in sendq::gather(wqe, data, end).flatten() {
        match p {
            Piece::Inline { start, end } => f.extend_from_slice(&wqe[start..end]),
            Piece::Data { len, lkey, addr } => {
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
    if cs_flags & (L3_CSUM | L4_CSUM) != 0 {
        csum::tx(
            &mut f[start..],
            cs_flags & L3_CSUM != 0,
            cs_flags & L4_CSUM != 0,
        );
    }
    Ok(())
}
