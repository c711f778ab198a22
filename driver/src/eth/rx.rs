//! The receive side: receive CQEs checked with one compare each over runs of consecutive
//! slots, packets handed out in ring order, and the RQ refilled from the pool (at once, slot
//! by slot, while it is full).

use super::pool::Packet;
use super::tx::wire;
use super::wqe::*;
use super::{invalid, EthQueues};
use crate::backend::{Backend, Barriers};
use crate::cq::{Cq, Cursor};
use crate::error::{Error, Result};
use crate::ring::{shift_of, Ring};
use mlx5_prm::{Cqe64, CqeOpcode};
use std::mem::MaybeUninit;

/// The receive side.
pub(crate) struct Rx<'p, B: Backend> {
    pub(crate) rqn: u32,
    /// Word access to the ring (its memory is the RQ object's, in the queues' undo list).
    pub(crate) wqes: Ring<RQ_STRIDE>,
    /// Word access to the doorbell record (likewise).
    pub(crate) record: Ring<8>,
    pub(crate) cq: Cq<'p, B>,
    pub(crate) mask: u32,
    /// See [`run_mask`].
    pub(crate) run_mask: u32,
    pub(crate) pi: u32,
    pub(crate) ci: u32,
    /// The index of the buffer in each slot.
    pub(crate) slots: Box<[u32]>,
}

impl<B: Backend> Rx<'_, B> {
    /// The error an unexpected receive CQE stands for; `next` says it names the next posted
    /// WQE (a receive error for any other is a bad value, not that WQE's failure).
    #[cold]
    fn error(&self, opcode: u32, wqe_counter: u16, len: u32, buf_size: u32, next: bool) -> Error {
        if opcode == u32::from(CqeOpcode::RespErr.raw()) && next {
            if let Some(Err(error)) = self.cq.decode().map(|c| c.status) {
                return Error::WorkRequest {
                    queue: "rq",
                    number: self.rqn,
                    wqe_counter,
                    error,
                };
            }
        }
        let (next, posted) = (self.ci as u16, self.pi.wrapping_sub(self.ci));
        invalid(
            "receive cqe",
            format!(
                "opcode 0x{opcode:x} for WQE {wqe_counter} (next {next}, {posted} posted), \
                 {len} bytes into a {buf_size}-byte buffer"
            ),
        )
    }
}

impl<'p, B: Backend> EthQueues<'p, B> {
    /// Moves up to `max` received packets into `out` (in arrival order), then refills the RQ
    /// from the pool with one doorbell record write. Returns how many were received.
    ///
    /// Errors: a receive error CQE (its buffer returns to the pool), or a CQE the driver cannot
    /// trust (not the next posted WQE, or more bytes than a buffer holds).
    #[inline(never)]
    pub fn rx_batch(&mut self, out: &mut Vec<Packet<'p>>, max: usize) -> Result<usize> {
        self.rx_batch_with::<false>(out, max, &mut Vec::new())
    }

    /// As [`EthQueues::rx_batch`], and each packet's timestamp appended to `stamps`, in the
    /// order of `out`: the device clock's raw value when the packet's CQE was written, in the
    /// queues' format ([`EthQueues::ts_format`]: internal timer ticks, or real-time seconds
    /// and nanoseconds; convert it with
    /// [`Clock::cqe_time_in`](crate::clock::Clock::cqe_time_in), or
    /// [`Clock::cqe_time`](crate::clock::Clock::cqe_time) when the clock's format is the
    /// queues'). A call of its own, so that
    /// [`EthQueues::rx_batch`] reads no more of each CQE than it did.
    #[inline(never)]
    pub fn rx_batch_timestamped(
        &mut self,
        out: &mut Vec<Packet<'p>>,
        stamps: &mut Vec<u64>,
        max: usize,
    ) -> Result<usize> {
        self.rx_batch_with::<true>(out, max, stamps)
    }

    /// The receive batch; with `STAMP`, the timestamps of the CQEs taken are read before the
    /// consumer index releases their slots.
    #[inline(always)]
    fn rx_batch_with<const STAMP: bool>(
        &mut self,
        out: &mut Vec<Packet<'p>>,
        max: usize,
        stamps: &mut Vec<u64>,
    ) -> Result<usize> {
        let first = self.rx.cq.cursor();
        let (pi, posted) = (self.rx.pi, self.rx.pi.wrapping_sub(self.rx.ci));
        // Only posted WQEs complete: checked once here for the batch, not per CQE.
        let want = max.min(posted as usize);
        // Packets go straight into reserved space (no capacity check per packet); the
        // length is set once, after the loop, to cover exactly the slots written.
        out.reserve(want);
        let room = &mut out.spare_capacity_mut()[..want];
        // The usual case: the RQ is full and the pool can replace every buffer handed out.
        // Then each slot gets its new buffer as soon as its packet is taken (WQE ci + size,
        // posted next, has the slot of WQE ci).
        let (n, mut cur) = if posted == self.rx.mask + 1 && self.bufs.free_len() >= want {
            self.receive::<B::Barriers, true>(room)
        } else {
            self.receive::<B::Barriers, false>(room)
        };
        // SAFETY: `receive` initialised the first n slots of `room`, the reserved ones past
        // the old length.
        unsafe { out.set_len(out.len() + n) };
        if STAMP {
            // Before anything is committed (`check_rx` may commit these packets' CQEs).
            stamps.extend((0..n as u32).map(|k| first.timestamp(k)));
        }
        // Short of `max`: usually because no more CQEs are handed over; otherwise the next
        // one is looked at again (it may have just arrived), and refused if bad.
        let mut error = None;
        if n < max && cur.ready::<B::Barriers>() {
            (error, cur) = self.check_rx(cur);
        }
        self.rx.cq.commit(cur);
        self.refill(pi);
        self.counters.rx_packets += n as u64;
        self.counters.rx_errors += u64::from(error.is_some());
        error.map_or(Ok(n), Err)
    }

    /// Takes packets into `room` while their CQEs are handed over and valid; with `REPOST`
    /// (the RQ is full and the pool holds a buffer for every slot of `room`), each packet's RQ
    /// slot gets a fresh buffer at once. Returns how many, and the cursor past them (not yet
    /// committed).
    #[inline(always)]
    fn receive<Br: Barriers, const REPOST: bool>(
        &mut self,
        room: &mut [MaybeUninit<Packet<'p>>],
    ) -> (usize, Cursor) {
        let mut cur = self.rx.cq.cursor();
        let want = room.len();
        // With REPOST, fresh buffers come from the top of the free stack.
        let from = self.bufs.free_len() - if REPOST { want } else { 0 };
        // Usually one run, sometimes two (past the end of a ring or of a counter's low byte);
        // more (out of line) only for batches longer than 256.
        let (mut n, mut short) = self.receive_run::<Br, REPOST>(&mut cur, room, from);
        if !short && n < want {
            let got;
            (got, short) = self.receive_run::<Br, REPOST>(&mut cur, &mut room[n..], from + n);
            n += got;
            if !short && n < want {
                let got;
                (got, cur) = self.receive_more::<Br, REPOST>(cur, &mut room[n..], from + n);
                n += got;
            }
        }
        if REPOST {
            // SAFETY: no packet is dropped while the stack is borrowed.
            let free = unsafe { self.bufs.free() };
            if n == want {
                free.truncate(from);
            } else {
                free.drain(from..from + n);
            }
        }
        (n, cur)
    }

    /// The runs of [`EthQueues::receive`] after the first: out of line, so that the first
    /// (usually the only one) keeps its registers. Returns how many packets they took, and
    /// the cursor past them.
    #[cold]
    #[inline(never)]
    fn receive_more<Br: Barriers, const REPOST: bool>(
        &mut self,
        mut cur: Cursor,
        room: &mut [MaybeUninit<Packet<'p>>],
        fresh: usize,
    ) -> (usize, Cursor) {
        let mut n = 0;
        while n < room.len() {
            let (got, short) = self.receive_run::<Br, REPOST>(&mut cur, &mut room[n..], fresh + n);
            n += got;
            if short {
                break;
            }
        }
        (n, cur)
    }

    /// One run of [`EthQueues::receive`], from WQE `rx.ci` to the end of `room` or of the
    /// rings, whichever is first: through a run, the owner parity stays the same and the slots
    /// are consecutive. REPOST takes fresh buffers from `pool.free[fresh..]`. Returns how many
    /// packets it took, and whether it stopped short of the run's end.
    #[inline(always)]
    fn receive_run<Br: Barriers, const REPOST: bool>(
        &mut self,
        cur: &mut Cursor,
        room: &mut [MaybeUninit<Packet<'p>>],
        fresh: usize,
    ) -> (usize, bool) {
        let (rx, bufs) = (&mut self.rx, self.bufs);
        let (buf_size, table) = (bufs.buf_size, &bufs.wire[..]);
        let ci = rx.ci;
        // The CQ has the RQ's size and its consumer index is ci, so the RQ's end is the CQ's.
        debug_assert!(cur.until_wrap() == rx.wqes.until_wrap(ci));
        let run = room.len().min(run_left(rx.run_mask, ci));
        let (cqes, wqes) = (cur.run(run), rx.wqes.run(ci, run));
        let first = (ci & rx.mask) as usize;
        let slots = &mut rx.slots[first..first + run];
        let room = &mut room[..run];
        let fresh = if REPOST {
            // SAFETY: no packet is dropped while the stack is borrowed (packets are only
            // made, into `room`).
            let free: &[u32] = unsafe { bufs.free() };
            &free[fresh..fresh + run]
        } else {
            &[][..]
        };
        // The last dword of the CQE for WQE ci: its counter, a receive completion's opcode,
        // and this pass's owner bit; one compare checks all three. In the device's byte order,
        // and the run stops before the counter's low byte wraps, so that the next CQE's is
        // one add away.
        let mut expected = ((u32::from(ci as u16) << shift_of(Cqe64::WQE_COUNTER))
            | RESP_SEND_BITS
            | cur.parity())
        .to_be();
        let mut got = run;
        for k in 0..run {
            if !cqes.matches_raw::<Br>(k, COUNTER_OPCODE_OWNER.to_be(), expected) {
                got = k;
                break;
            }
            let len = cqes.field::<CQE_BYTE_CNT>(k);
            if len > buf_size {
                got = k;
                break;
            }
            room[k].write(bufs.packet(slots[k], len));
            if REPOST {
                slots[k] = fresh[k];
                wqes.write64_raw::<DATA_ADDR>(k, wire(table, fresh[k]));
            }
            expected = expected.wrapping_add(CQE_COUNTER_ONE);
        }
        cur.advance_by(got as u32);
        rx.ci = ci.wrapping_add(got as u32);
        if REPOST {
            rx.pi = rx.pi.wrapping_add(got as u32);
        }
        (got, got < run)
    }

    /// A receive CQE at `cur` (at WQE `rx.ci`), handed over, that the receive loop did not
    /// take: a good one that arrived since the loop looked is left for the next call (no
    /// error); any other is refused with the error it stands for, and a receive error CQE
    /// for the next posted WQE is consumed, its buffer (which holds nothing) back to the
    /// pool. Returns the cursor after what was consumed.
    #[cold]
    fn check_rx(&mut self, mut cur: Cursor) -> (Option<Error>, Cursor) {
        let rx = &mut self.rx;
        let word = cur.field::<CQE_WQE_COUNTER>();
        let len = cur.field::<CQE_BYTE_CNT>();
        let wqe_counter = (word >> shift_of(Cqe64::WQE_COUNTER)) as u16;
        let opcode = (word >> shift_of(Cqe64::OPCODE)) & 0xf;
        let posted = rx.pi != rx.ci;
        let next = posted && wqe_counter == rx.ci as u16;
        if next && opcode == RESP_SEND && len <= self.bufs.buf_size {
            return (None, cur);
        }
        // The packets before it are taken: publish them, so the CQ's own decoding of the
        // error CQE looks at this one.
        rx.cq.commit(cur);
        let error = rx.error(opcode, wqe_counter, len, self.bufs.buf_size, next);
        if opcode == u32::from(CqeOpcode::RespErr.raw()) && next {
            let index = rx.slots[(rx.ci & rx.mask) as usize];
            cur.advance();
            rx.ci = rx.ci.wrapping_add(1);
            // SAFETY: no packet is dropped while the stack is borrowed.
            unsafe { self.bufs.free() }.push(index);
        }
        (Some(error), cur)
    }

    /// Posts free buffers to the RQ until it is full or the pool is empty; then, if the RQ's
    /// producer counter moved since `pi0`, writes its doorbell record once.
    #[inline(always)]
    pub(crate) fn refill(&mut self, pi0: u32) {
        let rx = &mut self.rx;
        // SAFETY: no packet is dropped while the stack is borrowed.
        let free = unsafe { self.bufs.free() };
        let room = (rx.mask + 1) - rx.pi.wrapping_sub(rx.ci);
        let take = (room as usize).min(free.len());
        if take > 0 {
            let from = free.len() - take;
            let (wqes, mask, slots) = (rx.wqes, rx.mask, &mut rx.slots[..]);
            let mut pi = rx.pi;
            for &index in &free[from..] {
                wqes.write64_raw::<DATA_ADDR>(pi, wire(&self.bufs.wire, index));
                // SAFETY: masked to the ring; `slots` has one entry per slot.
                unsafe { *slots.get_unchecked_mut((pi & mask) as usize) = index };
                pi = pi.wrapping_add(1);
            }
            rx.pi = pi;
            free.truncate(from);
        }
        if rx.pi != pi0 {
            B::Barriers::to_device();
            rx.record
                .write32::<RECEIVE_COUNTER_DWORD>(0, u32::from(rx.pi as u16));
        }
    }
}
