//! Completions handed back to their QP: the work requests they finish and the buffers those
//! return, checked against what the QP has outstanding.
//!
//! Sends wait in the slot table (`Work::sends`, one slot per WQEBB, indexed as the WQEs are),
//! so a send completion names its slot by its WQE counter: the requests it finishes are the
//! slots from the consumer counter up to that one, walked in place. [`Qp::complete_with`]
//! hands each to a closure, allocating nothing; [`Qp::complete`] collects them into a `Vec`.
//! Receives complete in the order they were posted, each naming its WQE.
//!
//! A completion is taken only from the CQ the QP reports that kind of work to, and only if
//! that CQ wrote it since the QP last started afresh (created or reset): one of an earlier
//! life names WQEs the device numbered differently. (A [`Completion`] cannot be copied or made
//! outside the crate, so each is handed over at most once.)

use super::{Done, Inner, PostedSend, Qp};
use crate::backend::Backend;
use crate::cq::Completion;
use crate::error::{Error, Result};
use mlx5_prm::CqeOpcode;

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Hands a completion of this QP to it: returns the finished work requests (a signaled
    /// send also finishes the unsignaled ones posted before it) with their buffers. Values the
    /// device wrote are checked: a completion for a WQE the QP does not have outstanding (or,
    /// for a receive, for another WQE than the next) is an error, not a guess; so is one from
    /// a CQ the QP does not report that work to, or from before its last reset. (Built on
    /// [`Qp::complete_with`], which allocates nothing.)
    pub fn complete(&mut self, c: Completion) -> Result<Vec<Done<'h, B>>> {
        let mut done = Vec::with_capacity(self.finishes(&c));
        self.complete_with(c, |d| done.push(d))?;
        Ok(done)
    }

    /// How many requests `c` would finish if it checks out (one allocation for
    /// [`Qp::complete`]'s `Vec`; the checks are [`Qp::complete_with`]'s).
    fn finishes(&self, c: &Completion) -> usize {
        let work = &self.inner.work;
        if is_send(c) {
            let n = u32::from(c.wqe_counter.wrapping_sub(work.sq_ci as u16)) + 1;
            n.min(work.sq_pi.wrapping_sub(work.sq_ci)) as usize
        } else {
            1
        }
    }

    /// As [`Qp::complete`], each finished request handed to `f` in the order it was posted
    /// instead of collected: no allocation, and each region moves once, from its slot to
    /// `f`. Returns how many requests finished. Only the last carries the completion.
    ///
    /// The checks come first: on error `f` is not called and nothing changes. The requests
    /// leave the QP before `f` sees the first, so a panic in `f` returns no region twice
    /// (those not yet handed out are dropped with the QP, or when their slots are reused).
    #[inline]
    pub fn complete_with<F>(&mut self, c: Completion, mut f: F) -> Result<usize>
    where
        F: FnMut(Done<'h, B>),
    {
        let qpn = self.inner.qpn;
        if c.qpn != qpn {
            return Err(foreign(c.qpn, qpn));
        }
        let send = is_send(&c);
        self.inner.check_source(&c, send)?;
        let work = &mut self.inner.work;
        if send {
            // The requests from the consumer counter up to the WQE named: at least one, and no
            // more than are outstanding (the queue holds at most 2^15, so the 16-bit counter
            // names each of them once).
            let ci = work.sq_ci;
            let n = u32::from(c.wqe_counter.wrapping_sub(ci as u16)) + 1;
            if n > work.sq_pi.wrapping_sub(ci) {
                return Err(not_outstanding(c.wqe_counter));
            }
            // They leave the QP first: were `f` to panic, the slots not yet walked keep their
            // regions until the slots are reused (dropped then), never handed out twice.
            work.sq_ci = ci.wrapping_add(n);
            // The slots are one run of the table, or two when they wrap: walked as slices,
            // so no slot is masked or bounds-checked on its own.
            let sends = &mut *work.sends;
            let first = ci as usize & (sends.len() - 1);
            let (n, size) = (n as usize, sends.len());
            let (head, wrapped) = if first + n <= size {
                (&mut sends[first..first + n], &mut [][..])
            } else {
                let (low, high) = sends.split_at_mut(first);
                (high, &mut low[..first + n - size])
            };
            // The last slot carries the completion; the others go out without one.
            let (head, wrapped, last) = match wrapped.split_last_mut() {
                Some((last, rest)) => (head, rest, last),
                None => match head.split_last_mut() {
                    Some((last, rest)) => (rest, wrapped, last),
                    // `n` is at least one, so `head` is not empty.
                    None => return Ok(0),
                },
            };
            let mut give = |slot: &mut PostedSend<'h, B>, completion| {
                f(Done {
                    id: slot.id,
                    region: slot.region.take(),
                    completion,
                })
            };
            for slot in head {
                give(slot, None);
            }
            for slot in wrapped {
                give(slot, None);
            }
            give(last, Some(c));
            Ok(n)
        } else {
            // Receives complete in the order they were posted: the head's WQE index is the
            // producer counter less those posted after it. Checked in place, so that a refused
            // completion leaves the receive posted.
            let head = work.rq_pi.wrapping_sub(work.recvs.len() as u32) as u16;
            let Some(p) = work.recvs.front() else {
                return Err(Error::BadDeviceValue {
                    command: "cqe",
                    what: "receive completion with no receive outstanding".into(),
                });
            };
            if c.wqe_counter != head {
                return Err(not_next(c.wqe_counter, head));
            }
            if c.status.is_ok() && c.byte_cnt as usize > p.region.len() {
                return Err(too_long(c.byte_cnt, p.region.len()));
            }
            // `front` found it.
            let Some(p) = work.recvs.pop_front() else {
                return Ok(0);
            };
            f(Done {
                id: p.id,
                region: Some(p.region),
                completion: Some(c),
            });
            Ok(1)
        }
    }
}

impl<B: Backend> Inner<'_, B> {
    /// Whether `c` is of the CQ this QP reports its sends (`send`) or receives to, written
    /// since the QP last started afresh ([`Shared::produced`](crate::cq::Shared::produced)
    /// then).
    #[inline(always)]
    fn check_source(&self, c: &Completion, send: bool) -> Result<()> {
        let (cq, fence) = if send {
            (&self.send_cq, self.work.send_fence)
        } else {
            (&self.recv_cq, self.work.recv_fence)
        };
        if c.source.cq != cq.id() {
            return Err(Error::ForeignResource {
                what: "completion",
                owner: "CQ",
            });
        }
        if c.source.seq < fence {
            return Err(stale(self.qpn));
        }
        Ok(())
    }
}

/// Whether `c` completes sends (the requester's opcodes); any other completes a receive.
#[inline(always)]
fn is_send(c: &Completion) -> bool {
    c.opcode == CqeOpcode::Req.raw() || c.opcode == CqeOpcode::ReqErr.raw()
}

/// A completion of QP `got` handed to QP `qpn`. (Out of line: the formatting stays off the
/// path of the usual completion.)
#[cold]
#[inline(never)]
fn foreign(got: u32, qpn: u32) -> Error {
    Error::InvalidArgument {
        what: "complete",
        why: format!("completion for QP 0x{got:x} handed to QP 0x{qpn:x}"),
    }
}

/// A completion of QP `qpn`'s life before its last reset (or of an earlier QP of its number).
#[cold]
#[inline(never)]
fn stale(qpn: u32) -> Error {
    Error::InvalidArgument {
        what: "complete",
        why: format!("completion written before QP 0x{qpn:x} was last reset or created"),
    }
}

/// A receive completion for WQE `wqe_counter` when the next receive is WQE `head`.
#[cold]
#[inline(never)]
fn not_next(wqe_counter: u16, head: u16) -> Error {
    Error::BadDeviceValue {
        command: "cqe",
        what: format!("receive completion for WQE {wqe_counter}, the next receive is WQE {head}"),
    }
}

/// A receive completion of `byte_cnt` bytes into a `len`-byte buffer.
#[cold]
#[inline(never)]
fn too_long(byte_cnt: u32, len: usize) -> Error {
    Error::BadDeviceValue {
        command: "cqe",
        what: format!("received {byte_cnt} bytes into a {len}-byte buffer"),
    }
}

/// A send completion for a WQE that is not outstanding.
#[cold]
#[inline(never)]
fn not_outstanding(wqe_counter: u16) -> Error {
    Error::BadDeviceValue {
        command: "cqe",
        what: format!("send completion for WQE {wqe_counter} which is not outstanding"),
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests;
