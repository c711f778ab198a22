//! Work requests: what a send or receive asks for, and posting them (WQE, doorbell record,
//! doorbell, in the PRM's order with a to-device barrier before each hand-over).
//!
//! A send is checked whole before anything is written, then its WQE goes into its slot of the
//! send queue's ring (set up with the QP) as whole big-endian words (`qp/wqe.rs`), so a
//! slot's stale bytes never need zeroing first; its region waits in the same slot of the
//! QP's slot table until its completion. [`Qp::post_sends`] writes a batch and rings once,
//! with the doorbell word computed, not read back from the WQE.

use super::wqe::{Local, Remote, SendWqe, Slot, UNIT};
use super::{Inner, PostedRecv, Qp, Work};
use crate::backend::{Backend, Barriers};
use crate::doorbell::WQEBB;
use crate::error::Error;
use crate::hca::Hca;
use crate::mr::Region;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{QpDoorbellRecord, RecvWqe, SendOpcode, WqeDataSeg};

use mlx5_prm::qp_machine::{Init, Machine, Rtr, Rts};
use mlx5_prm::rt::typestate::State;

/// A remote buffer: its address and key at the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr {
    /// The peer's IO address.
    pub addr: u64,
    /// The peer's remote key.
    pub rkey: u32,
}

impl RemoteAddr {
    /// The whole of `region` as a peer names it: its IO address and remote key (what a peer
    /// is told so that it can write, read or update the region).
    pub fn of<B: Backend>(region: &Region<'_, B>) -> RemoteAddr {
        RemoteAddr {
            addr: region.addr(),
            rkey: region.rkey(),
        }
    }
}

/// What a send work request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    /// SEND the local region to the peer's next receive.
    Send,
    /// SEND with immediate data.
    SendImm(u32),
    /// RDMA WRITE the local region to the peer.
    Write(RemoteAddr),
    /// RDMA WRITE with immediate data (consumes a receive at the peer).
    WriteImm(RemoteAddr, u32),
    /// RDMA READ from the peer into the local region.
    Read(RemoteAddr),
    /// Atomic compare-and-swap of 8 bytes at the peer; the old value lands in the local region.
    CompareSwap {
        /// The peer's 8 bytes.
        remote: RemoteAddr,
        /// Expected value.
        compare: u64,
        /// New value.
        swap: u64,
    },
    /// Atomic fetch-and-add of 8 bytes at the peer; the old value lands in the local region.
    FetchAdd {
        /// The peer's 8 bytes.
        remote: RemoteAddr,
        /// Value to add.
        add: u64,
    },
}

impl SendOp {
    /// The operation's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            SendOp::Send => "send",
            SendOp::SendImm(_) => "send with immediate",
            SendOp::Write(_) => "rdma write",
            SendOp::WriteImm(..) => "rdma write with immediate",
            SendOp::Read(_) => "rdma read",
            SendOp::CompareSwap { .. } => "compare and swap",
            SendOp::FetchAdd { .. } => "fetch and add",
        }
    }
}

/// A send work request.
#[derive(Debug)]
pub struct SendRequest<'h, B: Backend> {
    /// The caller's identifier, returned with the completion.
    pub id: u64,
    /// The operation.
    pub op: SendOp,
    /// The local buffer: the data to send or write, or where read data or the old atomic value
    /// lands. Ownership passes to the QP until the completion.
    pub region: Option<Region<'h, B>>,
    /// Bytes of `region` to use (from its start); `None` for all of it.
    pub len: Option<usize>,
    /// Ask for a completion (unsignaled requests complete silently, with the next signaled one).
    pub signaled: bool,
    /// Carry these bytes in the WQE itself instead of pointing at `region` (SEND and WRITE
    /// only; at most [`MAX_INLINE`] bytes, or [`MAX_INLINE_RDMA`] for WRITE).
    pub inline: Option<Vec<u8>>,
}

/// Most inline bytes a SEND carries in one WQEBB (64 − control 16 − inline header 4).
pub const MAX_INLINE: usize = 44;
/// Most inline bytes an RDMA WRITE carries in one WQEBB (the remote address takes 16 more).
pub const MAX_INLINE_RDMA: usize = 28;

/// The generated QP states in which receives may be posted: INIT, RTR and RTS (a QP in RST
/// has no receive queue yet; one in ERR flushes). Sealed: implemented here for the spec's
/// state types only.
#[diagnostic::on_unimplemented(
    message = "a QP in state `{Self}` takes no receives",
    label = "receives are posted in INIT, RTR or RTS",
    note = "move the QP on with the generated transitions (`rst2init`, ...) first"
)]
pub trait AcceptsReceives: State<Machine = Machine> + sealed::Sealed {}
impl AcceptsReceives for Init {}
impl AcceptsReceives for Rtr {}
impl AcceptsReceives for Rts {}

/// The generated QP state in which sends may be posted: RTS. Sealed, as [`AcceptsReceives`].
#[diagnostic::on_unimplemented(
    message = "a QP in state `{Self}` takes no sends",
    label = "sends are posted in RTS",
    note = "move the QP on with the generated transitions (`rtr2rts`, ...) first"
)]
pub trait AcceptsSends: State<Machine = Machine> + sealed::Sealed {}
impl AcceptsSends for Rts {}

mod sealed {
    /// Only the driver says which states take work requests.
    pub trait Sealed {}
    impl Sealed for super::Init {}
    impl Sealed for super::Rtr {}
    impl Sealed for super::Rts {}
}

/// A posting refused: the error, and the region back.
pub type Refused<'h, B> = (Error, Option<Region<'h, B>>);

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Posts a receive into `region` (ownership passes to the QP until its completion). A
    /// region of another HCA, or a full receive queue, is refused and the region handed back.
    /// Only in the states that take receives (the bound is on the method, so that calling it
    /// on another state says which states do).
    pub fn post_recv(
        &mut self,
        id: u64,
        region: Region<'h, B>,
    ) -> std::result::Result<(), (Error, Region<'h, B>)>
    where
        S: AcceptsReceives,
    {
        if !std::ptr::eq(region.hca(), self.hca()) {
            let e = Error::ForeignResource {
                what: "region",
                owner: "HCA",
            };
            return Err((e, region));
        }
        let inner = &mut *self.inner;
        let entries = 1usize << inner.config.log_rq_size;
        if inner.work.recvs.len() >= entries {
            let e = Error::QueueFull {
                queue: "receive queue",
                capacity: entries,
            };
            return Err((e, region));
        }
        let stride = 16usize << inner.config.log_rq_stride;
        let at = (inner.work.rq_pi as usize & (entries - 1)) * stride;
        let buf = inner.object.memory(0);
        let mut wqe = RecvWqe::new_unchecked(buf.slice(at, stride));
        wqe.storage_mut().write_bytes(0, &vec![0u8; stride]);
        let mut seg = WqeDataSeg::new_unchecked(buf.slice(at, 16));
        seg.set_byte_count(region.len() as u32);
        seg.set_lkey(region.lkey());
        seg.set_addr(region.addr());
        if stride > 16 {
            // The scatter list ends at a segment with the invalid key.
            let mut end = WqeDataSeg::new_unchecked(buf.slice(at + 16, 16));
            end.set_lkey(mlx5_prm::INVALID_LKEY as u32);
        }
        inner.work.rq_pi = inner.work.rq_pi.wrapping_add(1);
        inner.work.recvs.push_back(PostedRecv { id, region });
        // The WQE must be visible before the counter that hands it over.
        B::Barriers::to_device();
        QpDoorbellRecord::new_unchecked(inner.object.memory(1).slice(0, 8))
            .set_receive_counter(inner.work.rq_pi as u16);
        Ok(())
    }
}

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// Posts a send work request: writes the WQE, then the doorbell record, then rings the
    /// doorbell with the WQE's first 8 bytes (the PRM's order, with a to-device barrier before
    /// each hand-over). On error nothing reaches the device and the region comes back: a full
    /// send queue, inline data too long (or for an operation that carries none), a length
    /// beyond the region, or a region of another HCA. Only in RTS (the bound is on the
    /// method, as for [`Qp::post_recv`]).
    pub fn post_send(&mut self, req: SendRequest<'h, B>) -> std::result::Result<(), Refused<'h, B>>
    where
        S: AcceptsSends,
    {
        let mut sq = self.inner.sq();
        // The request is read in place and only its region moved (a move of the whole
        // request into a helper costs a copy of it).
        let (first8, ds) = match sq.write(&req) {
            Ok(w) => w,
            Err(e) => return Err((e, req.region)),
        };
        sq.push(req.id, req.region);
        // A BlueFlame copy carries one basic block whole.
        let copy = sq.work.blueflame && usize::from(ds) * UNIT <= WQEBB;
        sq.ring(first8, copy);
        Ok(())
    }

    /// Posts the send work requests of `reqs` in order and rings the doorbell once, for the
    /// last of them: one doorbell-record write, two barriers and one UAR write per batch
    /// instead of per request (the device reads the WQEs up to the new producer counter from
    /// memory; a batch of one is posted as [`Qp::post_send`] posts it, BlueFlame copy
    /// included). Returns how many were posted.
    ///
    /// Each request is checked as [`Qp::post_send`] checks it. At the first one refused the
    /// batch stops: the ones before it are posted and rung, and the error comes back with
    /// their count and the refused request's region; nothing of that request reaches the
    /// device, and the iterator is not advanced past it (pass `&mut iter` to keep the rest).
    /// A full send queue is such a refusal, so a batch longer than the room left posts what
    /// fits, then reports [`Error::QueueFull`].
    pub fn post_sends<I>(&mut self, reqs: I) -> std::result::Result<usize, (usize, Refused<'h, B>)>
    where
        I: IntoIterator<Item = SendRequest<'h, B>>,
        S: AcceptsSends,
    {
        let mut sq = self.inner.sq();
        let (mut posted, mut last, mut refused) = (0, None, None);
        for req in reqs {
            match sq.write(&req) {
                Ok(wqe) => {
                    sq.push(req.id, req.region);
                    posted += 1;
                    last = Some(wqe);
                }
                Err(e) => {
                    refused = Some((e, req.region));
                    break;
                }
            }
        }
        if let Some((first8, ds)) = last {
            let copy = posted == 1 && sq.work.blueflame && usize::from(ds) * UNIT <= WQEBB;
            sq.ring(first8, copy);
        }
        match refused {
            None => Ok(posted),
            Some(r) => Err((posted, r)),
        }
    }
}

impl<'h, B: Backend, S> Qp<'h, B, S> {
    /// As [`Qp::post_sends`], taking the requests from the front of `reqs`: each is read where
    /// it lies and only its region moves into the QP (an iterator hands each request over
    /// whole, a copy of the request per post). The posted requests leave `reqs`; one that is
    /// refused stays at its front, region and all, and the error comes back with the count
    /// posted before it (which were rung). One doorbell for the batch.
    pub fn post_batch(
        &mut self,
        reqs: &mut Vec<SendRequest<'h, B>>,
    ) -> std::result::Result<usize, (usize, Error)>
    where
        S: AcceptsSends,
    {
        let mut sq = self.inner.sq();
        let (mut posted, mut last, mut refused) = (0, None, None);
        for req in reqs.iter_mut() {
            match sq.write(req) {
                Ok(wqe) => {
                    sq.push(req.id, req.region.take());
                    // What else it owns goes now, so that the request is left owning nothing.
                    drop(req.inline.take());
                    posted += 1;
                    last = Some(wqe);
                }
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        if let Some((first8, ds)) = last {
            let copy = posted == 1 && sq.work.blueflame && usize::from(ds) * UNIT <= WQEBB;
            sq.ring(first8, copy);
        }
        let len = reqs.len();
        // SAFETY: the first `posted` requests own nothing any more (their region and inline
        // data were taken above, and `owns_only_region_and_inline` keeps those the only
        // fields that own anything), so they leave `reqs` without being dropped, and the rest
        // (if a refusal stopped the batch) move to the front: as `Vec::drain` would do, minus
        // a drop call per request that would find nothing to drop. `posted <= len` (each was
        // one of `reqs`), so both ranges of the copy are inside the vector's elements.
        unsafe {
            let base = reqs.as_mut_ptr();
            std::ptr::copy(base.add(posted), base, len - posted);
            reqs.set_len(len - posted);
        }
        match refused {
            None => Ok(posted),
            Some(e) => Err((posted, e)),
        }
    }
}

/// Fails to build if [`SendRequest`] gains a field: [`Qp::post_batch`] forgets a posted
/// request once its region and inline data are taken, which is right only while those are the
/// fields that own anything (the others are plain values, checked below).
#[allow(dead_code)]
fn owns_only_region_and_inline<B: Backend>(r: SendRequest<'_, B>) {
    let SendRequest {
        id: _,
        op: _,
        region: _,
        len: _,
        signaled: _,
        inline: _,
    } = r;
}
const _: () = assert!(
    !std::mem::needs_drop::<u64>()
        && !std::mem::needs_drop::<SendOp>()
        && !std::mem::needs_drop::<Option<usize>>()
        && !std::mem::needs_drop::<bool>()
);

/// The send queue of a QP, its parts borrowed apart: the HCA (to check regions against) and
/// the QP number beside the work state that posting changes.
/// What [`Sq::write`] reads of a request: a [`SendRequest`], or the parts of one that a
/// [`super::SendBatch`] call holds apart (so that it keeps the region to give back on
/// refusal). Each is read where it lies, when the writer needs it.
pub(super) trait Request<'h, B: Backend> {
    fn op(&self) -> SendOp;
    fn region(&self) -> Option<&Region<'h, B>>;
    fn len(&self) -> Option<usize>;
    fn inline(&self) -> Option<&[u8]>;
    fn signaled(&self) -> bool;
}

impl<'h, B: Backend> Request<'h, B> for SendRequest<'h, B> {
    #[inline(always)]
    fn op(&self) -> SendOp {
        self.op
    }
    #[inline(always)]
    fn region(&self) -> Option<&Region<'h, B>> {
        self.region.as_ref()
    }
    #[inline(always)]
    fn len(&self) -> Option<usize> {
        self.len
    }
    #[inline(always)]
    fn inline(&self) -> Option<&[u8]> {
        self.inline.as_deref()
    }
    #[inline(always)]
    fn signaled(&self) -> bool {
        self.signaled
    }
}

pub(super) struct Sq<'a, 'h, B: Backend> {
    hca: &'h Hca<B>,
    pub(super) work: &'a mut Work<'h, B>,
    qpn: u32,
}

impl<'h, B: Backend> Inner<'h, B> {
    /// The send queue, for posting.
    #[inline(always)]
    pub(super) fn sq(&mut self) -> Sq<'_, 'h, B> {
        Sq {
            hca: self.object.hca(),
            work: &mut self.work,
            qpn: self.qpn,
        }
    }
}

impl<'h, B: Backend> Sq<'_, 'h, B> {
    /// Checks `req`, then writes its WQE into the next slot (which [`Sq::push`] then takes).
    /// Returns the WQE's first 8 bytes (what rings the doorbell) and its size in units; on
    /// error nothing is written.
    #[inline(always)]
    pub(super) fn write<R: Request<'h, B>>(
        &mut self,
        req: &R,
    ) -> std::result::Result<(u64, u8), Error> {
        if let Some(r) = req.region() {
            if !std::ptr::eq(r.hca(), self.hca) {
                return Err(Error::ForeignResource {
                    what: "region",
                    owner: "HCA",
                });
            }
        }
        let pi = self.work.sq_pi;
        let capacity = self.work.sends.len();
        if pi.wrapping_sub(self.work.sq_ci) as usize >= capacity {
            return Err(Error::QueueFull {
                queue: "send queue",
                capacity,
            });
        }
        // The one look at the operation: opcode, immediate value, remote segments, and the
        // most inline bytes it may carry (`None`: READ and the atomics carry none).
        let (send, rdma) = (Some(MAX_INLINE), Some(MAX_INLINE_RDMA));
        let op = req.op();
        let (opcode, imm, remote, inline_max) = match op {
            SendOp::Send => (SendOpcode::Send, 0, Remote::None, send),
            SendOp::SendImm(i) => (SendOpcode::SendImm, i, Remote::None, send),
            SendOp::Write(r) => (SendOpcode::RdmaWrite, 0, Remote::Addr(r), rdma),
            SendOp::WriteImm(r, i) => (SendOpcode::RdmaWriteImm, i, Remote::Addr(r), rdma),
            SendOp::Read(r) => (SendOpcode::RdmaRead, 0, Remote::Addr(r), None),
            SendOp::CompareSwap {
                remote,
                compare,
                swap,
            } => {
                let atomic = Remote::Atomic(remote, swap, compare);
                (SendOpcode::AtomicCs, 0, atomic, None)
            }
            SendOp::FetchAdd { remote, add } => {
                let atomic = Remote::Atomic(remote, add, 0);
                (SendOpcode::AtomicFa, 0, atomic, None)
            }
        };
        // Every check before the first byte of the WQE is written.
        let local = if let Some(data) = req.inline() {
            match inline_max {
                Some(max) if data.len() <= max => Local::Inline(data),
                _ => {
                    return Err(Error::InlineTooLong {
                        len: data.len(),
                        max: inline_max.unwrap_or(0),
                        op: op.name(),
                    })
                }
            }
        } else if let Some(region) = req.region() {
            let len = match req.len() {
                None => region.len(),
                Some(len) if len <= region.len() => len,
                Some(len) => {
                    return Err(Error::InvalidArgument {
                        what: "post_send",
                        why: format!("{len} bytes of a {}-byte region", region.len()),
                    })
                }
            };
            Local::Gather {
                len: len as u32,
                lkey: region.lkey(),
                addr: region.addr(),
            }
        } else {
            Local::None
        };
        let wqe = SendWqe {
            opcode,
            imm,
            index: pi as u16,
            qpn: self.qpn,
            signaled: req.signaled(),
            remote,
            local,
        };
        // The ring masks the slot and its base was checked at creation, so the stores at
        // the writer's constant offsets need no further check.
        let ds = wqe.write(&mut Slot {
            ring: self.work.wqes,
            index: pi,
        });
        Ok((wqe.ctrl0(ds), ds))
    }

    /// Takes the request whose WQE [`Sq::write`] just wrote (at the producer counter, which
    /// only this advances): its identifier and region wait in the WQE's slot.
    #[inline(always)]
    pub(super) fn push(&mut self, id: u64, region: Option<Region<'h, B>>) {
        let work = &mut *self.work;
        let pi = work.sq_pi;
        let mask = work.sends.len() - 1;
        let slot = &mut work.sends[pi as usize & mask];
        // The slot is outside `sq_ci..sq_pi` (the queue had room), so its last region went
        // back with the completion that covered it (or, if the closure given to
        // `complete_with` panicked before that one, is dropped here).
        slot.id = id;
        slot.region = region;
        work.sq_pi = pi.wrapping_add(1);
    }

    /// Hands the WQEs up to the producer counter to the device, ringing with `first8`, the
    /// last one's first 8 bytes as [`Sq::write`] returned them; with `copy` that WQE is
    /// copied whole to the BlueFlame register instead.
    #[inline(always)]
    pub(super) fn ring(&mut self, first8: u64, copy: bool) {
        let work = &mut *self.work;
        let (be, pi) = (self.hca.backend(), work.sq_pi);
        if copy {
            let (wqes, record) = (work.wqes, work.record);
            let last = wqes.slot(pi.wrapping_sub(1));
            // SAFETY: this HCA's QP, alive while the handle is; `Sq::write` wrote every WQE
            // up to the producer counter, and `push` keeps each one's region in its slot
            // until the completion that covers it.
            unsafe { work.doorbell.ring(be, record.slot(0), pi as u16, last) };
        } else {
            // SAFETY: as above.
            unsafe { work.doorbell.ring_word(be, work.record, pi as u16, first8) };
        }
    }
}

#[cfg(all(test, feature = "sim"))]
pub(crate) mod tests;
