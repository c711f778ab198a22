//! The device under test: one RC QP on RoCEv2 in RTS, connected to a peer that is only an
//! address (the test plays it, writing the peer's frames with `frame.rs` and reading the
//! device's answers off the link). The QP counts into its own queue counter set, has a
//! memory region for remote access with canary pages on both sides, and receive buffers.

#![allow(dead_code)]

use super::frame::Addr;
use super::rig::Rig;
use mlx5_prm::cmd;
use mlx5_prm::{
    AllocQCounterOut, CreateCqOut, CreateEqOut, CreateMkeyOut, QpMtu, QpPmState, QpRqType,
    QpServiceType, QpState, QueryQCounterOut, QueryQpOut, SendOpcode, WqeCtrlSeg, WqeDataSeg,
};
use std::cell::Cell;

/// The device's address (entry 0 of its RoCE address table) and the peer's.
pub const DUT: Addr = Addr {
    mac: [0x02, 0, 0, 0x52, 0, 0x01],
    ip: [10, 82, 0, 1],
};
pub const PEER: Addr = Addr {
    mac: [0x02, 0, 0, 0x52, 0, 0x02],
    ip: [10, 82, 0, 2],
};
pub const PEER_QPN: u32 = 0x2a5;
/// The first PSN the device's responder expects: two before the 24-bit wrap, so every
/// test's PSNs cross it.
pub const FIRST_PSN: u32 = 0xff_fffe;
/// The first PSN the device's requester sends.
pub const SEND_PSN: u32 = 0x1000;
/// Path MTU (INIT2RTR mtu 1024).
pub const MTU: usize = 1024;
/// Receive buffer per receive WQE.
pub const RECV_LEN: usize = 4096;
const LOG_RQ: u8 = 4;
const RQ_STRIDE: usize = 64;
const LOG_SQ: u8 = 6;

/// Remote access rights of the QP (qpc.rre, rwe, rae).
#[derive(Debug, Clone, Copy)]
pub struct Rights {
    pub read: bool,
    pub write: bool,
    pub atomic: bool,
}

pub const ALL: Rights = Rights {
    read: true,
    write: true,
    atomic: true,
};

/// A CQ and its consumer index.
pub struct Cq {
    pub cqn: u32,
    ring: u64,
    dbr: u64,
    log: u8,
    ci: Cell<u32>,
}

pub struct Dut<'r> {
    pub rig: &'r Rig,
    pub uar: u32,
    pub pd: u32,
    pub eqn: u8,
    pub scq: Cq,
    pub rcq: Cq,
    pub qpn: u32,
    qbuf: u64,
    qdbr: u64,
    rq_pc: Cell<u16>,
    pub counter_set: u8,
    /// The remote-access region: `mr_va`.. `mr_va + MR_LEN`, key `rkey`, a canary page on
    /// each side of it.
    pub mr_va: u64,
    pub rkey: u32,
    /// The receive buffers and their key.
    pub recv: u64,
    pub lkey: u32,
    pub rights: Rights,
    /// The local ACK timeout connect() sets (4.096 us << it).
    pub ack_timeout: Cell<u8>,
    sq_pc: Cell<u16>,
}

pub const MR_LEN: u64 = 4096;

impl<'r> Dut<'r> {
    /// Brings the device up with `rights` on its QP, which ends in RTS with receive WQEs
    /// posted in every slot.
    pub fn new(rig: &'r Rig, rights: Rights) -> Dut<'r> {
        rig.bring_up();
        let uar = {
            let o = rig.run::<cmd::AllocUar>(0, 0, |_| {}).ok();
            mlx5_prm::AllocUarOut::new_unchecked(&o[..]).uar()
        };
        let pd = {
            let o = rig.run::<cmd::AllocPd>(0, 0, |_| {}).ok();
            mlx5_prm::AllocPdOut::new_unchecked(&o[..]).pd()
        };
        set_roce_address(rig, &DUT);
        let eq_ring = rig.alloc(64 << 5);
        for i in 0..32u64 {
            rig.write(eq_ring + i * 64 + 0x3f, &[1]);
        }
        let eqn = {
            let o = rig
                .run::<cmd::CreateEq>(0, 8, |i| {
                    let mut c = i.eq_context_entry_mut();
                    c.set_log_eq_size(5);
                    c.set_uar_page(uar);
                    i.set_event_bitmask(0, 1 << 4 | 1 << 0x10 | 1 << 0x11)
                        .unwrap();
                    i.set_pas(0, eq_ring).unwrap();
                })
                .ok();
            CreateEqOut::new_unchecked(&o[..]).eq_number()
        };
        let cq = |log: u8| {
            let ring = rig.alloc(64 << log);
            for i in 0..(1u64 << log) {
                rig.write(ring + i * 64 + 63, &[0xf1]);
            }
            let dbr = rig.alloc(64);
            let o = rig
                .run::<cmd::CreateCq>(0, 8, |i| {
                    let mut c = i.cq_context_mut();
                    c.set_log_cq_size(log);
                    c.set_uar_page(uar);
                    c.set_c_eqn_or_apu_element(eqn.into());
                    c.set_dbr_addr(dbr);
                    i.set_pas(0, ring).unwrap();
                })
                .ok();
            Cq {
                cqn: CreateCqOut::new_unchecked(&o[..]).cqn(),
                ring,
                dbr,
                log,
                ci: Cell::new(0),
            }
        };
        let (scq, rcq) = (cq(6), cq(6));
        let counter_set = {
            let o = rig.run::<cmd::AllocQCounter>(0, 0, |_| {}).ok();
            AllocQCounterOut::new_unchecked(&o[..]).counter_set_id()
        };
        let rq_bytes = RQ_STRIDE << LOG_RQ;
        let bytes = rq_bytes + (64 << LOG_SQ);
        let qbuf = rig.alloc(bytes);
        let qdbr = rig.alloc(64);
        let pages = bytes.div_ceil(4096);
        let o = rig
            .run::<cmd::CreateQp>(0, pages * 8, |i| {
                let mut q = i.qpc_mut();
                q.set_st(QpServiceType::Rc);
                q.set_pm_state(QpPmState::Migrated);
                q.set_pd(pd);
                q.set_uar_page(uar);
                q.set_log_rq_size(LOG_RQ);
                q.set_log_rq_stride(2);
                q.set_log_sq_size(LOG_SQ);
                q.set_rq_type(QpRqType::Regular);
                q.set_cqn_snd(scq.cqn);
                q.set_cqn_rcv(rcq.cqn);
                q.set_dbr_addr(qdbr);
                q.set_counter_set_id(counter_set);
                for p in 0..pages {
                    i.set_pas(p, qbuf + p as u64 * 4096).unwrap();
                }
            })
            .ok();
        let qpn = u32::from_be_bytes([o[8], o[9], o[10], o[11]]) & 0xff_ffff;
        let mr = rig.alloc(3 * MR_LEN as usize);
        rig.write(mr, &[super::rig::CANARY; MR_LEN as usize]);
        rig.write(mr + 2 * MR_LEN, &[super::rig::CANARY; MR_LEN as usize]);
        let mr_va = mr + MR_LEN;
        let rkey = mkey(rig, pd, mr_va, MR_LEN, true);
        let recv_bytes = RECV_LEN << LOG_RQ;
        let recv = rig.alloc(recv_bytes);
        let lkey = mkey(rig, pd, recv, recv_bytes as u64, false);
        let d = Dut {
            rig,
            uar,
            pd,
            eqn,
            scq,
            rcq,
            qpn,
            qbuf,
            qdbr,
            rq_pc: Cell::new(0),
            counter_set,
            mr_va,
            rkey,
            recv,
            lkey,
            rights,
            ack_timeout: Cell::new(12),
            sq_pc: Cell::new(0),
        };
        d.connect();
        d
    }

    /// RST → INIT → RTR → RTS towards the peer, then every receive slot posted.
    pub fn connect(&self) {
        let r = self.rights;
        self.rig
            .run::<cmd::Rst2initQp>(0, 0, |i| {
                i.set_qpn(self.qpn);
                let mut q = i.qpc_mut();
                q.primary_address_path_mut().set_vhca_port_num(1);
                q.set_rre(r.read);
                q.set_rwe(r.write);
                q.set_rae(r.atomic);
                q.set_pm_state(QpPmState::Migrated);
                // Where Linux's mlx5_ib names the QP's counter set.
                q.set_counter_set_id(self.counter_set);
            })
            .ok();
        self.rig
            .run::<cmd::Init2rtrQp>(0, 0, |i| {
                i.set_qpn(self.qpn);
                let mut q = i.qpc_mut();
                q.set_mtu(QpMtu::Mtu1k);
                q.set_log_msg_max(30);
                q.set_remote_qpn(PEER_QPN);
                q.set_next_rcv_psn(FIRST_PSN);
                q.set_log_rra_max(4);
                q.set_min_rnr_nak(1);
                let mut a = q.primary_address_path_mut();
                a.set_vhca_port_num(1);
                a.set_rmac_47_32(u16::from_be_bytes([PEER.mac[0], PEER.mac[1]]));
                a.set_rmac_31_0(u32::from_be_bytes([
                    PEER.mac[2],
                    PEER.mac[3],
                    PEER.mac[4],
                    PEER.mac[5],
                ]));
                let mut gid = [0u8; 16];
                gid[10] = 0xff;
                gid[11] = 0xff;
                gid[12..].copy_from_slice(&PEER.ip);
                a.set_rgid_rip(&gid);
                a.set_hop_limit(64);
                a.set_udp_sport(0xd00d);
            })
            .ok();
        self.rig
            .run::<cmd::Rtr2rtsQp>(0, 0, |i| {
                i.set_qpn(self.qpn);
                let mut q = i.qpc_mut();
                q.set_next_send_psn(SEND_PSN);
                q.set_retry_count(7);
                q.set_rnr_retry(7);
                q.primary_address_path_mut()
                    .set_ack_timeout(self.ack_timeout.get());
            })
            .ok();
        self.rq_pc.set(0);
        self.sq_pc.set(0);
        self.rig.write(self.qdbr, &[0; 8]);
        for _ in 0..1 << LOG_RQ {
            self.post_recv();
        }
    }

    /// Back to RST (any state), the receive CQ drained, and connected again.
    pub fn reconnect(&self) {
        self.rig
            .run::<cmd::Qp2rst>(0, 0, |i| i.set_qpn(self.qpn))
            .ok();
        while self.rcq.poll(self.rig).is_some() {}
        self.connect();
    }

    /// Posts one receive WQE: the slot's `RECV_LEN` bytes of the receive buffers.
    pub fn post_recv(&self) {
        let pc = self.rq_pc.get();
        let slot = u64::from(pc) % (1 << LOG_RQ);
        let mut wqe = [0u8; RQ_STRIDE];
        let mut d = WqeDataSeg::new_unchecked(&mut wqe[..16]);
        d.set_byte_count(RECV_LEN as u32);
        d.set_lkey(self.lkey);
        d.set_addr(self.recv + slot * RECV_LEN as u64);
        // The next entry ends the list (the reserved "invalid" lkey).
        WqeDataSeg::new_unchecked(&mut wqe[16..32]).set_lkey(0x100);
        self.rig.write(self.qbuf + slot * RQ_STRIDE as u64, &wqe);
        self.rq_pc.set(pc.wrapping_add(1));
        self.rig
            .write(self.qdbr, &u32::from(pc.wrapping_add(1)).to_be_bytes());
    }

    /// Posts send WQE `segments` (after a control segment for `opcode`, signaled) and rings
    /// the doorbell.
    pub fn post_send(&self, opcode: SendOpcode, segments: &[u8]) {
        let pc = self.sq_pc.get();
        let mut wqe = vec![0u8; 16];
        wqe.extend_from_slice(segments);
        let ds = (wqe.len() / 16) as u8;
        wqe.resize(wqe.len().div_ceil(64) * 64, 0);
        let mut c = WqeCtrlSeg::new_unchecked(&mut wqe[..16]);
        c.set_opcode(opcode);
        c.set_wqe_index(pc);
        c.set_qpn(self.qpn);
        c.set_ds(ds);
        c.set_ce_raw(2);
        let rq_bytes = (RQ_STRIDE << LOG_RQ) as u64;
        for (k, block) in wqe.chunks(64).enumerate() {
            let slot = (u64::from(pc) + k as u64) % (1 << LOG_SQ);
            self.rig.write(self.qbuf + rq_bytes + slot * 64, block);
        }
        let next = pc.wrapping_add((wqe.len() / 64) as u16);
        self.sq_pc.set(next);
        self.rig
            .write(self.qdbr + 4, &u32::from(next).to_be_bytes());
        let first = u64::from_be_bytes(wqe[..8].try_into().unwrap());
        self.rig
            .dev
            .write64(self.uar as usize * 4096 + 0x800, first);
    }

    /// The receive buffer of WQE `index`.
    pub fn recv_buf(&self, index: u16, len: usize) -> Vec<u8> {
        let slot = u64::from(index) % (1 << LOG_RQ);
        self.rig.read(self.recv + slot * RECV_LEN as u64, len)
    }

    /// QUERY_QP's state.
    pub fn state(&self) -> QpState {
        let o = self
            .rig
            .run::<cmd::QueryQp>(0, 0, |i| i.set_qpn(self.qpn))
            .ok();
        QueryQpOut::new_unchecked(&o[..]).qpc().state().unwrap()
    }

    /// QUERY_Q_COUNTER of the QP's counter set.
    pub fn counters(&self) -> QueryQCounterOut<Vec<u8>> {
        let o = self
            .rig
            .run::<cmd::QueryQCounter>(0, 0, |i| i.set_counter_set_id(self.counter_set))
            .ok();
        QueryQCounterOut::new_unchecked(o)
    }

    /// The canary pages around the memory region are untouched.
    pub fn mr_guards_intact(&self) -> bool {
        let low = self.rig.read(self.mr_va - MR_LEN, MR_LEN as usize);
        let high = self.rig.read(self.mr_va + MR_LEN, MR_LEN as usize);
        super::rig::is_canary(&low) && super::rig::is_canary(&high)
    }
}

impl Cq {
    /// The next CQE, if the device wrote one (owner bit of the pass, opcode not invalid).
    pub fn poll(&self, rig: &Rig) -> Option<[u8; 64]> {
        let ci = self.ci.get();
        let slot = u64::from(ci & ((1 << self.log) - 1));
        let e: [u8; 64] = rig.read(self.ring + slot * 64, 64).try_into().unwrap();
        if u32::from(e[63] & 1) != (ci >> self.log) & 1 || e[63] >> 4 == 0xf {
            return None;
        }
        self.ci.set(ci + 1);
        rig.write(self.dbr, &((ci + 1) & 0xff_ffff).to_be_bytes());
        Some(e)
    }
}

/// SET_ROCE_ADDRESS of entry 0: `a` as an IPv4 RoCEv2 address.
pub fn set_roce_address(rig: &Rig, a: &Addr) {
    rig.run::<cmd::SetRoceAddress>(0, 0, |i| {
        i.set_roce_address_index(0);
        i.set_vhca_port_num(1);
        let mut l = i.roce_address_mut();
        let mut ip = [0u8; 16];
        ip[10] = 0xff;
        ip[11] = 0xff;
        ip[12..].copy_from_slice(&a.ip);
        l.set_source_l3_address(&ip);
        l.set_source_mac_47_32(u16::from_be_bytes([a.mac[0], a.mac[1]]));
        l.set_source_mac_31_0(u32::from_be_bytes([a.mac[2], a.mac[3], a.mac[4], a.mac[5]]));
        l.set_roce_l3_type(mlx5_prm::RoceL3Type::Ipv4);
        l.set_roce_version(mlx5_prm::RoceVersion::Version2);
    })
    .ok();
}

/// A PA memory key over `len` bytes at `start`: local read/write, and with `remote` remote
/// read, write and atomic too.
fn mkey(rig: &Rig, pd: u32, start: u64, len: u64, remote: bool) -> u32 {
    let tag = 0x5a;
    let o = rig
        .run::<cmd::CreateMkey>(0, 0, |i| {
            let mut m = i.memory_key_mkey_entry_mut();
            m.set_pd(pd);
            m.set_lr(true);
            m.set_lw(true);
            m.set_rr(remote);
            m.set_rw(remote);
            m.set_a(remote);
            m.set_access_mode_1_0(0);
            m.set_qpn(0xff_ffff);
            m.set_mkey_7_0(tag);
            m.set_start_addr(start);
            m.set_len(len);
        })
        .ok();
    (CreateMkeyOut::new_unchecked(&o[..]).mkey_index() << 8) | u32::from(tag)
}
