//! A batch of send requests written straight into the send queue, as rdma-core's
//! `ibv_wr_*` calls write them: no request value is built and read back, each call stores its
//! WQE and moves its region into the slot table, and the batch rings one doorbell when it
//! ends (dropped, or [`SendBatch::ring`]).
//!
//! Each typed call ([`SendBatch::write`], [`SendBatch::read`], ...) is the general path of
//! [`Qp::post_send`] with the operation known where it is called, so after inlining the
//! compiler keeps only that operation's stores and checks: the same checks (the region's
//! HCA, room in the queue, lengths), the same WQE words, nothing skipped.

use super::post::{AcceptsSends, Refused, RemoteAddr, Request, SendOp, SendRequest, Sq};
use super::wqe::{ctrl_ds, UNIT};
use super::Qp;
use crate::backend::Backend;
use crate::doorbell::{SEND_COUNTER_DWORD, WQEBB};
use crate::error::Error;
use crate::mr::Region;
use mlx5_prm::rt::Bytes;

/// Send requests being posted to one QP; the doorbell rings once, for all of them, when the
/// batch ends. Made by [`Qp::batch`].
///
/// Each call checks its request as [`Qp::post_send`] does and, if it is refused, gives the
/// region back with the error and writes nothing; the requests posted before it stay posted.
/// Dropping the batch (or [`SendBatch::ring`]) hands what it wrote to the device. A batch that
/// is leaked (`mem::forget`) leaves its requests written but not rung; the next doorbell of
/// the QP covers them, and until then they wait in the QP like any other posted request.
#[must_use = "a batch rings its doorbell when it is dropped: keep it while posting"]
pub struct SendBatch<'q, 'h, B: Backend> {
    sq: Sq<'q, 'h, B>,
    /// The producer counter when the batch began: the batch's requests are those from here
    /// to the counter (nothing else advances it while the batch borrows the QP), so each
    /// call stores nothing of its own beyond the QP's slot and counter.
    start: u32,
}

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Starts a batch of send requests (see [`SendBatch`]): the fastest way to post, one
    /// doorbell per batch. Only in RTS (the bound is on the method, as for
    /// [`Qp::post_send`]).
    ///
    /// ```
    /// use mlx5_driver::backend::Backend;
    /// use mlx5_driver::mr::Region;
    /// use mlx5_driver::qp::{Qp, RemoteAddr, Rts};
    ///
    /// /// WRITEs each region to `remote` with one doorbell; only the last asks for a
    /// /// completion, which covers the others.
    /// fn write_all<'h, B: Backend>(
    ///     qp: &mut Qp<'h, B, Rts>,
    ///     regions: Vec<Region<'h, B>>,
    ///     remote: RemoteAddr,
    /// ) -> mlx5_driver::Result<usize> {
    ///     let n = regions.len();
    ///     let mut batch = qp.batch();
    ///     for (k, region) in regions.into_iter().enumerate() {
    ///         batch.write(k as u64, region, remote, k + 1 == n).map_err(|(e, _)| e)?;
    ///     }
    ///     Ok(batch.ring())
    /// }
    /// ```
    pub fn batch(&mut self) -> SendBatch<'_, 'h, B>
    where
        S: AcceptsSends,
    {
        let start = self.inner.work.sq_pi;
        SendBatch {
            sq: self.inner.sq(),
            start,
        }
    }
}

impl<'h, B: Backend> SendBatch<'_, 'h, B> {
    /// RDMA WRITE of the whole of `region` to `remote`; a completion with `id` if `signaled`
    /// (unsignaled requests complete with the next signaled one).
    #[inline]
    pub fn write(
        &mut self,
        id: u64,
        region: Region<'h, B>,
        remote: RemoteAddr,
        signaled: bool,
    ) -> Result<(), (Error, Region<'h, B>)> {
        self.region_op(id, SendOp::Write(remote), region, signaled)
    }

    /// RDMA READ of `region.len()` bytes at `remote` into `region`.
    #[inline]
    pub fn read(
        &mut self,
        id: u64,
        region: Region<'h, B>,
        remote: RemoteAddr,
        signaled: bool,
    ) -> Result<(), (Error, Region<'h, B>)> {
        self.region_op(id, SendOp::Read(remote), region, signaled)
    }

    /// SEND of the whole of `region` to the peer's next receive.
    #[inline]
    pub fn send(
        &mut self,
        id: u64,
        region: Region<'h, B>,
        signaled: bool,
    ) -> Result<(), (Error, Region<'h, B>)> {
        self.region_op(id, SendOp::Send, region, signaled)
    }

    /// Atomic fetch-and-add of `add` to the 8 bytes at `remote`; the old value lands in
    /// `region`.
    #[inline]
    pub fn fetch_add(
        &mut self,
        id: u64,
        region: Region<'h, B>,
        remote: RemoteAddr,
        add: u64,
        signaled: bool,
    ) -> Result<(), (Error, Region<'h, B>)> {
        self.region_op(id, SendOp::FetchAdd { remote, add }, region, signaled)
    }

    /// Atomic compare-and-swap of the 8 bytes at `remote` (`swap` if they equal `compare`);
    /// the old value lands in `region`.
    #[inline]
    pub fn compare_swap(
        &mut self,
        id: u64,
        region: Region<'h, B>,
        remote: RemoteAddr,
        compare: u64,
        swap: u64,
        signaled: bool,
    ) -> Result<(), (Error, Region<'h, B>)> {
        let op = SendOp::CompareSwap {
            remote,
            compare,
            swap,
        };
        self.region_op(id, op, region, signaled)
    }

    /// Any request, as [`Qp::post_send`] takes it: immediates, inline data, part of a
    /// region. On refusal the error comes back with the request's region.
    #[inline]
    pub fn post(&mut self, req: SendRequest<'h, B>) -> Result<(), Refused<'h, B>> {
        match self.sq.write(&req) {
            Ok(_) => {
                self.sq.push(req.id, req.region);
                Ok(())
            }
            Err(e) => Err((e, req.region)),
        }
    }

    /// Requests posted so far in this batch.
    pub fn len(&self) -> usize {
        self.sq.work.sq_pi.wrapping_sub(self.start) as usize
    }

    /// True if nothing was posted yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests the send queue still has room for.
    pub fn room(&self) -> usize {
        let work = &*self.sq.work;
        work.sends.len() - work.sq_pi.wrapping_sub(work.sq_ci) as usize
    }

    /// Ends the batch: rings the doorbell for what it posted (as dropping it does). Returns
    /// how many requests that was.
    pub fn ring(self) -> usize {
        self.len()
    }

    /// A request whose local side is the whole of `region`, its operation fixed by the
    /// caller (so that, inlined, only that operation's code remains).
    #[inline(always)]
    fn region_op(
        &mut self,
        id: u64,
        op: SendOp,
        region: Region<'h, B>,
        signaled: bool,
    ) -> Result<(), (Error, Region<'h, B>)> {
        let req = Whole {
            op,
            region: &region,
            signaled,
        };
        match self.sq.write(&req) {
            Ok(_) => {
                self.sq.push(id, Some(region));
                Ok(())
            }
            Err(e) => Err((e, region)),
        }
    }
}

/// A request whose local side is the whole of a region held apart from it.
struct Whole<'r, 'h, B: Backend> {
    op: SendOp,
    region: &'r Region<'h, B>,
    signaled: bool,
}

impl<'h, B: Backend> Request<'h, B> for Whole<'_, 'h, B> {
    #[inline(always)]
    fn op(&self) -> SendOp {
        self.op
    }
    #[inline(always)]
    fn region(&self) -> Option<&Region<'h, B>> {
        Some(self.region)
    }
    #[inline(always)]
    fn len(&self) -> Option<usize> {
        None
    }
    #[inline(always)]
    fn inline(&self) -> Option<&[u8]> {
        None
    }
    #[inline(always)]
    fn signaled(&self) -> bool {
        self.signaled
    }
}

impl<B: Backend> Drop for SendBatch<'_, '_, B> {
    /// Rings the doorbell for the requests of the batch (nothing if there were none): the
    /// doorbell record, then the doorbell with the last WQE's first 8 bytes (read back from
    /// the ring, where the batch wrote them), or a BlueFlame copy of a lone one-block WQE as
    /// [`Qp::post_sends`] rings. The copy is made only if that WQE is the next one the
    /// device will fetch, that is, if the doorbell record still stands where the batch began
    /// (a batch leaked before this one leaves requests the record does not cover yet).
    fn drop(&mut self) {
        let n = self.len();
        if n == 0 {
            return;
        }
        let work = &*self.sq.work;
        let last = work.sq_pi.wrapping_sub(1);
        let first8 = work.wqes.slot(last).read_be64(0);
        let copy = n == 1
            && work.blueflame
            && ctrl_ds(first8) * UNIT <= WQEBB
            && work.record.read32::<SEND_COUNTER_DWORD>(0) as u16 == self.start as u16;
        self.sq.ring(first8, copy);
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests;
