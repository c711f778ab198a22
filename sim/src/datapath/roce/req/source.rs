//! Where the bytes of a SEND or RDMA WRITE come from: the WQE's gather list, kept instead of
//! the message. Each packet's bytes are read from host memory when the packet is built, the
//! first time and again on a resend, as a device does; the model holds at most one packet of
//! a message at a time, however long the message (up to `log_max_msg`, 1 GiB), where a copy
//! of the whole message per WQE let a guest make it hold gigabytes.

use crate::datapath::mem::{self, Access, Accessor};
use crate::datapath::rc::{self, Fault};
use crate::datapath::sendq::{self, Piece};
use crate::datapath::Side;
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
pub(super) struct Source {
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
        let pieces =
            sendq::gather_list(wqe, start, end).ok_or(Fault::Local(CqeSyndrome::LocalQpOpErr))?;
        let total: u64 = pieces.iter().map(Piece::len).sum();
        if total > req.max_msg {
            return Err(Fault::Local(CqeSyndrome::LocalLengthErr));
        }
        let mut s = Source::default();
        for p in pieces {
            match p {
                Piece::Inline { start, end } => {
                    s.segs.push(Seg::Inline {
                        at: s.inline.len(),
                        len: end - start,
                    });
                    s.inline.extend_from_slice(&wqe[start..end]);
                }
                Piece::Data { len, lkey, addr } => s.segs.push(Seg::Data { lkey, addr, len }),
            }
        }
        Ok((s, total))
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
