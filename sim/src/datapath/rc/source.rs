//! Where the bytes of a SEND or RDMA WRITE come from: the WQE's gather list, kept instead of
//! a copy of the message. Both transports read the bytes from host memory a piece at a time
//! (RoCE as it builds each packet, the first time and again on a resend; a QP on this device
//! or across the in-memory wire in steps of [`STEP`](super::STEP)), as a device does: the
//! model holds at most one piece of a message at a time, however long the message (up to
//! `log_max_msg`, 1 GiB), where a copy of the whole message per WQE let a guest make it hold
//! gigabytes.

use crate::datapath::mem::{self, Access, Accessor};
use crate::datapath::rc::{self, Fault};
use crate::datapath::sendq::{self, Piece};
use crate::datapath::Side;
use crate::model::Model;
use crate::stackvec::StackVec;
use mlx5_prm::CqeSyndrome;

/// One piece of the message, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seg {
    /// Inline data: `len` bytes of [`Source::inline`] from `at`.
    Inline { at: usize, len: usize },
    /// A data segment: `len` bytes at `addr` through `lkey`.
    Data { lkey: u32, addr: u64, len: u32 },
}

/// An empty inline piece: the filler of unused slots in a [`StackVec`].
impl Default for Seg {
    fn default() -> Seg {
        Seg::Inline { at: 0, len: 0 }
    }
}

impl Seg {
    fn len(&self) -> u64 {
        match *self {
            Seg::Inline { len, .. } => len as u64,
            Seg::Data { len, .. } => u64::from(len),
        }
    }
}

/// The gather list of one WQE (at most a WQE's worth: 63 segments, 1 KiB of inline data;
/// usually one data segment, kept inline).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Source {
    inline: Vec<u8>,
    segs: StackVec<Seg, 2>,
}

impl Source {
    /// The gather list of `wqe[start..end]` and the message's length: an overrun segment or
    /// a message over `max_msg` fails here. The keys are checked as each packet's bytes are
    /// read ([`Source::read`]), as a device checks them as it reads: a bad key fails the WQE
    /// at its first packet that uses it.
    pub fn plan(
        req: &rc::Requester,
        wqe: &[u8],
        start: usize,
        end: usize,
    ) -> Result<(Source, u64), Fault> {
        let mut s = Source::default();
        let mut total = 0u64;
        // One walk of the WQE, each piece stored as it comes.
        for p in sendq::gather(wqe, start, end) {
            let p = p.map_err(|_| Fault::Local(CqeSyndrome::LocalQpOpErr))?;
            total += p.len();
            match p {
                Piece::Inline { start, end } => {
                    *s.segs.push_slot() = Seg::Inline {
                        at: s.inline.len(),
                        len: end - start,
                    };
                    s.inline.extend_from_slice(&wqe[start..end]);
                }
                Piece::Data { len, lkey, addr } => {
                    *s.segs.push_slot() = Seg::Data { lkey, addr, len };
                }
            }
        }
        if total > req.max_msg {
            return Err(Fault::Local(CqeSyndrome::LocalLengthErr));
        }
        Ok((s, total))
    }

    /// Checks every data segment's key for the local read of its whole range, without
    /// reading: the in-memory transport fails a WQE with a bad key before the responder
    /// sees it, as the whole message is at hand at once.
    pub fn check(&self, m: &Model, who: Accessor) -> Result<(), Fault> {
        for seg in &self.segs {
            if let Seg::Data { lkey, addr, len } = *seg {
                mem::check(m, lkey, who, addr, len.into(), Access::LocalRead)
                    .map_err(|_| Fault::Local(CqeSyndrome::LocalProtErr))?;
            }
        }
        Ok(())
    }

    /// Appends the message's bytes `lo .. hi` to `out`. False when a key no longer grants
    /// the read (deregistered since the WQE was read) or the memory is not mapped (counted
    /// as a DMA fault): the WQE then fails with a local protection error.
    pub fn read(
        &self,
        side: &mut Side<'_>,
        who: Accessor,
        lo: u64,
        hi: u64,
        out: &mut Vec<u8>,
    ) -> bool {
        let mut at = 0u64;
        for seg in &self.segs {
            let n = seg.len();
            let (from, to) = (lo.max(at), hi.min(at + n));
            if from < to {
                let (skip, take) = (from - at, to - from);
                match *seg {
                    Seg::Inline { at: i, .. } => {
                        let i = i + skip as usize;
                        match self.inline.get(i..i + take as usize) {
                            Some(b) => out.extend_from_slice(b),
                            None => return false,
                        }
                    }
                    Seg::Data { lkey, addr, .. } => {
                        let Ok(e) = mem::resolve(
                            side.m,
                            lkey,
                            who,
                            addr.wrapping_add(skip),
                            take,
                            Access::LocalRead,
                        ) else {
                            return false;
                        };
                        if !mem::read(side.dma, &e, out) {
                            side.m.dma_faults += 1;
                            return false;
                        }
                    }
                }
            }
            at += n;
            if at >= hi {
                break;
            }
        }
        true
    }
}
