//! Raw Ethernet queues in the style of ixy: one send queue (SQ, behind a TIS) and one receive
//! queue (RQ, behind a direct TIR that a NIC receive flow table steers destination MACs to)
//! over a packet [`Pool`], and batch calls.
//!
//! - [`pool`]: the buffers and [`Packet`], the handle that owns one;
//! - `setup`: making the queues (and undoing them);
//! - `lists`: the page lists and destination lists of the setup commands, through the typed
//!   nested views;
//! - `tx`, `rx`: the two hot paths; `wqe`: where they read and write.
//!
//! The hot path is built for few instructions per packet:
//!
//! - every WQE slot is filled once at creation with what never changes (opcode, SQ number,
//!   segment count, lkey, and whether the slot asks for a completion), so sending a packet
//!   writes its WQE index, length and address and nothing else;
//! - a completion is requested every [`EthConfig::signal_every`] packets (a fixed set of slots),
//!   and one send CQE gives back all the buffers up to its WQE counter;
//! - one doorbell per batch: WQEs → to-device barrier → doorbell record → barrier → the first 8
//!   bytes of the batch's last WQE to the UAR, alternating the two BlueFlame halves;
//! - received packets complete in ring order; while the RQ is full, the slot of each packet
//!   taken gets a fresh buffer from the pool at once (else the RQ is refilled after), and the
//!   doorbell record is written once per batch;
//! - the loops go over runs of consecutive ring slots: no index masking, bounds checked once
//!   per run, one compare per receive CQE for its owner bit, opcode and WQE counter, and the
//!   16-bit counters kept in the device's byte order;
//! - a buffer is its index in the free stack and the slot tables, and its address in a WQE
//!   comes from a table; a packet is its pool's address, index and length (16 bytes), and
//!   "is it this pool's" is one pointer compare.
//!
//! Buffers are owned by [`Packet`] handles. A packet given to [`EthQueues::tx_batch`] moves
//! into the queue and its buffer returns to the pool when the device reports it sent; a
//! buffer in the RQ is handed out as a new packet only after its completion. So no handle
//! ever names memory the device may still read or write, and a packet cannot outlive its pool
//! or the HCA (`ui-tests/tests/driver/packet_after_hca.rs` is the compile-fail case).
//!
//! Values the device writes are checked before use: a send CQE must name a WQE that is
//! outstanding, a receive CQE the next posted WQE, and a byte count must fit the buffer.
//!
//! The NIC receive steering has one root flow table, which the queues' own table becomes: so
//! an HCA has one set of queues at a time, and a second [`EthQueues::create`] while one lives
//! is refused ([`Error::Claimed`]) before anything reaches the device.
//!
//! Dropping the queues destroys entries, group, table, TIR, RQ, SQ, TIS and CQs in that
//! order, and gives the buffers still in the rings back to the pool. If a destroy fails, the
//! device may still use the rest: its memory, the CQs' and the pool's go to quarantine, and
//! the buffers in the rings are not reused.

mod lists;
pub mod pool;
mod rx;
mod setup;
mod tx;
mod wqe;

pub use pool::{Packet, Pool};

use crate::backend::Backend;
use crate::clock::TimestampFormat;
use crate::error::{Error, Result};
use crate::hca::{Claim, Hca};
use crate::undo::Undo;
use pool::Buffers;
use rx::Rx;
use tx::Tx;

/// Geometry and steering of an Ethernet queue pair (its buffers come from a [`Pool`]).
#[derive(Debug, Clone)]
pub struct EthConfig {
    /// log2 of the SQ's slots (one 64-byte WQE per packet).
    pub log_sq_size: u8,
    /// log2 of the RQ's slots (one 16-byte WQE per buffer).
    pub log_rq_size: u8,
    /// A send completion is requested every this many packets (a power of two, at most the
    /// SQ's size). Sent buffers return to the pool in steps of this size.
    pub signal_every: u16,
    /// Copy the first 18 bytes (the L2 header, with room for a VLAN tag) of each frame into
    /// the WQE. Needed when the device's `wqe_inline_mode` capability is `l2`; devices that
    /// report `not_required` send faster without it.
    pub inline_l2: bool,
    /// Destination MACs steered to the RQ; empty steers every frame to it.
    pub macs: Vec<[u8; 6]>,
}

impl Default for EthConfig {
    fn default() -> Self {
        EthConfig {
            log_sq_size: 9,
            log_rq_size: 9,
            signal_every: 32,
            inline_l2: false,
            macs: Vec::new(),
        }
    }
}

/// Packet counts kept by [`EthQueues`] (updated once per batch), to compare with the device's
/// own port counters or a peer's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EthCounters {
    /// Packets posted to the SQ by [`EthQueues::tx_batch`].
    pub tx_packets: u64,
    /// Packets handed out by [`EthQueues::rx_batch`].
    pub rx_packets: u64,
    /// Error or untrusted CQEs met on the send side.
    pub tx_errors: u64,
    /// Error or untrusted CQEs met on the receive side.
    pub rx_errors: u64,
}

/// An Ethernet SQ and RQ with their CQs and steering, over packet pool `'p` (and its HCA).
pub struct EthQueues<'p, B: Backend> {
    hca: &'p Hca<B>,
    pool: &'p Pool<'p, B>,
    /// The pool's buffers (what the hot paths need of it).
    bufs: &'p Buffers,
    tx: Tx<'p, B>,
    rx: Rx<'p, B>,
    /// TIS, SQ, RQ, TIR, steering, in the order made; destroyed in reverse.
    objects: Undo<'p, B>,
    tirn: u32,
    counters: EthCounters,
    /// What the queues were made with (to make them again: [`EthQueues::recover`]).
    config: EthConfig,
    /// The format of their CQE timestamps.
    format: TimestampFormat,
    /// The HCA's NIC receive root table, held until the objects above are destroyed (fields
    /// drop after [`Drop::drop`], in order: this one last).
    _rx_root: Claim<'p>,
}

fn invalid(command: &'static str, what: String) -> Error {
    Error::BadDeviceValue { command, what }
}

impl<'p, B: Backend> EthQueues<'p, B> {
    /// The SQ number.
    pub fn sqn(&self) -> u32 {
        self.tx.sqn
    }

    /// The RQ number.
    pub fn rqn(&self) -> u32 {
        self.rx.rqn
    }

    /// The CQs: the send side's, then the receive side's. A
    /// [`CqError`](crate::eq::Event::CqError) event for either means the queues need
    /// [`recover`](Self::recover).
    pub fn cqns(&self) -> (u32, u32) {
        (self.tx.cq.cqn(), self.rx.cq.cqn())
    }

    /// Asks for a [`Completion`](crate::eq::Event::Completion) event (an interrupt, with
    /// MSI-X) when the receive CQ next gets a completion: for an application that sleeps in
    /// [`Hca::wait_events`](crate::Hca::wait_events) instead of polling. One event per arm.
    pub fn arm_rx(&mut self) {
        self.rx.cq.arm(false);
    }

    /// The TIR the flow table forwards to.
    pub fn tirn(&self) -> u32 {
        self.tirn
    }

    /// The pool the queues take buffers from.
    pub fn pool(&self) -> &'p Pool<'p, B> {
        self.pool
    }

    /// Sends outstanding (posted, not yet reported sent) and receive buffers posted.
    pub fn outstanding(&self) -> (usize, usize) {
        (
            self.tx.pi.wrapping_sub(self.tx.ci) as usize,
            self.rx.pi.wrapping_sub(self.rx.ci) as usize,
        )
    }

    /// Packets sent and received so far, and errors met.
    pub fn counters(&self) -> EthCounters {
        self.counters
    }

    /// The format of the queues' CQE timestamps (what
    /// [`rx_batch_timestamped`](Self::rx_batch_timestamped) hands out): convert them with
    /// [`Clock::cqe_time_in`](crate::clock::Clock::cqe_time_in).
    pub fn ts_format(&self) -> TimestampFormat {
        self.format
    }

    /// Destroys the device objects (see the module docs) and, if that succeeded, gives the
    /// buffers still in the rings back to the pool. Returns the first failure.
    fn teardown(&mut self) -> Result<()> {
        let r = self.objects.destroy();
        if r.is_ok() {
            // The queues are gone: the device reaches none of their buffers any more.
            // SAFETY: no packet is dropped while the stack is borrowed.
            let free = unsafe { self.bufs.free() };
            for q in [
                (&self.tx.slots, self.tx.ci, self.tx.pi, self.tx.mask),
                (&self.rx.slots, self.rx.ci, self.rx.pi, self.rx.mask),
            ] {
                let (slots, ci, pi, mask) = q;
                let mut i = ci;
                while i != pi {
                    free.push(slots[(i & mask) as usize]);
                    i = i.wrapping_add(1);
                }
            }
            self.tx.ci = self.tx.pi;
            self.rx.ci = self.rx.pi;
        }
        r
    }

    /// Tears everything down (see the module docs) and returns the first failure. (Dropping
    /// the queues does the same, logging it.)
    pub fn destroy(mut self) -> Result<()> {
        self.teardown()
    }

    /// Recovers from a CQ error (an overrun, or a ring the device could not write): a CQ in
    /// error takes no more completions, so nothing of what the queues did after it can be
    /// learnt. Destroys the queues, which gives every buffer still in their rings back to the
    /// pool (the frames sent stay sent; the frames received with no completion are lost, and
    /// the device counts them as dropped), and creates them again with the same
    /// configuration and timestamp format. The counters carry on from where they were. If the destroy fails, the
    /// queues' memory stays in quarantine (see [`destroy`](Self::destroy)) and its error is
    /// returned.
    pub fn recover(self) -> Result<EthQueues<'p, B>> {
        let (pool, config, counters) = (self.pool, self.config.clone(), self.counters);
        let format = self.format;
        self.destroy()?;
        let mut q = EthQueues::create_with_format(pool, &config, format)?;
        q.counters = counters;
        Ok(q)
    }
}

impl<B: Backend> Drop for EthQueues<'_, B> {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            log::warn!("destroying Ethernet queues on drop: {e}");
        }
        // The CQs go after this, with the fields: nothing reports to them any more.
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests;
