//! Raw Ethernet queues in the style of ixy: one send queue (SQ, behind a TIS) and one receive
//! queue (RQ, behind a direct TIR that a NIC receive flow table steers destination MACs to),
//! a pool of fixed-size packet buffers in one registered region, and batch calls.
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
//! - the loops go over runs of consecutive ring slots (`run_mask`): no index masking, bounds
//!   checked once per run, one compare per receive CQE for its owner bit, opcode and WQE
//!   counter, and the 16-bit counters kept in the device's byte order;
//! - a buffer's id (pool tag and index, as a [`Packet`] holds them) is one word in the free
//!   list and the slot tables, and its address in a WQE comes from a table (`Pool::wire`).
//!
//! Buffers are owned by [`Packet`] handles. A handle given to [`EthQueues::tx_batch`] moves
//! into the queue and its buffer returns to the pool when the device reports it sent; a
//! buffer in the RQ is handed out as a new handle only after its completion. So no handle
//! ever names memory the device may still read or write:
//!
//! Sending compiles; touching the sent packet afterwards does not:
//!
//! ```no_run
//! # use mlx5_driver::eth::{EthQueues, Packet};
//! # fn f(eth: &mut EthQueues, be: &mlx5_driver::backend::sim::SimBackend, p: Packet) {
//! let mut batch = vec![p];
//! eth.tx_batch(be, &mut batch).unwrap();
//! # }
//! ```
//!
//! ```compile_fail,E0382
//! # use mlx5_driver::eth::{EthQueues, Packet};
//! # fn f(eth: &mut EthQueues, be: &mlx5_driver::backend::sim::SimBackend, p: Packet) {
//! let mut batch = vec![p];
//! eth.tx_batch(be, &mut batch).unwrap(); // the SQ owns the buffer now...
//! let _ = eth.data(&p);                  // ...so the handle cannot be used (it moved)
//! # }
//! ```
//!
//! Values the device writes are checked before use: a send CQE must name a WQE that is
//! outstanding, a receive CQE the next posted WQE, and a byte count must fit the buffer.

use crate::backend::{Backend, Barriers, DmaAlloc, DmaBuf};
use crate::cq::{Cq, Cursor};
use crate::doorbell::{SendDoorbell, WQEBB};
use crate::error::{Error, Result};
use crate::hca::Hca;
use crate::mr::{Access, Region};
use crate::ring::{dword_of, shift_of, Ring};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::{Bytes, BytesMut, DeviceBytes};
use mlx5_prm::{
    Cqe64, CqeOpcode, CreateFlowGroupOut, CreateFlowTableOut, CreateRqIn, CreateRqOut, CreateSqIn,
    CreateSqOut, CreateTirOut, CreateTisOut, DestFormatStruct, FlowContext, FlowDestinationType,
    FlowTableType, QpDoorbellRecord, RqMemType, RqState, Rqc, SendOpcode, SetFteIn, SqState, Sqc,
    TircDispType, Wq, WqType, WqeCompletionMode, WqeCtrlSeg, WqeDataSeg, WqeEthSeg,
};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

/// Geometry and steering of an Ethernet queue pair.
#[derive(Debug, Clone)]
pub struct EthConfig {
    /// log2 of the SQ's slots (one 64-byte WQE per packet).
    pub log_sq_size: u8,
    /// log2 of the RQ's slots (one 16-byte WQE per buffer).
    pub log_rq_size: u8,
    /// Packet buffers in the pool (shared by both directions).
    pub buffers: u32,
    /// Bytes per packet buffer (the largest frame).
    pub buf_size: u32,
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
            buffers: 4096,
            buf_size: 2048,
            signal_every: 32,
            inline_l2: false,
            macs: Vec::new(),
        }
    }
}

/// A packet buffer from an [`EthQueues`] pool, with the length of the frame it holds.
/// Neither `Clone` nor `Copy`: the handle is the buffer's ownership.
#[derive(Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Packet {
    // `index` and `pool` side by side, in this order: together they are the buffer's `Id`,
    // so making a handle from one is one 8-byte store.
    index: u32,
    pool: u32,
    len: u32,
}

/// A buffer's identity inside the driver: its pool's tag in the high half, its index in the
/// low half (see [`Pool::id`]).
type Id = u64;

impl Packet {
    #[inline(always)]
    fn from_id(id: Id, len: u32) -> Packet {
        Packet {
            index: id as u32,
            pool: (id >> 32) as u32,
            len,
        }
    }

    #[inline(always)]
    fn id(&self) -> Id {
        u64::from(self.index) | (u64::from(self.pool) << 32)
    }

    /// Length of the frame in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for an empty packet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the frame's length (checked against the buffer size when sent).
    pub fn set_len(&mut self, len: usize) {
        self.len = u32::try_from(len).unwrap_or(u32::MAX);
    }
}

/// Bytes per receive WQE slot (one data segment).
const RQ_STRIDE: usize = 16;
/// Bytes of L2 header copied into the WQE with [`EthConfig::inline_l2`].
const INLINE_L2: usize = 18;
/// Byte offset of the ring's page list in CREATE_SQ's and CREATE_RQ's input (context at 0x20,
/// its wq at +0x30, the wq's pas at +0xc0).
const WQ_PAS: usize = (CreateSqIn::CTX.bit_offset + Sqc::WQ.bit_offset + Wq::PAS.bit_offset) / 8;
const _: () =
    assert!(WQ_PAS == (CreateRqIn::CTX.bit_offset + Rqc::WQ.bit_offset + Wq::PAS.bit_offset) / 8);
/// Byte offset of the destination list in SET_FTE's input.
const FTE_DEST: usize =
    (SetFteIn::FLOW_CONTEXT.bit_offset + FlowContext::DESTINATION.bit_offset) / 8;
/// Where the hot path writes: the control segment's first dword (opmod, wqe_index, opcode),
/// the data segment (after control and Ethernet segments, plus one unit of inline header with
/// [`EthConfig::inline_l2`]), and its length and address.
const CTRL_DW0: usize = dword_of(WqeCtrlSeg::WQE_INDEX);
const WQE_INDEX_SHIFT: u32 = shift_of(WqeCtrlSeg::WQE_INDEX);
const SEND: u32 = (SendOpcode::Send.raw() as u32) << shift_of(WqeCtrlSeg::OPCODE);
const _: () =
    assert!(dword_of(WqeCtrlSeg::OPCODE) == CTRL_DW0 && dword_of(WqeCtrlSeg::OPMOD) == CTRL_DW0);
const DATA_PLAIN: usize = 32;
const DATA_INLINE: usize = 48;
const DATA_LEN: usize = dword_of(WqeDataSeg::BYTE_COUNT);
const DATA_ADDR: usize = dword_of(WqeDataSeg::ADDR);
/// The control segment's first dword for WQE `pi`.
const fn ctrl_dw0(pi: u32) -> u32 {
    ((pi & 0xffff) << WQE_INDEX_SHIFT) | SEND
}
/// One more in the WQE index of a control segment's first dword in the device's byte order,
/// as long as the index's low byte does not wrap (see [`run_left`]).
const CTRL_INDEX_ONE: u32 = (1u32 << WQE_INDEX_SHIFT).to_be();
/// One more in the wqe_counter of a CQE's last dword in the device's byte order, likewise.
const CQE_COUNTER_ONE: u32 = (1u32 << shift_of(Cqe64::WQE_COUNTER)).to_be();
const _: () = assert!(WqeCtrlSeg::WQE_INDEX.width == 16 && Cqe64::WQE_COUNTER.width == 16);

/// The hot loops go over runs of consecutive slots, which end where the ring wraps and where
/// the index's low byte does: up to there, the big-endian 16-bit counters (WQE index, CQE
/// wqe_counter) they keep in a dword in the device's byte order go up by one with a plain add.
/// So a run ends at the next multiple of `run_mask + 1`, the ring's size but at most 256.
fn run_mask(ring_mask: u32) -> u32 {
    ring_mask.min(0xff)
}

/// Slots from `index` to the end of its run (see [`run_mask`]).
#[inline(always)]
fn run_left(run_mask: u32, index: u32) -> usize {
    (run_mask - (index & run_mask)) as usize + 1
}
const _: () = assert!(dword_of(WqeCtrlSeg::QPN) == 4 && dword_of(WqeCtrlSeg::DS) == 4);
/// The RQ doorbell record's receive counter, alone in its dword (but for reserved bits).
const RECEIVE_COUNTER_DWORD: usize = dword_of(QpDoorbellRecord::RECEIVE_COUNTER);
const _: () = assert!(
    QpDoorbellRecord::RECEIVE_COUNTER.width == 16
        && shift_of(QpDoorbellRecord::RECEIVE_COUNTER) == 0
);
/// The CQE dwords the hot path reads.
const CQE_WQE_COUNTER: usize = dword_of(Cqe64::WQE_COUNTER);
const CQE_BYTE_CNT: usize = dword_of(Cqe64::BYTE_CNT);
const RESP_SEND: u32 = CqeOpcode::RespSend.raw() as u32;
const REQ: u32 = CqeOpcode::Req.raw() as u32;
/// The bits of the CQE's last dword that hold wqe_counter and opcode, and a receive
/// completion's opcode in place.
const COUNTER_AND_OPCODE: u32 =
    (0xffff << shift_of(Cqe64::WQE_COUNTER)) | (0xf << shift_of(Cqe64::OPCODE));
const RESP_SEND_BITS: u32 = RESP_SEND << shift_of(Cqe64::OPCODE);
const REQ_BITS: u32 = REQ << shift_of(Cqe64::OPCODE);
/// The bits a receive CQE's last dword is compared on: counter, opcode and owner.
const COUNTER_OPCODE_OWNER: u32 = COUNTER_AND_OPCODE | (1 << shift_of(Cqe64::OWNER));
const _: () = assert!(dword_of(Cqe64::OPCODE) == CQE_WQE_COUNTER);
/// Flow table action bit: forward to the destination list.
const ACTION_FWD: u16 = 0x4;
/// Tags telling pools apart, so a packet of one pool cannot be sent from another.
static NEXT_POOL: AtomicU32 = AtomicU32::new(1);

/// Fixed-size buffers in one registered region, and a stack of the free ones.
struct Pool {
    region: Region,
    base: u64,
    /// Each buffer's address as a WQE holds it (big-endian), so posting a buffer is one load
    /// and one store.
    wire: Box<[u64]>,
    lkey: u32,
    buf_size: u32,
    count: u32,
    tag: u32,
    /// The free buffers' ids.
    free: Vec<Id>,
}

/// The send side: ring, doorbell record, CQ, and the buffer in each outstanding slot.
struct Tx {
    sqn: u32,
    /// Word access to `ring` (valid while `ring` is held).
    wqes: Ring<WQEBB>,
    ring: DmaBuf,
    dbrec: DmaBuf,
    /// Word access to `dbrec` (valid while it is held).
    record: Ring<8>,
    cq: Cq,
    mask: u32,
    /// See [`run_mask`].
    run_mask: u32,
    /// WQEs posted and reaped (free-running).
    pi: u32,
    ci: u32,
    /// The id of the buffer in each slot.
    slots: Box<[Id]>,
    doorbell: SendDoorbell,
    inline_l2: bool,
    /// [`EthConfig::signal_every`].
    every: u32,
    /// The second dword of every WQE's control segment (SQ number and segment count), the
    /// doorbell's low half.
    ctrl_dw1: u32,
}

/// Copies the frame's first 18 bytes into the WQE at byte `at` of `ring`: two in the Ethernet
/// segment, sixteen in the next unit.
fn inline_header(ring: &DmaBuf, pool: &Pool, p: &Packet, at: usize) {
    let mut hdr = [0u8; INLINE_L2];
    pool.region
        .slice((p.index * pool.buf_size) as usize, INLINE_L2)
        .read_bytes(0, &mut hdr);
    ring.slice(at + 16 + 14, 2).write_bytes(0, &hdr[..2]);
    ring.slice(at + 32, 16).write_bytes(0, &hdr[2..]);
}

impl Pool {
    /// Buffer `index`'s id.
    fn id(&self, index: u32) -> Id {
        u64::from(index) | (u64::from(self.tag) << 32)
    }

    /// The address, in the device's byte order, of the buffer with id `id`, from the pool's
    /// `wire` table (passed as a local, so hot loops keep it in a register).
    #[inline(always)]
    fn wire(wire: &[u64], id: Id) -> u64 {
        let index = id as u32 as usize;
        debug_assert!(index < wire.len());
        // SAFETY: every id the pool hands out, keeps free or finds in a handle with its tag
        // has an index below `count`, the table's length (see `EthQueues::build`).
        unsafe { *wire.get_unchecked(index) }
    }
}

impl Tx {
    /// The error an unexpected send CQE stands for.
    #[cold]
    fn error<Br: Barriers>(&self, opcode: u32, wqe_counter: u16) -> Error {
        match self.cq.decode::<Br>().map(|c| c.status) {
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

/// The receive side.
struct Rx {
    rqn: u32,
    /// Word access to `ring` (valid while `ring` is held).
    wqes: Ring<RQ_STRIDE>,
    ring: DmaBuf,
    dbrec: DmaBuf,
    /// Word access to `dbrec` (valid while it is held).
    record: Ring<8>,
    cq: Cq,
    mask: u32,
    /// See [`run_mask`].
    run_mask: u32,
    pi: u32,
    ci: u32,
    /// The id of the buffer in each slot.
    slots: Box<[Id]>,
}

impl Rx {
    /// The error an unexpected receive CQE stands for; `next` says it names the next posted
    /// WQE (a receive error for any other is a bad value, not that WQE's failure).
    #[cold]
    fn error<Br: Barriers>(
        &self,
        opcode: u32,
        wqe_counter: u16,
        len: u32,
        buf_size: u32,
        next: bool,
    ) -> Error {
        if opcode == u32::from(CqeOpcode::RespErr.raw()) && next {
            if let Some(Err(error)) = self.cq.decode::<Br>().map(|c| c.status) {
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

/// Device objects beyond the queues: transmit and receive interfaces and steering.
struct Objects {
    tisn: u32,
    tirn: u32,
    table: u32,
    group: u32,
    entries: u32,
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

/// An Ethernet SQ and RQ with their CQs, steering and buffer pool.
pub struct EthQueues {
    pool: Pool,
    tx: Tx,
    rx: Rx,
    objects: Objects,
    counters: EthCounters,
}

/// What [`EthQueues::create`] has made so far, undone in reverse on failure.
enum Made {
    Dma(DmaBuf),
    Region(Region),
    Cq(Cq),
    Tis(u32),
    Sq(u32),
    Rq(u32),
    Tir(u32),
    Table(u32),
    Group(u32, u32),
    Fte(u32, u32),
}

fn undo<B: Backend>(hca: &mut Hca<B>, made: Vec<Made>) {
    for m in made.into_iter().rev() {
        // Best effort: memory is freed only once the object using it is gone.
        let ok = match m {
            Made::Dma(d) => {
                hca.backend().dma().free(d);
                true
            }
            Made::Region(r) => r.deregister(hca).is_ok(),
            Made::Cq(c) => c.destroy(hca).is_ok(),
            Made::Tis(n) => hca.run::<DestroyTis>(0, |i| i.set_tisn(n)).is_ok(),
            Made::Sq(n) => hca.run::<DestroySq>(0, |i| i.set_sqn(n)).is_ok(),
            Made::Rq(n) => hca.run::<DestroyRq>(0, |i| i.set_rqn(n)).is_ok(),
            Made::Tir(n) => hca.run::<DestroyTir>(0, |i| i.set_tirn(n)).is_ok(),
            Made::Table(t) => destroy_table(hca, t).is_ok(),
            Made::Group(t, g) => destroy_group(hca, t, g).is_ok(),
            Made::Fte(t, k) => delete_fte(hca, t, k).is_ok(),
        };
        if !ok {
            log::warn!("eth: cleanup after a failed create left a device object behind");
            return;
        }
    }
}

fn destroy_table<B: Backend>(hca: &mut Hca<B>, table: u32) -> Result<()> {
    hca.run::<DestroyFlowTable>(0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
    })
    .map(drop)
}

fn destroy_group<B: Backend>(hca: &mut Hca<B>, table: u32, group: u32) -> Result<()> {
    hca.run::<DestroyFlowGroup>(0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_group_id(group);
    })
    .map(drop)
}

fn delete_fte<B: Backend>(hca: &mut Hca<B>, table: u32, index: u32) -> Result<()> {
    hca.run::<DeleteFte>(0, |i| {
        i.set_table_type(FlowTableType::NicRx);
        i.set_table_id(table);
        i.set_flow_index(index);
    })
    .map(drop)
}

/// Allocates a work queue's ring (whole 4 KiB pages) and its doorbell record, onto the undo
/// list; returns the ring's page addresses and the record's address.
fn ring_and_record<B: Backend>(
    hca: &Hca<B>,
    bytes: usize,
    made: &mut Vec<Made>,
) -> Result<(Vec<u64>, u64)> {
    let ring = hca.backend().dma().alloc(bytes.max(4096), 4096)?;
    let pages = (0..ring.len() / 4096)
        .map(|p| ring.iova() + (p * 4096) as u64)
        .collect();
    made.push(Made::Dma(ring));
    let record = hca.backend().dma().alloc(64, 64)?;
    let dbr = record.iova();
    made.push(Made::Dma(record));
    Ok((pages, dbr))
}

/// 16-byte units in a send WQE: control, Ethernet and data segments, and one more for the
/// inline header.
fn ds(inline_l2: bool) -> u8 {
    if inline_l2 {
        4
    } else {
        3
    }
}

fn invalid(command: &'static str, what: String) -> Error {
    Error::BadDeviceValue { command, what }
}

impl EthQueues {
    /// Creates the queues, their CQs (completion events to the HCA's EQ), a TIS and a TIR in
    /// the HCA's transport domain, a NIC receive root flow table steering `config.macs` to the
    /// TIR, and the buffer pool; fills the RQ. On failure everything made so far is undone.
    pub fn create<B: Backend>(hca: &mut Hca<B>, config: &EthConfig) -> Result<EthQueues> {
        let mut made = Vec::new();
        match Self::build(hca, config, &mut made) {
            Ok(q) => Ok(q),
            Err(e) => {
                undo(hca, made);
                Err(e)
            }
        }
    }

    fn check(config: &EthConfig) -> Result<()> {
        let bad = |what: String| Err(invalid("eth config", what));
        let sq = 1u32 << config.log_sq_size.min(31);
        if !(1..=15).contains(&config.log_sq_size) || !(1..=15).contains(&config.log_rq_size) {
            return bad("log_sq_size and log_rq_size must be 1..=15".into());
        }
        let every = u32::from(config.signal_every);
        if !every.is_power_of_two() || every > sq {
            return bad(format!(
                "signal_every {every} must be a power of two no larger than the SQ ({sq})"
            ));
        }
        if config.buf_size < 64 || config.buf_size > 1 << 16 || config.buffers == 0 {
            return bad(format!(
                "{} buffers of {} bytes (64..=65536 bytes each, at least one)",
                config.buffers, config.buf_size
            ));
        }
        if config.macs.len() > 1 << 16 {
            return bad(format!("{} MACs (at most 65536)", config.macs.len()));
        }
        Ok(())
    }

    fn build<B: Backend>(
        hca: &mut Hca<B>,
        config: &EthConfig,
        made: &mut Vec<Made>,
    ) -> Result<EthQueues> {
        Self::check(config)?;
        let (pd, uar, td, eqn) = {
            let info = hca.info();
            (info.pd, info.uar, info.transport_domain, info.eqn)
        };

        // The buffer pool.
        let bytes = config.buffers as usize * config.buf_size as usize;
        let region = Region::register(
            hca,
            bytes,
            Access {
                local_write: true,
                ..Access::default()
            },
        )?;
        let (base, lkey) = (region.addr(), region.lkey());
        made.push(Made::Region(region));

        // Transmit: TIS, CQ, SQ (RST → RDY).
        let out = hca.run::<CreateTis>(0, |i| i.ctx_mut().set_transport_domain(td))?;
        let tisn = CreateTisOut::new_checked(&out[..])?.tisn();
        made.push(Made::Tis(tisn));
        let tx_cq = Cq::create(hca, config.log_sq_size, eqn)?;
        let tx_cqn = tx_cq.cqn();
        made.push(Made::Cq(tx_cq));
        let sq_entries = 1usize << config.log_sq_size;
        let (sq_pages, sq_dbr) = ring_and_record(hca, sq_entries * WQEBB, made)?;
        let out = hca.run_extra::<CreateSq>(0, sq_pages.len() * 8, 0, |i| {
            let mut c = i.ctx_mut();
            c.set_state(SqState::Rst);
            c.set_cqn(tx_cqn);
            c.set_flush_in_error_en(true);
            c.set_tis_lst_sz(1);
            c.set_tis_num_0(tisn);
            let mut w = c.wq_mut();
            w.set_wq_type(WqType::Cyclic);
            w.set_pd(pd);
            w.set_uar_page(uar);
            w.set_dbr_addr(sq_dbr);
            w.set_log_wq_stride(6);
            w.set_log_wq_pg_sz(0);
            w.set_log_wq_sz(config.log_sq_size);
            // The page list trails the input, past the end of the nested wq view.
            let raw = i.storage_mut();
            for (k, p) in sq_pages.iter().enumerate() {
                raw.write_be64(WQ_PAS + k * 8, *p);
            }
        })?;
        let sqn = CreateSqOut::new_checked(&out[..])?.sqn();
        made.push(Made::Sq(sqn));
        hca.run::<ModifySq>(0, |i| {
            i.set_sqn(sqn);
            i.set_sq_state(SqState::Rst);
            i.ctx_mut().set_state(SqState::Rdy);
        })?;

        // Receive: CQ, RQ (RST → RDY), TIR.
        let rx_cq = Cq::create(hca, config.log_rq_size, eqn)?;
        let rx_cqn = rx_cq.cqn();
        made.push(Made::Cq(rx_cq));
        let rq_entries = 1usize << config.log_rq_size;
        let (rq_pages, rq_dbr) = ring_and_record(hca, rq_entries * RQ_STRIDE, made)?;
        let out = hca.run_extra::<CreateRq>(0, rq_pages.len() * 8, 0, |i| {
            let mut c = i.ctx_mut();
            c.set_state(RqState::Rst);
            c.set_mem_rq_type(RqMemType::MemoryRqInline);
            c.set_cqn(rx_cqn);
            let mut w = c.wq_mut();
            w.set_wq_type(WqType::Cyclic);
            w.set_pd(pd);
            w.set_dbr_addr(rq_dbr);
            w.set_log_wq_stride(RQ_STRIDE.trailing_zeros() as u8);
            w.set_log_wq_pg_sz(0);
            w.set_log_wq_sz(config.log_rq_size);
            // The page list trails the input, past the end of the nested wq view.
            let raw = i.storage_mut();
            for (k, p) in rq_pages.iter().enumerate() {
                raw.write_be64(WQ_PAS + k * 8, *p);
            }
        })?;
        let rqn = CreateRqOut::new_checked(&out[..])?.rqn();
        made.push(Made::Rq(rqn));
        hca.run::<ModifyRq>(0, |i| {
            i.set_rqn(rqn);
            i.set_rq_state(RqState::Rst);
            i.ctx_mut().set_state(RqState::Rdy);
        })?;
        let out = hca.run::<CreateTir>(0, |i| {
            let mut c = i.ctx_mut();
            c.set_transport_domain(td);
            c.set_disp_type(TircDispType::Direct);
            c.set_inline_rqn(rqn);
        })?;
        let tirn = CreateTirOut::new_checked(&out[..])?.tirn();
        made.push(Made::Tir(tirn));

        // Steering: a root table with one group matching on the destination MAC (or on
        // nothing, when every frame is wanted) and an entry per MAC forwarding to the TIR.
        let entries = config.macs.len().max(1) as u32;
        let log_size = entries.next_power_of_two().trailing_zeros() as u8;
        let out = hca.run::<CreateFlowTable>(0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.flow_table_context_mut().set_log_size(log_size);
        })?;
        let table = CreateFlowTableOut::new_checked(&out[..])?.table_id();
        made.push(Made::Table(table));
        let by_mac = !config.macs.is_empty();
        let out = hca.run::<CreateFlowGroup>(0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(table);
            i.set_start_flow_index(0);
            i.set_end_flow_index(entries - 1);
            if by_mac {
                i.set_match_criteria_enable(1); // outer headers
                let mut c = i.match_criteria_mut();
                let mut h = c.outer_headers_mut();
                h.set_dmac_47_16(u32::MAX);
                h.set_dmac_15_0(u16::MAX);
            }
        })?;
        let group = CreateFlowGroupOut::new_checked(&out[..])?.group_id();
        made.push(Made::Group(table, group));
        for index in 0..entries {
            let mac = config.macs.get(index as usize).copied();
            hca.run_extra::<SetFte>(0, 16, 0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(table);
                i.set_flow_index(index);
                let mut f = i.flow_context_mut();
                f.set_group_id(group);
                f.set_action(ACTION_FWD);
                f.set_destination_list_size(1);
                if let Some(mac) = mac {
                    let mut v = f.match_value_mut();
                    let mut h = v.outer_headers_mut();
                    h.set_dmac_47_16(u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]));
                    h.set_dmac_15_0(u16::from_be_bytes([mac[4], mac[5]]));
                }
                // The destination list trails the input, past the nested flow context view.
                let raw = i.storage_mut();
                let mut d = DestFormatStruct::new_unchecked(&mut raw[FTE_DEST..FTE_DEST + 8]);
                d.set_destination_type(FlowDestinationType::Tir);
                d.set_destination_id(tirn);
            })?;
            made.push(Made::Fte(table, index));
        }
        hca.run::<SetFlowTableRoot>(0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(table);
        })?;

        // Everything exists: take the resources back from the undo list.
        let mut dma = Vec::new();
        let (mut region, mut cqs) = (None, Vec::new());
        for m in made.drain(..) {
            match m {
                Made::Dma(d) => dma.push(d),
                Made::Region(r) => region = Some(r),
                Made::Cq(c) => cqs.push(c),
                _ => {}
            }
        }
        let [sq_ring, sq_dbrec, rq_ring, rq_dbrec]: [DmaBuf; 4] = dma
            .try_into()
            .unwrap_or_else(|_| unreachable!("four DMA buffers were made"));
        let [tx_cq, rx_cq]: [Cq; 2] = cqs
            .try_into()
            .unwrap_or_else(|_| unreachable!("two CQs were made"));
        let region = region.unwrap_or_else(|| unreachable!("the pool was registered"));

        let tag = NEXT_POOL.fetch_add(1, Ordering::Relaxed);
        let size = u64::from(config.buf_size);
        let mut pool = Pool {
            region,
            base,
            // One entry per buffer: `Pool::wire` relies on it.
            wire: (0..u64::from(config.buffers))
                .map(|i| (base + i * size).to_be())
                .collect(),
            lkey,
            buf_size: config.buf_size,
            count: config.buffers,
            tag,
            free: Vec::new(),
        };
        pool.free = (0..config.buffers).rev().map(|i| pool.id(i)).collect();
        let mut q = EthQueues {
            tx: Tx {
                sqn,
                // SAFETY: the queues hold the ring until `destroy`, and the Ring goes with it.
                wqes: unsafe { Ring::over(&sq_ring, sq_entries) },
                // SAFETY: as for the ring.
                record: unsafe { Ring::over(&sq_dbrec, 1) },
                ring: sq_ring,
                dbrec: sq_dbrec,
                cq: tx_cq,
                mask: sq_entries as u32 - 1,
                run_mask: run_mask(sq_entries as u32 - 1),
                pi: 0,
                ci: 0,
                slots: vec![0; sq_entries].into_boxed_slice(),
                doorbell: SendDoorbell::new(uar),
                inline_l2: config.inline_l2,
                every: u32::from(config.signal_every),
                ctrl_dw1: (sqn << shift_of(WqeCtrlSeg::QPN))
                    | (u32::from(ds(config.inline_l2)) << shift_of(WqeCtrlSeg::DS)),
            },
            rx: Rx {
                rqn,
                // SAFETY: as for the SQ.
                wqes: unsafe { Ring::over(&rq_ring, rq_entries) },
                // SAFETY: as for the ring.
                record: unsafe { Ring::over(&rq_dbrec, 1) },
                ring: rq_ring,
                dbrec: rq_dbrec,
                cq: rx_cq,
                mask: rq_entries as u32 - 1,
                run_mask: run_mask(rq_entries as u32 - 1),
                pi: 0,
                ci: 0,
                slots: vec![0; rq_entries].into_boxed_slice(),
            },
            objects: Objects {
                tisn,
                tirn,
                table,
                group,
                entries,
            },
            pool,
            counters: EthCounters::default(),
        };
        q.prefill(config.signal_every);
        q.refill::<B>(0);
        Ok(q)
    }

    /// Writes the parts of every WQE that never change.
    fn prefill(&mut self, signal_every: u16) {
        let every = u32::from(signal_every);
        let ds = ds(self.tx.inline_l2);
        for slot in 0..=self.tx.mask {
            let at = slot as usize * WQEBB;
            let mut ctrl = WqeCtrlSeg::new_unchecked(self.tx.ring.slice(at, 16));
            ctrl.set_opcode(SendOpcode::Send);
            ctrl.set_qpn(self.tx.sqn);
            ctrl.set_ds(ds);
            ctrl.set_ce(if slot % every == every - 1 {
                WqeCompletionMode::CqUpdate
            } else {
                WqeCompletionMode::OnError
            });
            if self.tx.inline_l2 {
                WqeEthSeg::new_unchecked(self.tx.ring.slice(at + 16, 16))
                    .set_inline_hdr_sz(INLINE_L2 as u16);
            }
            let data_at = at + 16 * (ds as usize - 1);
            WqeDataSeg::new_unchecked(self.tx.ring.slice(data_at, 16)).set_lkey(self.pool.lkey);
        }
        for slot in 0..=self.rx.mask {
            let mut d =
                WqeDataSeg::new_unchecked(self.rx.ring.slice(slot as usize * RQ_STRIDE, 16));
            d.set_byte_count(self.pool.buf_size);
            d.set_lkey(self.pool.lkey);
        }
    }

    /// The SQ number.
    pub fn sqn(&self) -> u32 {
        self.tx.sqn
    }

    /// The RQ number.
    pub fn rqn(&self) -> u32 {
        self.rx.rqn
    }

    /// The TIR the flow table forwards to.
    pub fn tirn(&self) -> u32 {
        self.objects.tirn
    }

    /// Buffers in the pool now (not posted, sent or handed out).
    pub fn free_buffers(&self) -> usize {
        self.pool.free.len()
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

    /// Bytes per buffer.
    pub fn buf_size(&self) -> usize {
        self.pool.buf_size as usize
    }

    /// A free buffer from the pool, with length 0.
    pub fn alloc(&mut self) -> Option<Packet> {
        self.pool.free.pop().map(|id| Packet::from_id(id, 0))
    }

    /// Moves up to `n` free buffers into `out`; returns how many.
    pub fn alloc_batch(&mut self, out: &mut Vec<Packet>, n: usize) -> usize {
        let take = n.min(self.pool.free.len());
        let from = self.pool.free.len() - take;
        out.extend(
            self.pool
                .free
                .drain(from..)
                .map(|id| Packet::from_id(id, 0)),
        );
        take
    }

    /// Gives a buffer back to the pool.
    ///
    /// # Panics
    ///
    /// If the packet belongs to another pool.
    pub fn free(&mut self, p: Packet) {
        self.own(&p);
        self.pool.free.push(p.id());
    }

    /// Gives every buffer in `pkts` back to the pool.
    pub fn free_batch(&mut self, pkts: &mut Vec<Packet>) {
        for p in pkts.drain(..) {
            self.free(p);
        }
    }

    fn own(&self, p: &Packet) {
        assert!(
            p.pool == self.pool.tag && p.index < self.pool.count,
            "packet of another pool"
        );
    }

    /// The packet's frame (its first `len` bytes).
    ///
    /// # Panics
    ///
    /// If the packet belongs to another pool.
    pub fn data(&self, p: &Packet) -> DeviceBytes<'_> {
        self.own(p);
        let len = (p.len.min(self.pool.buf_size)) as usize;
        self.pool
            .region
            .slice((p.index * self.pool.buf_size) as usize, len)
    }

    /// Writes `frame` into the packet's buffer and sets its length.
    ///
    /// # Panics
    ///
    /// If the packet belongs to another pool.
    pub fn write(&mut self, p: &mut Packet, frame: &[u8]) -> Result<()> {
        self.own(p);
        if frame.len() > self.pool.buf_size as usize {
            return Err(invalid(
                "eth write",
                format!(
                    "{}-byte frame in a {}-byte buffer",
                    frame.len(),
                    self.pool.buf_size
                ),
            ));
        }
        self.pool
            .region
            .slice((p.index * self.pool.buf_size) as usize, frame.len())
            .write_bytes(0, frame);
        p.len = frame.len() as u32;
        Ok(())
    }

    /// Reaps send completions (returning sent buffers to the pool), then sends as many of
    /// `pkts` as the SQ has room for, from the front, with one doorbell. Sent packets leave
    /// `pkts`. Returns how many were sent.
    ///
    /// Errors: a send error CQE (the SQ is then in ERR; its buffers still come back), a CQE
    /// naming a WQE that is not outstanding, or a packet that is not sendable (another pool's,
    /// empty, or longer than a buffer); such a packet stays at the front of `pkts`, after the
    /// ones before it were sent.
    #[inline(never)]
    pub fn tx_batch<B: Backend>(&mut self, be: &B, pkts: &mut Vec<Packet>) -> Result<usize> {
        if let Err(e) = self.reap_tx::<B>() {
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
            // The packets' handles end here: their buffers belong to the SQ now.
            if sent == pkts.len() {
                pkts.clear();
            } else {
                pkts.drain(..sent);
            }
            let tx = &mut self.tx;
            // The last WQE's first 8 bytes: as `post` and `prefill` wrote them.
            let first8 =
                (u64::from(ctrl_dw0(tx.pi.wrapping_sub(1))) << 32) | u64::from(tx.ctrl_dw1);
            tx.doorbell.ring_word(be, tx.record, tx.pi as u16, first8);
        }
        if sent < n {
            let p = &pkts[0];
            let min = if self.tx.inline_l2 { INLINE_L2 } else { 1 };
            return Err(invalid(
                "tx_batch",
                format!(
                    "packet {} of {} bytes cannot be sent (pool {} of {}, {}..={} bytes)",
                    p.index, p.len, p.pool, self.pool.tag, min, self.pool.buf_size
                ),
            ));
        }
        Ok(sent)
    }

    /// Writes a WQE for each of `pkts` in turn, up to the first that is not sendable; returns
    /// how many. The caller checked that the SQ has room for all of them.
    #[inline(always)]
    fn post<const INLINE: bool>(&mut self, pkts: &[Packet]) -> usize {
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
    fn post_more<const INLINE: bool>(&mut self, pkts: &[Packet]) -> usize {
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
    fn post_run<const INLINE: bool>(&mut self, pkts: &[Packet]) -> (usize, bool) {
        let (tx, pool) = (&mut self.tx, &self.pool);
        let (tag, buf_size, wire) = (pool.tag, pool.buf_size, &pool.wire[..]);
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
            // Handles are made only by this pool with in-range indices, so the tag vouches
            // for the index; the length is the caller's.
            if p.pool != tag || p.len.wrapping_sub(min) > buf_size - min {
                break;
            }
            ring.write32_raw::<CTRL_DW0>(k, ctrl);
            ctrl = ctrl.wrapping_add(CTRL_INDEX_ONE);
            if INLINE {
                let addr = pool.base + u64::from(p.index) * u64::from(buf_size);
                let at = (pi.wrapping_add(k as u32) & tx.mask) as usize * WQEBB;
                inline_header(&tx.ring, pool, p, at);
                ring.write32::<{ DATA_INLINE + DATA_LEN }>(k, p.len - INLINE_L2 as u32);
                let addr = (addr + INLINE_L2 as u64).to_be();
                ring.write64_raw::<{ DATA_INLINE + DATA_ADDR }>(k, addr);
            } else {
                ring.write32::<{ DATA_PLAIN + DATA_LEN }>(k, p.len);
                let addr = Pool::wire(wire, p.id());
                ring.write64_raw::<{ DATA_PLAIN + DATA_ADDR }>(k, addr);
            }
            slots[k] = p.id();
        }
        // How many were written, as the index in `ctrl` counted them (no carry, see
        // `run_left`).
        let got = (ctrl.wrapping_sub(first_ctrl) / CTRL_INDEX_ONE) as usize;
        tx.pi = pi.wrapping_add(got as u32);
        (got, got < run)
    }

    /// Returns the buffers of sent packets to the pool, one send CQE at a time.
    #[inline(always)]
    fn reap_tx<B: Backend>(&mut self) -> Result<()> {
        let tx = &mut self.tx;
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
                self.pool
                    .free
                    .extend_from_slice(&tx.slots[first..first + every as usize]);
                tx.ci = tx.ci.wrapping_add(every);
                cur.advance();
                continue;
            }
            let wqe_counter = (word >> shift_of(Cqe64::WQE_COUNTER)) as u16;
            let opcode = (word >> shift_of(Cqe64::OPCODE)) & 0xf;
            let outstanding = tx.pi.wrapping_sub(tx.ci);
            let done = u32::from(wqe_counter.wrapping_sub(tx.ci as u16)) + 1;
            if done > outstanding {
                tx.cq.commit::<B>(cur);
                return Err(invalid(
                    "send cqe",
                    format!(
                        "WQE {wqe_counter} is not outstanding ({outstanding} from {})",
                        tx.ci as u16
                    ),
                ));
            }
            if opcode != REQ && failure.is_none() {
                tx.cq.commit::<B>(cur);
                failure = Some(tx.error::<B::Barriers>(opcode, wqe_counter));
            }
            // The buffers of WQEs ci ..= wqe_counter, in one or two runs of the slot table.
            let first = (tx.ci & tx.mask) as usize;
            let end = first + done as usize;
            let size = tx.slots.len();
            if end <= size {
                self.pool.free.extend_from_slice(&tx.slots[first..end]);
            } else {
                self.pool.free.extend_from_slice(&tx.slots[first..]);
                self.pool.free.extend_from_slice(&tx.slots[..end - size]);
            }
            tx.ci = tx.ci.wrapping_add(done);
            cur.advance();
        }
        tx.cq.commit::<B>(cur);
        failure.map_or(Ok(()), Err)
    }

    /// Moves up to `max` received packets into `out` (in arrival order), then refills the RQ
    /// from the pool with one doorbell record write. Returns how many were received.
    ///
    /// Errors: a receive error CQE (its buffer returns to the pool), or a CQE the driver cannot
    /// trust (not the next posted WQE, or more bytes than a buffer holds).
    #[inline(never)]
    pub fn rx_batch<B: Backend>(
        &mut self,
        _be: &B,
        out: &mut Vec<Packet>,
        max: usize,
    ) -> Result<usize> {
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
        let (n, mut cur) = if posted == self.rx.mask + 1 && self.pool.free.len() >= want {
            self.receive::<B::Barriers, true>(room)
        } else {
            self.receive::<B::Barriers, false>(room)
        };
        // SAFETY: `receive` initialised the first n slots of `room`, the reserved ones past
        // the old length.
        unsafe { out.set_len(out.len() + n) };
        // Short of `max`: usually because no more CQEs are handed over; otherwise the next
        // one is looked at again (it may have just arrived), and refused if bad.
        let mut error = None;
        if n < max && cur.ready::<B::Barriers>() {
            (error, cur) = self.check_rx::<B>(cur);
        }
        self.rx.cq.commit::<B>(cur);
        self.refill::<B>(pi);
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
        room: &mut [MaybeUninit<Packet>],
    ) -> (usize, Cursor) {
        let mut cur = self.rx.cq.cursor();
        let want = room.len();
        // With REPOST, fresh buffers come from the top of the free stack.
        let from = self.pool.free.len() - if REPOST { want } else { 0 };
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
            let free = &mut self.pool.free;
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
        room: &mut [MaybeUninit<Packet>],
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
        room: &mut [MaybeUninit<Packet>],
        fresh: usize,
    ) -> (usize, bool) {
        let (rx, pool) = (&mut self.rx, &self.pool);
        let (buf_size, wire) = (pool.buf_size, &pool.wire[..]);
        let ci = rx.ci;
        // The CQ has the RQ's size and its consumer index is ci, so the RQ's end is the CQ's.
        debug_assert!(cur.until_wrap() == rx.wqes.until_wrap(ci));
        let run = room.len().min(run_left(rx.run_mask, ci));
        let (cqes, wqes) = (cur.run(run), rx.wqes.run(ci, run));
        let first = (ci & rx.mask) as usize;
        let slots = &mut rx.slots[first..first + run];
        let room = &mut room[..run];
        let fresh = if REPOST {
            &pool.free[fresh..fresh + run]
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
            room[k].write(Packet::from_id(slots[k], len));
            if REPOST {
                slots[k] = fresh[k];
                wqes.write64_raw::<DATA_ADDR>(k, Pool::wire(wire, fresh[k]));
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
    fn check_rx<B: Backend>(&mut self, mut cur: Cursor) -> (Option<Error>, Cursor) {
        let rx = &mut self.rx;
        let word = cur.field::<CQE_WQE_COUNTER>();
        let len = cur.field::<CQE_BYTE_CNT>();
        let wqe_counter = (word >> shift_of(Cqe64::WQE_COUNTER)) as u16;
        let opcode = (word >> shift_of(Cqe64::OPCODE)) & 0xf;
        let posted = rx.pi != rx.ci;
        let next = posted && wqe_counter == rx.ci as u16;
        if next && opcode == RESP_SEND && len <= self.pool.buf_size {
            return (None, cur);
        }
        // The packets before it are taken: publish them, so the CQ's own decoding of the
        // error CQE looks at this one.
        rx.cq.commit::<B>(cur);
        let error = rx.error::<B::Barriers>(opcode, wqe_counter, len, self.pool.buf_size, next);
        if opcode == u32::from(CqeOpcode::RespErr.raw()) && next {
            let id = rx.slots[(rx.ci & rx.mask) as usize];
            cur.advance();
            rx.ci = rx.ci.wrapping_add(1);
            self.pool.free.push(id);
        }
        (Some(error), cur)
    }

    /// Posts free buffers to the RQ until it is full or the pool is empty; then, if the RQ's
    /// producer counter moved since `pi0`, writes its doorbell record once.
    #[inline(always)]
    fn refill<B: Backend>(&mut self, pi0: u32) {
        let rx = &mut self.rx;
        let room = (rx.mask + 1) - rx.pi.wrapping_sub(rx.ci);
        let take = (room as usize).min(self.pool.free.len());
        if take > 0 {
            let from = self.pool.free.len() - take;
            let (wqes, mask, slots) = (rx.wqes, rx.mask, &mut rx.slots[..]);
            let mut pi = rx.pi;
            for &id in &self.pool.free[from..] {
                wqes.write64_raw::<DATA_ADDR>(pi, Pool::wire(&self.pool.wire, id));
                // SAFETY: masked to the ring; `slots` has one entry per slot.
                unsafe { *slots.get_unchecked_mut((pi & mask) as usize) = id };
                pi = pi.wrapping_add(1);
            }
            rx.pi = pi;
            self.pool.free.truncate(from);
        }
        if rx.pi != pi0 {
            B::Barriers::to_device();
            rx.record
                .write32::<RECEIVE_COUNTER_DWORD>(0, u32::from(rx.pi as u16));
        }
    }

    /// Tears everything down: steering, TIR, RQ, SQ, TIS, CQs, rings and pool. Buffers still
    /// in the queues are dropped with them. On failure the rest is left in place (the device
    /// may still use it, so its memory is not freed) and the error returned.
    pub fn destroy<B: Backend>(self, hca: &mut Hca<B>) -> Result<()> {
        let EthQueues {
            pool,
            tx,
            rx,
            objects,
            counters: _,
        } = self;
        let o = &objects;
        for k in 0..o.entries {
            delete_fte(hca, o.table, k)?;
        }
        destroy_group(hca, o.table, o.group)?;
        destroy_table(hca, o.table)?;
        hca.run::<DestroyTir>(0, |i| i.set_tirn(o.tirn))?;
        hca.run::<DestroyRq>(0, |i| i.set_rqn(rx.rqn))?;
        rx.cq.destroy(hca).map_err(|(e, _)| e)?;
        hca.run::<DestroySq>(0, |i| i.set_sqn(tx.sqn))?;
        tx.cq.destroy(hca).map_err(|(e, _)| e)?;
        hca.run::<DestroyTis>(0, |i| i.set_tisn(o.tisn))?;
        for d in [tx.ring, tx.dbrec, rx.ring, rx.dbrec] {
            hca.backend().dma().free(d);
        }
        pool.region.deregister(hca).map_err(|(e, _)| e)?;
        Ok(())
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::HcaConfig;
    use mlx5_prm::CqeSyndrome;

    fn eth() -> (Hca<SimBackend>, EthQueues) {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let mut hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
        let q = EthQueues::create(&mut hca, &EthConfig::default()).unwrap();
        (hca, q)
    }

    /// Sends `n` 60-byte packets.
    fn send(hca: &Hca<SimBackend>, q: &mut EthQueues, n: usize) {
        let mut batch = Vec::new();
        q.alloc_batch(&mut batch, n);
        batch.iter_mut().for_each(|p| p.set_len(60));
        assert_eq!(q.tx_batch(hca.backend(), &mut batch).unwrap(), n);
    }

    #[test]
    fn a_receive_cqe_for_the_wrong_wqe_is_refused() {
        let (hca, mut q) = eth();
        q.rx.cq.forge(|c| {
            c.set_opcode(CqeOpcode::RespSend);
            c.set_wqe_counter(5);
            c.set_byte_cnt(60);
        });
        let mut out = Vec::new();
        let e = q.rx_batch(hca.backend(), &mut out, 8).unwrap_err();
        assert!(matches!(e, Error::BadDeviceValue { .. }), "{e}");
        assert!(out.is_empty(), "nothing handed out");
    }

    #[test]
    fn a_receive_cqe_longer_than_the_buffer_is_refused() {
        let (hca, mut q) = eth();
        q.rx.cq.forge(|c| {
            c.set_opcode(CqeOpcode::RespSend);
            c.set_wqe_counter(0);
            c.set_byte_cnt(4096);
        });
        let mut out = Vec::new();
        assert!(q.rx_batch(hca.backend(), &mut out, 8).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn a_send_cqe_for_a_wqe_not_outstanding_is_refused() {
        let (hca, mut q) = eth();
        send(&hca, &mut q, 3); // unsignaled: still outstanding
        let free = q.free_buffers();
        q.tx.cq.forge(|c| {
            c.set_opcode(CqeOpcode::Req);
            c.set_wqe_counter(7);
        });
        let e = q.tx_batch(hca.backend(), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("not outstanding"), "{e}");
        assert_eq!(q.free_buffers(), free, "no buffer freed on a bad CQE");
    }

    #[test]
    fn a_send_error_cqe_is_a_typed_error_and_the_buffers_come_back() {
        let (hca, mut q) = eth();
        send(&hca, &mut q, 3);
        let free = q.free_buffers();
        q.tx.cq.forge(|c| {
            c.set_opcode(CqeOpcode::ReqErr);
            c.set_wqe_counter(2);
            let mut e = mlx5_prm::ErrCqe::new_unchecked(c.storage_mut().sub_mut(0, 64));
            e.set_syndrome(CqeSyndrome::LocalProtErr);
        });
        let e = q.tx_batch(hca.backend(), &mut Vec::new()).unwrap_err();
        match e {
            Error::WorkRequest {
                queue: "sq",
                wqe_counter: 2,
                error,
                ..
            } => assert_eq!(error.syndrome, CqeSyndrome::LocalProtErr.raw()),
            other => panic!("{other}"),
        }
        assert_eq!(q.free_buffers(), free + 3);
    }

    #[test]
    fn the_usual_send_cqe_is_refused_when_its_wqe_was_not_posted() {
        let (hca, mut q) = eth();
        send(&hca, &mut q, 3);
        let free = q.free_buffers();
        // What the fast path expects next (the WQE that asks for a completion, ci +
        // signal_every - 1), but only 3 WQEs are outstanding.
        q.tx.cq.forge(|c| {
            c.set_opcode(CqeOpcode::Req);
            c.set_wqe_counter(31);
        });
        let e = q.tx_batch(hca.backend(), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("not outstanding"), "{e}");
        assert_eq!(q.free_buffers(), free, "no buffer freed on a bad CQE");
        assert_eq!(q.outstanding().0, 3);
    }

    /// A receive CQE `ahead` of the consumer index, for WQE `counter`.
    fn receive_cqe(q: &EthQueues, ahead: u32, counter: u16, opcode: CqeOpcode, len: u32) {
        q.rx.cq.forge_at(ahead, |c| {
            c.set_opcode(opcode);
            c.set_wqe_counter(counter);
            c.set_byte_cnt(len);
            if opcode == CqeOpcode::RespErr {
                let mut e = mlx5_prm::ErrCqe::new_unchecked(c.storage_mut().sub_mut(0, 64));
                e.set_syndrome(CqeSyndrome::LocalLengthErr);
            }
        });
    }

    #[test]
    fn good_packets_before_a_receive_error_are_handed_out_and_its_buffer_comes_back() {
        let (hca, mut q) = eth();
        let free = q.free_buffers();
        receive_cqe(&q, 0, 0, CqeOpcode::RespSend, 60);
        receive_cqe(&q, 1, 1, CqeOpcode::RespSend, 61);
        receive_cqe(&q, 2, 2, CqeOpcode::RespErr, 0);
        let mut out = Vec::new();
        match q.rx_batch(hca.backend(), &mut out, 8).unwrap_err() {
            Error::WorkRequest {
                queue: "rq",
                wqe_counter: 2,
                error,
                ..
            } => assert_eq!(error.syndrome, CqeSyndrome::LocalLengthErr.raw()),
            other => panic!("{other}"),
        }
        assert_eq!(out.iter().map(Packet::len).collect::<Vec<_>>(), [60, 61]);
        // Two buffers handed out; the error CQE's came back; the RQ is full again.
        assert_eq!(q.outstanding().1, 512);
        assert_eq!(q.free_buffers(), free - 2);
        // Past the error CQE: nothing more.
        assert_eq!(q.rx_batch(hca.backend(), &mut out, 8).unwrap(), 0);
    }

    #[test]
    fn a_receive_cqe_with_no_wqe_posted_is_refused_and_frees_nothing() {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let mut hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
        let config = EthConfig {
            buffers: 2,
            ..EthConfig::default()
        };
        let mut q = EthQueues::create(&mut hca, &config).unwrap();
        assert_eq!(q.outstanding().1, 2, "both buffers posted");
        receive_cqe(&q, 0, 0, CqeOpcode::RespSend, 60);
        receive_cqe(&q, 1, 1, CqeOpcode::RespSend, 60);
        let mut out = Vec::new();
        assert_eq!(q.rx_batch(hca.backend(), &mut out, 8).unwrap(), 2);
        assert_eq!(q.outstanding().1, 0, "the pool is empty: nothing posted");
        // A good-looking CQE and a receive error for the WQE that would come next: neither
        // names a posted WQE.
        for opcode in [CqeOpcode::RespSend, CqeOpcode::RespErr] {
            receive_cqe(&q, 0, 2, opcode, 60);
            let e = q.rx_batch(hca.backend(), &mut out, 8).unwrap_err();
            assert!(e.to_string().contains("0 posted"), "{e}");
            assert_eq!(out.len(), 2, "nothing more handed out");
            assert_eq!(q.free_buffers(), 0, "no buffer freed twice");
        }
    }
}
