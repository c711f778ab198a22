//! An Ethernet function for the tests: an SQ and an RQ in RDY, a direct TIR, and a NIC RX root
//! flow table steering destination MACs to the TIR.

use super::dp::{Cq, Node};
use super::wq::Wq;
use mlx5_prm::cmd;
use mlx5_prm::rt::Bytes;
use mlx5_prm::{
    FlowDestinationType, FlowTableType, RqState, SendOpcode, SqState, TircDispType, WqeCtrlSeg,
    WqeDataSeg, WqeEthSeg,
};

/// An L2 header: destination, source, IPv4 ethertype.
pub fn l2(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&dst);
    h.extend_from_slice(&src);
    h.extend_from_slice(&0x0800u16.to_be_bytes());
    h
}

pub fn id_at(r: &super::Reply) -> u32 {
    super::be32(&r.out, 8) & 0xff_ffff
}

/// An Ethernet function: an SQ in RDY, an RQ in RDY behind a direct TIR, and a NIC RX root
/// table with one entry per MAC forwarding to the TIR.
pub struct Eth {
    pub n: Node,
    pub scq: Cq,
    pub rcq: Cq,
    pub sqn: u32,
    pub sq_ring: u64,
    pub sq_dbr: u64,
    pub sq_pc: std::cell::Cell<u16>,
    pub rqn: u32,
    pub rq_ring: u64,
    pub rq_dbr: u64,
    pub rq_pc: std::cell::Cell<u16>,
    /// cs_flags of the Ethernet segments [`Eth::post_send`] writes (0: no offload).
    pub cs_flags: std::cell::Cell<u8>,
    pub buf: u64,
    pub key: u32,
    pub td: u32,
    pub table: u32,
    pub group: u32,
    pub tirn: u32,
}

impl Eth {
    pub fn new(n: Node, macs: &[[u8; 6]]) -> Eth {
        let host = &n.host;
        let td = host.alloc_td();
        let tisn = id_at(
            &host
                .run::<cmd::CreateTis>(0, 0, 0, |i| i.ctx_mut().set_transport_domain(td))
                .ok(),
        );
        let (scq, rcq) = (n.cq(4, false), n.cq(4, false));
        let sq_ring = n.alloc(4096);
        let sq_dbr = n.alloc(64);
        let sq = Wq {
            cqn: scq.cqn,
            pd: n.pd,
            // As mlx5e: the record's base; the send counter is its second dword.
            dbr: sq_dbr.iova,
            ring: sq_ring.iova,
        };
        let buf = sq.create_sq(n.uar, |c| {
            c.set_flush_in_error_en(true);
            c.set_tis_lst_sz(1);
            c.set_tis_num_0(tisn);
        });
        let sqn = id_at(&host.exec(&buf, 16).ok());
        host.run::<cmd::ModifySq>(0, 0, 0, |i| {
            i.set_sqn(sqn);
            i.set_sq_state(SqState::Rst);
            i.ctx_mut().set_state(SqState::Rdy);
        })
        .ok();

        let rq_ring = n.alloc(4096);
        let rq_dbr = n.alloc(64);
        let rq = Wq {
            cqn: rcq.cqn,
            pd: n.pd,
            dbr: rq_dbr.iova,
            ring: rq_ring.iova,
        };
        let rqn = id_at(&host.exec(&rq.create_rq(|_| {}), 16).ok());
        host.run::<cmd::ModifyRq>(0, 0, 0, |i| {
            i.set_rqn(rqn);
            i.set_rq_state(RqState::Rst);
            i.ctx_mut().set_state(RqState::Rdy);
        })
        .ok();
        let tirn = id_at(
            &host
                .run::<cmd::CreateTir>(0, 0, 0, |i| {
                    let mut c = i.ctx_mut();
                    c.set_transport_domain(td);
                    c.set_disp_type(TircDispType::Direct);
                    c.set_inline_rqn(rqn);
                })
                .ok(),
        );
        let table = id_at(
            &host
                .run::<cmd::CreateFlowTable>(0, 0, 0, |i| {
                    i.set_table_type(FlowTableType::NicRx);
                    i.flow_table_context_mut().set_log_size(4);
                })
                .ok(),
        );
        let group = super::be32(
            &host
                .run::<cmd::CreateFlowGroup>(0, 0, 0, |i| {
                    i.set_table_type(FlowTableType::NicRx);
                    i.set_table_id(table);
                    i.set_start_flow_index(0);
                    i.set_end_flow_index(7);
                    i.set_match_criteria_enable(1);
                    let mut h = i.match_criteria_mut();
                    let mut h = h.outer_headers_mut();
                    h.set_dmac_47_16(u32::MAX);
                    h.set_dmac_15_0(u16::MAX);
                })
                .ok()
                .out,
            8,
        );
        host.run::<cmd::SetFlowTableRoot>(0, 0, 0, |i| {
            i.set_table_type(FlowTableType::NicRx);
            i.set_table_id(table);
        })
        .ok();
        let data = n.alloc(1 << 16);
        let key = n.mkey(n.pd, data.iova, 1 << 16, "lr,lw");
        let e = Eth {
            scq,
            rcq,
            sqn,
            sq_ring: sq_ring.iova,
            sq_dbr: sq_dbr.iova,
            sq_pc: Default::default(),
            rqn,
            rq_ring: rq_ring.iova,
            rq_dbr: rq_dbr.iova,
            rq_pc: Default::default(),
            cs_flags: Default::default(),
            buf: data.iova,
            key,
            td,
            table,
            group,
            tirn,
            n,
        };
        for (index, mac) in macs.iter().enumerate() {
            e.add_entry(index as u32, *mac, e.tirn);
        }
        e
    }

    /// A flow entry at `index`: destination MAC `mac` forwards to TIR `tirn`, with flow tag
    /// 0x100 + index.
    pub fn add_entry(&self, index: u32, mac: [u8; 6], tirn: u32) {
        self.n
            .host
            .run::<cmd::SetFte>(0, 8, 0, |i| {
                i.set_table_type(FlowTableType::NicRx);
                i.set_table_id(self.table);
                i.set_flow_index(index);
                let mut f = i.flow_context_mut();
                f.set_group_id(self.group);
                f.set_action(0x4);
                f.set_flow_tag(0x100 + index);
                f.set_destination_list_size(1);
                let mut v = f.match_value_mut();
                let mut h = v.outer_headers_mut();
                h.set_dmac_47_16(mac.read_be32(0));
                h.set_dmac_15_0(u16::from_be_bytes([mac[4], mac[5]]));
                let raw = i.storage_mut();
                let mut d = mlx5_prm::DestFormatStruct::new_unchecked(&mut raw[0x340..0x348]);
                d.set_destination_type(FlowDestinationType::Tir);
                d.set_destination_id(tirn);
            })
            .ok();
    }

    /// Posts a receive buffer of `len` bytes at `buf + at`.
    pub fn post_recv(&self, at: u64, len: u32) {
        let pc = self.rq_pc.get();
        let mut wqe = [0u8; 64];
        let mut d = WqeDataSeg::new_unchecked(&mut wqe[..16]);
        d.set_byte_count(len);
        d.set_lkey(self.key);
        d.set_addr(self.buf + at);
        WqeDataSeg::new_unchecked(&mut wqe[16..32]).set_lkey(0x100);
        self.n.write(self.rq_ring + u64::from(pc % 64) * 64, &wqe);
        self.rq_pc.set(pc + 1);
        self.n
            .publish(self.rq_dbr, &u32::from(pc + 1).to_be_bytes());
    }

    /// Sends a frame: `hdr` inline in the Ethernet segment, then `payload` gathered from the
    /// data buffer at `at`.
    pub fn send(&self, hdr: &[u8], payload_at: u64, payload_len: u32) {
        let first8 = self.post_send(hdr, payload_at, payload_len);
        self.ring_send(first8);
    }

    /// Rings the SQ's doorbell with the first 8 bytes of the last WQE posted.
    pub fn ring_send(&self, first8: u64) {
        self.n
            .dev()
            .write64(self.n.uar as usize * 4096 + 0x800, first8);
    }

    /// Posts the WQE of [`Eth::send`] and publishes it in the doorbell record without ringing;
    /// returns its first 8 bytes for [`Eth::ring_send`].
    pub fn post_send(&self, hdr: &[u8], payload_at: u64, payload_len: u32) -> u64 {
        let pc = self.sq_pc.get();
        let mut wqe = vec![0u8; 32];
        let rest = hdr.len().saturating_sub(2);
        wqe.extend_from_slice(&hdr[hdr.len().min(2)..]);
        wqe.resize(32 + rest.div_ceil(16) * 16, 0);
        let mut d = [0u8; 16];
        let mut seg = WqeDataSeg::new_unchecked(&mut d[..]);
        seg.set_byte_count(payload_len);
        seg.set_lkey(self.key);
        seg.set_addr(self.buf + payload_at);
        wqe.extend_from_slice(&d);
        let ds = (wqe.len() / 16) as u8;
        let mut c = WqeCtrlSeg::new_unchecked(&mut wqe[..16]);
        c.set_opcode(SendOpcode::Send);
        c.set_wqe_index(pc);
        c.set_qpn(self.sqn);
        c.set_ds(ds);
        c.set_ce_raw(2);
        let mut e = WqeEthSeg::new_unchecked(&mut wqe[16..32]);
        e.set_inline_hdr_sz(hdr.len() as u16);
        let mut start = [0u8; 2];
        start[..hdr.len().min(2)].copy_from_slice(&hdr[..hdr.len().min(2)]);
        e.set_inline_hdr_start(&start);
        wqe[16 + 4] = self.cs_flags.get();
        wqe.resize(wqe.len().div_ceil(64) * 64, 0);
        for (k, block) in wqe.chunks(64).enumerate() {
            let slot = (u64::from(pc) + k as u64) % 64;
            self.n.write(self.sq_ring + slot * 64, block);
        }
        let next = pc + (wqe.len() / 64) as u16;
        self.sq_pc.set(next);
        self.n
            .publish(self.sq_dbr + 4, &u32::from(next).to_be_bytes());
        wqe.read_be64(0)
    }
}
