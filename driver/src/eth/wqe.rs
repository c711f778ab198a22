//! Where the data path reads and writes in WQEs and CQEs: byte offsets and bit positions from
//! the generated layouts' field constants, checked at compile time, and the hot loops' run
//! arithmetic.

use crate::ring::{dword_of, shift_of};
use mlx5_prm::{Cqe64, CqeOpcode, QpDoorbellRecord, SendOpcode, WqeCtrlSeg, WqeDataSeg};

/// Bytes per receive WQE slot (one data segment).
pub(crate) const RQ_STRIDE: usize = 16;
/// Bytes of L2 header copied into the WQE with [`EthConfig::inline_l2`].
pub(crate) const INLINE_L2: usize = 18;
/// Where the hot path writes: the control segment's first dword (opmod, wqe_index, opcode),
/// the data segment (after control and Ethernet segments, plus one unit of inline header with
/// [`EthConfig::inline_l2`]), and its length and address.
pub(crate) const CTRL_DW0: usize = dword_of(WqeCtrlSeg::WQE_INDEX);
pub(crate) const WQE_INDEX_SHIFT: u32 = shift_of(WqeCtrlSeg::WQE_INDEX);
pub(crate) const SEND: u32 = (SendOpcode::Send.raw() as u32) << shift_of(WqeCtrlSeg::OPCODE);
const _: () =
    assert!(dword_of(WqeCtrlSeg::OPCODE) == CTRL_DW0 && dword_of(WqeCtrlSeg::OPMOD) == CTRL_DW0);
pub(crate) const DATA_PLAIN: usize = 32;
pub(crate) const DATA_INLINE: usize = 48;
pub(crate) const DATA_LEN: usize = dword_of(WqeDataSeg::BYTE_COUNT);
pub(crate) const DATA_ADDR: usize = dword_of(WqeDataSeg::ADDR);
/// The control segment's first dword for WQE `pi`.
pub(crate) const fn ctrl_dw0(pi: u32) -> u32 {
    ((pi & 0xffff) << WQE_INDEX_SHIFT) | SEND
}
/// One more in the WQE index of a control segment's first dword in the device's byte order,
/// as long as the index's low byte does not wrap (see [`run_left`]).
pub(crate) const CTRL_INDEX_ONE: u32 = (1u32 << WQE_INDEX_SHIFT).to_be();
/// One more in the wqe_counter of a CQE's last dword in the device's byte order, likewise.
pub(crate) const CQE_COUNTER_ONE: u32 = (1u32 << shift_of(Cqe64::WQE_COUNTER)).to_be();
const _: () = assert!(WqeCtrlSeg::WQE_INDEX.width == 16 && Cqe64::WQE_COUNTER.width == 16);

/// The hot loops go over runs of consecutive slots, which end where the ring wraps and where
/// the index's low byte does: up to there, the big-endian 16-bit counters (WQE index, CQE
/// wqe_counter) they keep in a dword in the device's byte order go up by one with a plain add.
/// So a run ends at the next multiple of `run_mask + 1`, the ring's size but at most 256.
pub(crate) fn run_mask(ring_mask: u32) -> u32 {
    ring_mask.min(0xff)
}

/// Slots from `index` to the end of its run (see [`run_mask`]).
#[inline(always)]
pub(crate) fn run_left(run_mask: u32, index: u32) -> usize {
    (run_mask - (index & run_mask)) as usize + 1
}
const _: () = assert!(dword_of(WqeCtrlSeg::QPN) == 4 && dword_of(WqeCtrlSeg::DS) == 4);
/// The RQ doorbell record's receive counter, alone in its dword (but for reserved bits).
pub(crate) const RECEIVE_COUNTER_DWORD: usize = dword_of(QpDoorbellRecord::RECEIVE_COUNTER);
const _: () = assert!(
    QpDoorbellRecord::RECEIVE_COUNTER.width == 16
        && shift_of(QpDoorbellRecord::RECEIVE_COUNTER) == 0
);
/// The CQE dwords the hot path reads.
pub(crate) const CQE_WQE_COUNTER: usize = dword_of(Cqe64::WQE_COUNTER);
pub(crate) const CQE_BYTE_CNT: usize = dword_of(Cqe64::BYTE_CNT);
pub(crate) const RESP_SEND: u32 = CqeOpcode::RespSend.raw() as u32;
pub(crate) const REQ: u32 = CqeOpcode::Req.raw() as u32;
/// The bits of the CQE's last dword that hold wqe_counter and opcode, and a receive
/// completion's opcode in place.
pub(crate) const COUNTER_AND_OPCODE: u32 =
    (0xffff << shift_of(Cqe64::WQE_COUNTER)) | (0xf << shift_of(Cqe64::OPCODE));
pub(crate) const RESP_SEND_BITS: u32 = RESP_SEND << shift_of(Cqe64::OPCODE);
pub(crate) const REQ_BITS: u32 = REQ << shift_of(Cqe64::OPCODE);
/// The bits a receive CQE's last dword is compared on: counter, opcode and owner.
pub(crate) const COUNTER_OPCODE_OWNER: u32 = COUNTER_AND_OPCODE | (1 << shift_of(Cqe64::OWNER));
const _: () = assert!(dword_of(Cqe64::OPCODE) == CQE_WQE_COUNTER);
