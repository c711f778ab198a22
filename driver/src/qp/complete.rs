//! Completions handed back to their QP: the work requests they finish and the buffers those
//! return, checked against what the QP has outstanding.
//!
//! Sends wait in the slot table (`Work::sends`, one slot per WQEBB, indexed as the WQEs are),
//! so a send completion names its slot by its WQE counter: the requests it finishes are the
//! slots from the consumer counter up to that one, walked in place. [`Qp::complete_with`]
//! hands each to a closure, allocating nothing; [`Qp::complete`] collects them into a `Vec`.

use super::{Done, PostedSend, Qp};
use crate::backend::Backend;
use crate::cq::Completion;
use crate::error::{Error, Result};
use mlx5_prm::CqeOpcode;

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Hands a completion of this QP to it: returns the finished work requests (a signaled
    /// send also finishes the unsignaled ones posted before it) with their buffers. Values the
    /// device wrote are checked: a completion for a WQE the QP does not have outstanding is an
    /// error, not a guess. (Built on [`Qp::complete_with`], which allocates nothing.)
    pub fn complete(&mut self, c: Completion) -> Result<Vec<Done<'h, B>>> {
        let mut done = Vec::with_capacity(self.finishes(&c));
        self.complete_with(c, |d| done.push(d))?;
        Ok(done)
    }

    /// How many requests `c` would finish if it checks out (one allocation for
    /// [`Qp::complete`]'s `Vec`; the checks are [`Qp::complete_with`]'s).
    fn finishes(&self, c: &Completion) -> usize {
        let work = &self.inner.work;
        if c.opcode == CqeOpcode::Req.raw() || c.opcode == CqeOpcode::ReqErr.raw() {
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
        let work = &mut self.inner.work;
        if c.opcode == CqeOpcode::Req.raw() || c.opcode == CqeOpcode::ReqErr.raw() {
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
            // Receives complete in the order they were posted.
            let Some(p) = work.recvs.pop_front() else {
                return Err(Error::BadDeviceValue {
                    command: "cqe",
                    what: "receive completion with no receive outstanding".into(),
                });
            };
            if c.status.is_ok() && c.byte_cnt as usize > p.region.len() {
                return Err(Error::BadDeviceValue {
                    command: "cqe",
                    what: format!(
                        "received {} bytes into a {}-byte buffer",
                        c.byte_cnt,
                        p.region.len()
                    ),
                });
            }
            f(Done {
                id: p.id,
                region: Some(p.region),
                completion: Some(c),
            });
            Ok(1)
        }
    }
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
