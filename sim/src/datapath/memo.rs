//! Doorbell-record values read while the model stays locked (one [`Side`](super::Side)), so
//! that a batch of frames arriving at one RQ, and of CQEs going to one CQ, reads each record
//! once instead of once per frame.
//!
//! A remembered value is only trusted in the direction where the record could only have
//! moved the same way since it was read, the driver only ever advancing its counters: a
//! receive counter that still shows WQEs posted beyond the RQ's consumer, a CQ consumer index
//! far enough behind the producer that the CQ cannot have overflowed. Otherwise (no WQE left,
//! an overflow to confirm) the record is read again, so every decision the device makes on an
//! empty RQ or a full CQ is made on a fresh read, exactly as without the memo. A new lock of
//! the model starts with nothing remembered.

/// The values remembered.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Memo {
    /// (RQ number, its receive counter).
    pub rq_counter: Option<(u32, u16)>,
    /// (CQ number, its consumer index).
    pub cq_consumer: Option<(u32, u32)>,
}
