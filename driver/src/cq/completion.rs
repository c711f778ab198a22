//! What a CQ hands over: a decoded CQE ([`Completion`]), its error ([`CqeError`]), and where
//! it came from ([`Source`]), so that its work goes back once, to a queue of that CQ.

use crate::ring::Ring;
use mlx5_prm::{Cqe64, CqeOpcode, CqeSyndrome, ErrCqe};

/// Why a work request failed, as the error CQE says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqeError {
    /// The PRM syndrome.
    pub syndrome: u8,
    /// The vendor syndrome.
    pub vendor_syndrome: u8,
}

impl CqeError {
    /// The syndrome's name as the spec writes it, or "unknown".
    pub fn name(&self) -> &'static str {
        CqeSyndrome::from_raw(u64::from(self.syndrome)).map_or("unknown", |s| s.spec_name())
    }
}

impl std::fmt::Display for CqeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (syndrome 0x{:02x}, vendor 0x{:02x})",
            self.name(),
            self.syndrome,
            self.vendor_syndrome
        )
    }
}

/// One completion, decoded.
///
/// Only a CQ makes one (it has a private field), and it is neither `Copy` nor `Clone`: a
/// completion hands its work back once, to a QP that reports to the CQ that made it (see
/// [`Qp::complete`](crate::qp::Qp::complete)), so no buffer comes back twice or while the
/// device still holds it.
#[derive(Debug, PartialEq, Eq)]
pub struct Completion {
    /// CQE opcode (`CqeOpcode` raw value).
    pub opcode: u8,
    /// The local QP (or SQ/RQ) number.
    pub qpn: u32,
    /// Index of the completed WQE (WQEBB counter for sends).
    pub wqe_counter: u16,
    /// Bytes received (responder) or read (RDMA READ requester).
    pub byte_cnt: u32,
    /// Immediate data, for completions that carry it.
    pub immediate: u32,
    /// `Err` for an error CQE.
    pub status: std::result::Result<(), CqeError>,
    /// Which CQ wrote it, and where.
    pub(crate) source: Source,
}

/// Where a completion came from: the CQ's identity and the CQE's place in it, so that a QP
/// takes only completions of its own CQs, written since it last started afresh.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Source {
    /// The CQ's [`Shared::id`](super::Shared::id).
    pub(crate) cq: u64,
    /// CQEs the CQ handed over before this one, since it was created.
    pub(crate) seq: u64,
}

/// Decodes the CQE at `consumer`, which the caller found handed over (see [`Cursor::ready`]);
/// it came from `source`.
pub(super) fn decode_at(ring: &Ring<{ super::CQE }>, consumer: u32, source: Source) -> Completion {
    let cqe = Cqe64::new_unchecked(ring.slot(consumer));
    let opcode = cqe.opcode_raw();
    let status = if opcode == CqeOpcode::ReqErr.raw() || opcode == CqeOpcode::RespErr.raw() {
        let e = ErrCqe::new_unchecked(ring.slot(consumer));
        Err(CqeError {
            syndrome: e.syndrome_raw(),
            vendor_syndrome: e.vendor_err_synd(),
        })
    } else {
        Ok(())
    };
    Completion {
        opcode,
        qpn: cqe.qpn(),
        wqe_counter: cqe.wqe_counter(),
        byte_cnt: cqe.byte_cnt(),
        immediate: cqe.immediate(),
        status,
        source,
    }
}
