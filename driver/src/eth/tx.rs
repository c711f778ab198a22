//! The send side: WQEs written over runs of consecutive slots, one doorbell per batch, and
//! send completions giving buffers back to the pool a signalled run at a time.

use super::pool::{Buffers, Packet};
use super::wqe::*;
use super::{invalid, EthQueues};
use crate::backend::Backend;
use crate::cq::Cq;
use crate::doorbell::{SendDoorbell, WQEBB};
use crate::error::{Error, Result};
use crate::ring::{shift_of, Ring};
use mlx5_prm::rt::{Bytes, BytesMut};
use mlx5_prm::Cqe64;

/// The send side: ring, doorbell record, CQ, and the buffer in each outstanding slot.
pub(crate) struct Tx<'p, B: Backend> {
    pub(crate) sqn: u32,
    /// Word access to the ring (its memory is the SQ object's, in the queues' undo list).
    pub(crate) wqes: Ring<WQEBB>,
    /// Word access to the doorbell record (likewise).
    pub(crate) record: Ring<8>,
    pub(crate) cq: Cq<'p, B>,
    pub(crate) mask: u32,
    /// See [`run_mask`].
    pub(crate) run_mask: u32,
    /// WQEs posted and reaped (free-running).
    pub(crate) pi: u32,
    pub(crate) ci: u32,
    /// The index of the buffer in each slot.
    pub(crate) slots: Box<[u32]>,
    pub(crate) doorbell: SendDoorbell,
    pub(crate) inline_l2: bool,
    /// [`super::EthConfig::signal_every`].
    pub(crate) every: u32,
    /// The second dword of every WQE's control segment (SQ number and segment count), the
    /// doorbell's low half.
    pub(crate) ctrl_dw1: u32,
}

impl<B: Backend> Tx<'_, B> {
    /// The error an unexpected send CQE stands for.
    #[cold]
    fn error(&self, opcode: u32, wqe_counter: u16) -> Error {
        match self.cq.decode().map(|c| c.status) {
            Some(Err(error)) => Error::WorkRequest {
                queue: "sq",
                number: self.sqn,
                wqe_counter,
                error,
            },
            _ => invalid("send cqe", format!("opcode 0x{opcode:x} on an SQ's CQ")),
        }
    }
}

/// The address, in the device's byte order, of buffer `index` from the pool's `wire` table
/// (passed as a local, so hot loops keep it in a register).
#[inline(always)]
pub(crate) fn wire(wire: &[u64], index: u32) -> u64 {
    let index = index as usize;
    debug_assert!(index < wire.len());
    // SAFETY: every index the pool hands out, keeps free or finds in a packet of this pool
    // (checked by the caller) is below `count`, the table's length (see `Pool::new`).
    unsafe { *wire.get_unchecked(index) }
}

/// Copies the frame's first 18 bytes into the WQE of slot `pi`: two in the Ethernet segment,
/// sixteen in the next unit.
fn inline_header(wqes: &Ring<WQEBB>, bufs: &Buffers, p: &Packet<'_>, pi: u32) {
    let mut hdr = [0u8; INLINE_L2];
    bufs.bytes(p.index(), 0, INLINE_L2).read_bytes(0, &mut hdr);
    let mut wqe = wqes.slot(pi);
    wqe.write_bytes(16 + 14, &hdr[..2]);
    wqe.write_bytes(32, &hdr[2..]);
}

impl<'p, B: Backend> EthQueues<'p, B> {
    /// Reaps send completions (returning sent buffers to the pool), then sends as many of
    /// `pkts` as the SQ has room for, from the front, with one doorbell. Sent packets leave
    /// `pkts` (their buffers belong to the SQ until their completion). Returns how many were
    /// sent.
    ///
    /// Errors: a send error CQE (the SQ is then in ERR; its buffers still come back), a CQE
    /// naming a WQE that is not outstanding, or a packet that cannot be sent (another pool's:
    /// [`Error::ForeignResource`]; empty or longer than a buffer: [`Error::InvalidArgument`]);
    /// such a packet stays at the front of `pkts`, after the ones before it were sent, and
    /// nothing of it reaches the device.
    #[inline(never)]
    pub fn tx_batch(&mut self, pkts: &mut Vec<Packet<'p>>) -> Result<usize> {
        if let Err(e) = self.reap_tx() {
            self.counters.tx_errors += 1;
            return Err(e);
        }
        let tx = &self.tx;
        let room = (tx.mask + 1) - tx.pi.wrapping_sub(tx.ci);
        let n = pkts.len().min(room as usize);
        // One loop each way, so the usual one carries no inline-header branch.
        let sent = if tx.inline_l2 {
            self.post::<true>(&pkts[..n])
        } else {
            self.post::<false>(&pkts[..n])
        };
        self.counters.tx_packets += sent as u64;
        if sent > 0 {
            let len = pkts.len();
            // SAFETY: the first `sent` packets' buffers belong to the SQ now (their indices
            // are in its slot table): they leave `pkts` without being dropped, and the rest
            // (if any: usually all were sent, and then no copy is made) move to the front.
            unsafe {
                let base = pkts.as_mut_ptr();
                if sent < len {
                    std::ptr::copy(base.add(sent), base, len - sent);
                }
                pkts.set_len(len - sent);
            }
            let tx = &mut self.tx;
            // The last WQE's first 8 bytes: as `post` and `prefill` wrote them.
            let first8 =
                (u64::from(ctrl_dw0(tx.pi.wrapping_sub(1))) << 32) | u64::from(tx.ctrl_dw1);
            // SAFETY: this HCA's SQ, alive while `self` is; `post` wrote every WQE up to
            // `pi`, and their buffers belong to the SQ until their completions.
            unsafe {
                tx.doorbell
                    .ring_word(self.hca.backend(), tx.record, tx.pi as u16, first8)
            };
        }
        if sent < n {
            return Err(self.unsendable(&pkts[0]));
        }
        Ok(sent)
    }

    /// Why `p` cannot be sent.
    #[cold]
    fn unsendable(&self, p: &Packet<'p>) -> Error {
        if !std::ptr::eq(p.buffers(), self.bufs) {
            return Error::ForeignResource {
                what: "packet",
                owner: "pool",
            };
        }
        let min = if self.tx.inline_l2 { INLINE_L2 } else { 1 };
        Error::InvalidArgument {
            what: "tx_batch",
            why: format!(
                "a packet of {} bytes cannot be sent ({min}..={} bytes)",
                p.raw_len(),
                self.bufs.buf_size
            ),
        }
    }

    /// Writes a WQE for each of `pkts` in turn, up to the first that is not sendable; returns
    /// how many. The caller checked that the SQ has room for all of them.
    #[inline(always)]
    fn post<const INLINE: bool>(&mut self, pkts: &[Packet<'p>]) -> usize {
        // Usually one run, sometimes two (past the end of the ring or of the index's low
        // byte); more (out of line) only for batches longer than 256.
        let (mut n, mut short) = self.post_run::<INLINE>(pkts);
        if !short && n < pkts.len() {
            let got;
            (got, short) = self.post_run::<INLINE>(&pkts[n..]);
            n += got;
            if !short && n < pkts.len() {
                n += self.post_more::<INLINE>(&pkts[n..]);
            }
        }
        n
    }

    /// The runs of [`EthQueues::post`] after the second, out of line.
    #[cold]
    #[inline(never)]
    fn post_more<const INLINE: bool>(&mut self, pkts: &[Packet<'p>]) -> usize {
        let mut n = 0;
        while n < pkts.len() {
            let (got, short) = self.post_run::<INLINE>(&pkts[n..]);
            n += got;
            if short {
                break;
            }
        }
        n
    }

    /// One run of [`EthQueues::post`]: from WQE `tx.pi` to the end of `pkts` or of the run
    /// (see [`run_mask`]). Returns how many it wrote, and whether it stopped at a packet that
    /// is not sendable.
    #[inline(always)]
    fn post_run<const INLINE: bool>(&mut self, pkts: &[Packet<'p>]) -> (usize, bool) {
        let (tx, bufs) = (&mut self.tx, self.bufs);
        let (buf_size, table) = (bufs.buf_size, &bufs.wire[..]);
        let min = if INLINE { INLINE_L2 as u32 } else { 1 };
        let pi = tx.pi;
        let run = pkts.len().min(run_left(tx.run_mask, pi));
        let ring = tx.wqes.run(pi, run);
        let first = (pi & tx.mask) as usize;
        let slots = &mut tx.slots[first..first + run];
        let pkts = &pkts[..run];
        // The control segment's first dword (opmod, WQE index, opcode) in the device's byte
        // order: within the run only the index's low byte changes, one add each time.
        let first_ctrl = ctrl_dw0(pi).to_be();
        let mut ctrl = first_ctrl;
        for k in 0..run {
            let p = &pkts[k];
            // Packets are made only by their pool with in-range indices, so being this
            // pool's vouches for the index; the length is the caller's.
            let len = p.raw_len();
            if !std::ptr::eq(p.buffers(), bufs) || len.wrapping_sub(min) > buf_size - min {
                break;
            }
            ring.write32_raw::<CTRL_DW0>(k, ctrl);
            ctrl = ctrl.wrapping_add(CTRL_INDEX_ONE);
            if INLINE {
                inline_header(&tx.wqes, bufs, p, pi.wrapping_add(k as u32));
                ring.write32::<{ DATA_INLINE + DATA_LEN }>(k, len - INLINE_L2 as u32);
                let addr = u64::from_be(wire(table, p.index())) + INLINE_L2 as u64;
                ring.write64_raw::<{ DATA_INLINE + DATA_ADDR }>(k, addr.to_be());
            } else {
                ring.write32::<{ DATA_PLAIN + DATA_LEN }>(k, len);
                ring.write64_raw::<{ DATA_PLAIN + DATA_ADDR }>(k, wire(table, p.index()));
            }
            slots[k] = p.index();
        }
        // How many were written, as the index in `ctrl` counted them (no carry, see
        // `run_left`).
        let got = (ctrl.wrapping_sub(first_ctrl) / CTRL_INDEX_ONE) as usize;
        tx.pi = pi.wrapping_add(got as u32);
        (got, got < run)
    }

    /// Returns the buffers of sent packets to the pool, one send CQE at a time.
    #[inline(always)]
    fn reap_tx(&mut self) -> Result<()> {
        let tx = &mut self.tx;
        // SAFETY: no packet is dropped while the stack is borrowed (in this function).
        let free = unsafe { self.bufs.free() };
        let mut cur = tx.cq.cursor();
        let mut failure = None;
        let every = tx.every;
        while let Some(word) = cur.ready_word::<B::Barriers>() {
            // The usual CQE: a send completion for the next WQE that asked for one. With ci a
            // multiple of `every`, that is WQE ci + every - 1 (see `prefill`), and its buffers
            // are one run of the slot table (`every` divides the ring).
            let usual = (tx.ci.wrapping_add(every - 1) << shift_of(Cqe64::WQE_COUNTER)) | REQ_BITS;
            if word & COUNTER_AND_OPCODE == usual
                && tx.ci & (every - 1) == 0
                && tx.pi.wrapping_sub(tx.ci) >= every
            {
                let first = (tx.ci & tx.mask) as usize;
                free.extend_from_slice(&tx.slots[first..first + every as usize]);
                tx.ci = tx.ci.wrapping_add(every);
                cur.advance();
                continue;
            }
            let wqe_counter = (word >> shift_of(Cqe64::WQE_COUNTER)) as u16;
            let opcode = (word >> shift_of(Cqe64::OPCODE)) & 0xf;
            let outstanding = tx.pi.wrapping_sub(tx.ci);
            let done = u32::from(wqe_counter.wrapping_sub(tx.ci as u16)) + 1;
            if done > outstanding {
                tx.cq.commit(cur);
                return Err(invalid(
                    "send cqe",
                    format!(
                        "WQE {wqe_counter} is not outstanding ({outstanding} from {})",
                        tx.ci as u16
                    ),
                ));
            }
            if opcode != REQ && failure.is_none() {
                tx.cq.commit(cur);
                failure = Some(tx.error(opcode, wqe_counter));
            }
            // The buffers of WQEs ci ..= wqe_counter, in one or two runs of the slot table.
            let first = (tx.ci & tx.mask) as usize;
            let end = first + done as usize;
            let size = tx.slots.len();
            if end <= size {
                free.extend_from_slice(&tx.slots[first..end]);
            } else {
                free.extend_from_slice(&tx.slots[first..]);
                free.extend_from_slice(&tx.slots[..end - size]);
            }
            tx.ci = tx.ci.wrapping_add(done);
            cur.advance();
        }
        tx.cq.commit(cur);
        failure.map_or(Ok(()), Err)
    }
}
