//! A receive side for the tests, laid out as mlx5e lays out its own: several RQs (one per
//! channel), each with its own CQ and receive buffers, an RQ table over them, TIRs (direct or
//! hashing over the table), and a NIC RX root table whose catch-all entry forwards every frame
//! to one TIR. Frames come in through `Device::receive_frame`, as from the wire.

use super::dp::{Cq, Node};
use super::eth::id_at;
use super::wq::{Wq, WQES};
use mlx5_prm::cmd;
use mlx5_prm::rt::BytesMut;
use mlx5_prm::{
    Cqe64, CqeOpcode, DestFormatStruct, FlowDestinationType, FlowTableType, FteMatchSetLyr24,
    RqState, Rqc, Tirc, TircDispType, TircRxHashFn, WqeDataSeg,
};
use std::cell::Cell;

/// Receive WQEs per RQ (each 64 bytes, one data segment), as [`Wq::create_rq`] makes them.
pub const RQ_SIZE: u16 = WQES;
/// Bytes of each receive buffer.
pub const BUF: u64 = 2048;

/// One RQ and the driver's view of it.
pub struct RxQueue {
    pub rqn: u32,
    pub cq: Cq,
    ring: u64,
    dbr: u64,
    pc: Cell<u16>,
    /// Receive buffers: WQE k of the ring takes buffer k mod RQ_SIZE.
    bufs: u64,
    key: u32,
}

/// The receive side.
pub struct Rx {
    pub n: Node,
    pub td: u32,
    pub rqs: Vec<RxQueue>,
    pub table: u32,
    /// The catch-all group (no criteria) at indices 8..16 of the root table; indices 0..8 are
    /// left for a test's own group.
    pub catch_all: u32,
    entry: Cell<bool>,
}

/// A frame as an RQ received it: which RQ, its CQE and the bytes in the buffer.
pub struct Got {
    pub rq: usize,
    pub cqe: Cqe64<[u8; 64]>,
    pub data: Vec<u8>,
}

impl Rx {
    /// A device with `rqs` RQs in RDY (each with `tweak` applied to its context at
    /// creation), `posted` receive WQEs on each, and an empty root table.
    pub fn new(rqs: usize, posted: u16, tweak: impl Fn(&mut Rqc<&mut [u8]>)) -> Rx {
        let n = Node::inline();
        let td = n.host.alloc_td();
        let queues = (0..rqs).map(|_| rq(&n, &tweak)).collect();
        let table = id_at(
            &n.host
                .run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
                    i.set_table_type(FlowTableType::NicRx);
                    i.flow_table_context_mut().set_log_size(4);
                })
                .ok(),
        );
        let catch_all = group(&n, table, 8, 15, 0, |_| {});
        n.host
            .run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(table);
            })
            .ok();
        let rx = Rx {
            n,
            td,
            rqs: queues,
            table,
            catch_all,
            entry: Cell::new(false),
        };
        for q in 0..rqs {
            rx.post(q, posted);
        }
        rx
    }

    /// Posts `count` receive WQEs on RQ `q`, one buffer of [`BUF`] bytes each.
    pub fn post(&self, q: usize, count: u16) {
        let r = &self.rqs[q];
        for _ in 0..count {
            let pc = r.pc.get();
            let slot = u64::from(pc % RQ_SIZE);
            let mut wqe = [0u8; 64];
            let mut d = WqeDataSeg::new_unchecked(&mut wqe[..16]);
            d.set_byte_count(BUF as u32);
            d.set_lkey(r.key);
            d.set_addr(r.bufs + slot * BUF);
            WqeDataSeg::new_unchecked(&mut wqe[16..32]).set_lkey(0x100);
            self.n.write(r.ring + slot * 64, &wqe);
            r.pc.set(pc.wrapping_add(1));
        }
        self.n.publish(r.dbr, &u32::from(r.pc.get()).to_be_bytes());
    }

    /// An RQ table of `max` entries listing `list` (RQ indices into `self.rqs`).
    pub fn rqt(&self, max: u16, list: &[usize]) -> u32 {
        let r = self
            .n
            .host
            .run::<cmd::CreateRqt>(0, 4 * list.len(), 0, |i| {
                let mut c = i.rqt_context_mut();
                c.set_rqt_max_size(max);
                c.set_rqt_actual_size(list.len() as u16);
                let raw = i.storage_mut();
                for (k, &q) in list.iter().enumerate() {
                    raw.write_be32(0x110 + 4 * k, self.rqs[q].rqn);
                }
            })
            .ok();
        id_at(&r)
    }

    /// MODIFY_RQT: table `rqtn` now lists `list`.
    pub fn modify_rqt(&self, rqtn: u32, list: &[usize]) {
        self.n
            .host
            .run::<cmd::ModifyRqt>(0, 4 * list.len(), 0, |i| {
                i.set_rqtn(rqtn);
                i.bitmask_mut().set_rqn_list(true);
                i.ctx_mut().set_rqt_actual_size(list.len() as u16);
                let raw = i.storage_mut();
                for (k, &q) in list.iter().enumerate() {
                    raw.write_be32(0x110 + 4 * k, self.rqs[q].rqn);
                }
            })
            .ok();
    }

    /// A TIR over RQ table `rqtn` with the hash `hash` sets up in its context.
    pub fn indirect_tir(&self, rqtn: u32, hash: impl FnOnce(&mut Tirc<&mut [u8]>)) -> u32 {
        let r = self
            .n
            .host
            .run::<cmd::CreateTir>(0, 0, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_transport_domain(self.td);
                c.set_disp_type(TircDispType::Indirect);
                c.set_indirect_table(rqtn);
                hash(&mut c);
            })
            .ok();
        id_at(&r)
    }

    /// A direct TIR to RQ `q`, hashing nothing.
    pub fn direct_tir(&self, q: usize) -> u32 {
        let r = self
            .n
            .host
            .run::<cmd::CreateTir>(0, 0, 0, |i| {
                let mut c = i.ctx_mut();
                c.set_transport_domain(self.td);
                c.set_disp_type(TircDispType::Direct);
                c.set_rx_hash_fn(TircRxHashFn::None);
                c.set_inline_rqn(self.rqs[q].rqn);
            })
            .ok();
        id_at(&r)
    }

    /// Points the catch-all entry at TIR `tir` (index 8, flow tag 0x77).
    pub fn steer_all_to(&self, tir: u32) {
        if self.entry.replace(true) {
            self.n
                .host
                .run::<cmd::DeleteFte>(0, 0, 0, |i| {
                    i.set_table_type(FlowTableType::NicRx);
                    i.set_table_id(self.table);
                    i.set_flow_index(8);
                })
                .ok();
        }
        self.entry(self.catch_all, 8, 0x77, tir, |_| {});
    }

    /// An entry at `index` of group `group` forwarding to `tir` with `flow_tag`, its outer
    /// headers' values set by `value`.
    pub fn entry(
        &self,
        group: u32,
        index: u32,
        flow_tag: u32,
        tir: u32,
        value: impl FnOnce(&mut FteMatchSetLyr24<&mut [u8]>),
    ) {
        self.n
            .host
            .run::<cmd::SetFte>(0, 8, 0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(self.table);
                i.set_flow_index(index);
                let mut f = i.flow_context_mut();
                f.set_group_id(group);
                f.set_action(0x4);
                f.set_flow_tag(flow_tag);
                f.set_destination_list_size(1);
                let mut v = f.match_value_mut();
                value(&mut v.outer_headers_mut());
                let raw = i.storage_mut();
                let mut d = DestFormatStruct::new_unchecked(&mut raw[0x340..0x348]);
                d.set_destination_type(FlowDestinationType::Tir);
                d.set_destination_id(tir);
            })
            .ok();
    }

    /// The next frame any RQ completed, checking that only one CQE is waiting.
    #[track_caller]
    pub fn got(&self) -> Got {
        let mut found = None;
        for (q, r) in self.rqs.iter().enumerate() {
            if let Some(e) = r.cq.poll() {
                assert!(found.is_none(), "a second RQ took a frame too");
                found = Some((q, e));
            }
        }
        let (q, e) = found.expect("a CQE on some RQ");
        let cqe = Cqe64::new_unchecked(e);
        assert_eq!(cqe.opcode(), Ok(CqeOpcode::RespSend), "{:02x?}", e);
        let r = &self.rqs[q];
        let slot = u64::from(cqe.wqe_counter() % RQ_SIZE);
        let data = self.n.read(r.bufs + slot * BUF, cqe.byte_cnt() as usize);
        Got { rq: q, cqe, data }
    }

    /// True when no RQ has a CQE waiting.
    pub fn nothing(&self) -> bool {
        self.rqs.iter().all(|r| r.cq.poll().is_none())
    }

    /// MODIFY_RQ of RQ `q`, RDY to RDY, changing the fields `bitmask` selects as `ctx` sets
    /// them.
    pub fn modify_rq(&self, q: usize, bitmask: u64, ctx: impl FnOnce(&mut Rqc<&mut [u8]>)) {
        self.n
            .host
            .run::<cmd::ModifyRq>(0, 0, 0, |i| {
                i.set_rqn(self.rqs[q].rqn);
                i.set_rq_state(RqState::Rdy);
                i.set_modify_bitmask(bitmask);
                let mut c = i.ctx_mut();
                c.set_state(RqState::Rdy);
                ctx(&mut c);
            })
            .ok();
    }

    /// A frame from the wire; true when an RQ took it.
    pub fn receive(&self, frame: &[u8]) -> bool {
        self.n.dev().receive_frame(frame)
    }
}

/// A flow group of `table` over indices `start..=end` with criteria `enable` (the parts of
/// fte_match_param) whose outer headers' mask `mask` sets.
pub fn group(
    n: &Node,
    table: u32,
    start: u32,
    end: u32,
    enable: u8,
    mask: impl FnOnce(&mut FteMatchSetLyr24<&mut [u8]>),
) -> u32 {
    super::be32(
        &n.host
            .run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(table);
                i.set_start_flow_index(start);
                i.set_end_flow_index(end);
                i.set_match_criteria_enable(enable);
                let mut c = i.match_criteria_mut();
                mask(&mut c.outer_headers_mut());
            })
            .ok()
            .out,
        8,
    )
}

/// An RQ in RDY with its own CQ, ring, doorbell record and buffers.
fn rq(n: &Node, tweak: &impl Fn(&mut Rqc<&mut [u8]>)) -> RxQueue {
    let cq = n.cq(7, false);
    let ring = n.alloc(RQ_SIZE as usize * 64);
    let dbr = n.alloc(64);
    let bufs = n.alloc(RQ_SIZE as usize * BUF as usize);
    let key = n.mkey(n.pd, bufs.iova, u64::from(RQ_SIZE) * BUF, "lr,lw");
    let wq = Wq {
        cqn: cq.cqn,
        pd: n.pd,
        dbr: dbr.iova,
        ring: ring.iova,
    };
    let rqn = id_at(&n.host.exec(&wq.create_rq(tweak), 16).ok());
    n.host
        .run::<cmd::ModifyRq>(0, 0, 0, |i| {
            i.set_rqn(rqn);
            i.set_rq_state(RqState::Rst);
            i.ctx_mut().set_state(RqState::Rdy);
        })
        .ok();
    RxQueue {
        rqn,
        cq,
        ring: ring.iova,
        dbr: dbr.iova,
        pc: Cell::new(0),
        bufs: bufs.iova,
        key,
    }
}

/// RFC 1071: the folded ones'-complement sum of big-endian 16-bit words (an odd last byte
/// padded with 0).
pub fn ones(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    for (i, b) in data.iter().enumerate() {
        acc += u64::from(*b) << if i % 2 == 0 { 8 } else { 0 };
    }
    while acc > 0xffff {
        acc = (acc >> 16) + (acc & 0xffff);
    }
    acc as u16
}

/// Frames built by the tests: Ethernet, optional C-tag, IPv4 or IPv6, TCP or UDP.
pub mod frame {
    /// Destination and source MAC of every test frame.
    pub const DMAC: [u8; 6] = [0x02, 0x4d, 0x4c, 0x58, 0x35, 0x00];
    pub const SMAC: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

    /// An L2 header with EtherType `ty`, behind a C-tag with `tci` when given.
    pub fn l2(tci: Option<u16>, ty: u16) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&DMAC);
        f.extend_from_slice(&SMAC);
        if let Some(tci) = tci {
            f.extend_from_slice(&0x8100u16.to_be_bytes());
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&ty.to_be_bytes());
        f
    }

    /// A TCP (proto 6) or UDP (17) header with ports `sport`, `dport`, checksum 0.
    fn l4(proto: u8, sport: u16, dport: u16, payload: usize) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&sport.to_be_bytes());
        h.extend_from_slice(&dport.to_be_bytes());
        if proto == 6 {
            h.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            h.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
            h.extend_from_slice(&[0, 0]);
        }
        h
    }

    /// An IPv4 frame from `src` to `dst` carrying `proto` between the ports, with a right
    /// IPv4 header checksum and `payload` bytes of data.
    pub fn v4(
        tci: Option<u16>,
        proto: u8,
        (src, sport): ([u8; 4], u16),
        (dst, dport): ([u8; 4], u16),
        payload: usize,
    ) -> Vec<u8> {
        let mut f = l2(tci, 0x0800);
        let l4 = l4(proto, sport, dport, payload);
        let total = (20 + l4.len() + payload) as u16;
        let at = f.len();
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[0, 7, 0x40, 0, 64, proto, 0, 0]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        let c = !super::ones(&f[at..at + 20]);
        f[at + 10..at + 12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&l4);
        f.extend((0..payload).map(|i| (i * 13 + 5) as u8));
        f
    }

    /// An IPv6 frame like [`v4`].
    pub fn v6(
        proto: u8,
        (src, sport): ([u8; 16], u16),
        (dst, dport): ([u8; 16], u16),
        payload: usize,
    ) -> Vec<u8> {
        let mut f = l2(None, 0x86dd);
        let l4 = l4(proto, sport, dport, payload);
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&((l4.len() + payload) as u16).to_be_bytes());
        f.extend_from_slice(&[proto, 64]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&l4);
        f.extend((0..payload).map(|i| (i * 13 + 5) as u8));
        f
    }
}
