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
//!
//! [`Steered`], kept by the model rather than per lock, is how the last frame received was
//! steered: a frame whose headers (the bytes the parser reads) are the same as the last one's
//! is parsed and steered alike, and goes to the same RQs with the same RSS hash, as long as no
//! command ran since (flow tables, TIRs and RQTs change only by commands; the model counts
//! them). The hash reads nothing past those bytes ([`rss`](super::rss)), so two frames that
//! differ in an address, a port or an SPI never share a memo: each is hashed on its own.
//! Back-to-back frames of one flow skip parsing, the flow-table walk and the hash.

use super::parse::PARSE_DEPTH;
use super::rss::Delivery;
use crate::stackvec::StackVec;
use mlx5_prm::{CqeL3HdrType, CqeL4HdrType};

/// The RQs a frame goes to (usually one).
pub(crate) type Deliveries = StackVec<Delivery, 4>;

/// The values remembered.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Memo {
    /// (RQ number, its receive counter).
    pub rq_counter: Option<(u32, u16)>,
    /// (CQ number, its consumer index).
    pub cq_consumer: Option<(u32, u32)>,
}

/// How a frame was parsed and steered from a root table.
#[derive(Debug, Clone)]
pub(crate) struct Steered {
    /// The frame's first `len` bytes: all it has up to [`PARSE_DEPTH`].
    header: [u8; PARSE_DEPTH],
    len: usize,
    pub l3: CqeL3HdrType,
    pub l4: CqeL4HdrType,
    /// The RQs it goes to, through the TIRs steering found, with their hashes.
    pub to: Deliveries,
    /// No RQ, because a flow table matched nothing and had nowhere to miss to.
    pub missed: bool,
}

impl Steered {
    /// The steering of `frame` (from the root table): its header types and deliveries.
    pub fn new(
        frame: &[u8],
        (l3, l4): (CqeL3HdrType, CqeL4HdrType),
        to: Deliveries,
        missed: bool,
    ) -> Steered {
        let len = frame.len().min(PARSE_DEPTH);
        let mut header = [0u8; PARSE_DEPTH];
        header[..len].copy_from_slice(&frame[..len]);
        Steered {
            header,
            len,
            l3,
            l4,
            to,
            missed,
        }
    }

    /// True when `frame` parses and steers as this one did: the same bytes up to
    /// [`PARSE_DEPTH`] (so the same length when shorter). Only while no command ran since
    /// (the caller compares the model's generation): then the root table, the flow tables,
    /// TIRs and RQTs are the ones this one was steered through.
    pub fn same_frame(&self, frame: &[u8]) -> bool {
        frame.len().min(PARSE_DEPTH) == self.len && frame[..self.len] == self.header[..self.len]
    }
}
