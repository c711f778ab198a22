//! A minimal data-path host: CQs with their rings and doorbell records, RC QPs brought to RTS,
//! memory keys, WQEs built with the generated segment views, and the doorbell sequence
//! (WQE, doorbell record, then the UAR write) a driver follows.

use super::{be32, Host};
use mlx5_prm::cmd;
use mlx5_prm::rt::Bytes;
use mlx5_prm::{
    Cqe64, CqeOpcode, ErrCqe, QpMtu, QpPmState, QpRqType, QpServiceType, QpState, QueryCqOut,
    QueryQpOut, WqeDataSeg,
};
use mlx5_sim::{Device, DmaRegion, RcTransport};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

thread_local! {
    /// The RC transport of the devices this test thread makes (see [`on_roce`]).
    static TRANSPORT: Cell<RcTransport> = const { Cell::new(RcTransport::Fabric) };
}

/// The RC transport devices made on this thread get.
pub fn transport() -> RcTransport {
    TRANSPORT.with(Cell::get)
}

/// Runs test `body` with every device it makes on RoCEv2 frames: each node gets an IPv4
/// address and MAC in its RoCE address table (index 0), and QPs are connected to their peer
/// node's address.
pub fn on_roce(body: fn()) {
    TRANSPORT.with(|t| t.set(RcTransport::Roce));
    body();
}

/// Numbers the nodes' addresses (10.80.0.N, 02:00:00:50:00:N).
static NEXT_NODE: AtomicU8 = AtomicU8::new(1);

/// SET_ROCE_ADDRESS (0x761) of entry `index`: an IPv4 RoCEv2 address and its MAC, written
/// byte by byte from the kernel header's layout (`set_roce_address_in`).
pub fn set_roce_address(host: &Host, index: u16, ip: [u8; 4], mac: [u8; 6]) {
    let mut i = [0u8; 0x30];
    i[0..2].copy_from_slice(&0x761u16.to_be_bytes());
    i[8..10].copy_from_slice(&index.to_be_bytes());
    i[11] = 1; // vhca_port_num
    i[0x1a] = 0xff; // source_l3_address: the IPv4-mapped form
    i[0x1b] = 0xff;
    i[0x1c..0x20].copy_from_slice(&ip);
    i[0x22..0x24].copy_from_slice(&mac[..2]);
    i[0x24..0x28].copy_from_slice(&mac[2..]);
    i[0x2a] = 0; // roce_l3_type IPv4
    i[0x2b] = 2; // roce_version 2
    host.exec(&i, 16).ok();
}

/// A device brought up with one UAR, PD and EQ (subscribed to CQ errors, for tests to read).
pub struct Node {
    pub host: Host,
    /// The node's RoCE address (with [`on_roce`]).
    pub ip: [u8; 4],
    pub mac: [u8; 6],
    pub uar: u32,
    pub pd: u32,
    pub eqn: u8,
    pub eq_ring: DmaRegion,
    eq_ci: Cell<u32>,
    /// log_msg_max the next QP connected gets (30, the device's log_max_msg, unless set).
    pub log_msg_max: Cell<u8>,
}

/// Event type bits the node's EQ subscribes to: cq_error (4), WQ invalid request (0x10) and
/// WQ access error (0x11).
pub const EQ_EVENTS: u64 = 1 << 4 | 1 << 0x10 | 1 << 0x11;

impl Node {
    pub fn new(host: Host) -> Node {
        host.bring_up();
        let uar = host.alloc_uar();
        let pd = host.alloc_pd();
        let (eqn, eq_ring) = host.create_eq(5, EQ_EVENTS, uar, 0);
        let n = NEXT_NODE.fetch_add(1, Ordering::Relaxed);
        let (ip, mac) = ([10, 80, 0, n], [2, 0, 0, 0x50, 0, n]);
        if transport() == RcTransport::Roce {
            set_roce_address(&host, 0, ip, mac);
        }
        Node {
            host,
            ip,
            mac,
            uar,
            pd,
            eqn,
            eq_ring,
            eq_ci: Cell::new(0),
            log_msg_max: Cell::new(30),
        }
    }

    pub fn inline() -> Node {
        Node::new(Host::inline())
    }

    pub fn dev(&self) -> &Arc<Device> {
        &self.host.dev
    }

    pub fn alloc(&self, len: usize) -> DmaRegion {
        self.host.alloc(len, 4096)
    }

    pub fn write(&self, iova: u64, data: &[u8]) {
        self.dev().dma().write(iova, data).unwrap();
    }

    /// Writes a doorbell record as a driver does: see [`publish`].
    pub fn publish(&self, iova: u64, data: &[u8]) {
        publish(self.dev(), iova, data);
    }

    pub fn read(&self, iova: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.dev().dma().read(iova, &mut v).unwrap();
        v
    }

    /// The next EQE of the node's EQ, if the device wrote one (owner bit of the pass).
    pub fn next_eqe(&self) -> Option<mlx5_prm::Eqe> {
        let ci = self.eq_ci.get();
        let e = self.host.eqe(&self.eq_ring, u64::from(ci % 32));
        if e.owner() != ((ci >> 5) & 1 == 1) {
            return None;
        }
        self.eq_ci.set(ci + 1);
        let offset = self.uar as usize * 4096 + 0x48;
        self.dev()
            .write32(offset, (u32::from(self.eqn) << 24) | (ci + 1));
        Some(e)
    }

    /// A PA memory key over `len` bytes at `start` with the given rights ("lr", "lw", "rr",
    /// "rw", "a" in `rights`), in `pd`. Returns the key (index << 8 | tag).
    pub fn mkey(&self, pd: u32, start: u64, len: u64, rights: &str) -> u32 {
        let tag = 0x5a;
        let r = self
            .host
            .run::<cmd::CreateMkey>(0, 0, 0, |i| {
                let mut m = i.memory_key_mkey_entry_mut();
                m.set_pd(pd);
                m.set_lr(rights.contains("lr"));
                m.set_lw(rights.contains("lw"));
                m.set_rr(rights.contains("rr"));
                m.set_rw(rights.contains("rw"));
                m.set_a(rights.split(',').any(|x| x == "a"));
                m.set_access_mode_1_0(0);
                m.set_qpn(0xff_ffff);
                m.set_mkey_7_0(tag);
                m.set_start_addr(start);
                m.set_len(len);
            })
            .ok();
        let index = mlx5_prm::CreateMkeyOut::new_unchecked(&r.out[..]).mkey_index();
        (index << 8) | u32::from(tag)
    }

    /// A CQ of 2^log_size entries (64 or 128 bytes) reporting to the node's EQ.
    pub fn cq(&self, log_size: u8, cqe_128: bool) -> Cq {
        self.cq_on(self.eqn, log_size, cqe_128, |_| {})
    }

    /// A CQ on EQ `eqn`, with `tweak` applied to its context.
    pub fn cq_on(
        &self,
        eqn: u8,
        log_size: u8,
        cqe_128: bool,
        tweak: impl FnOnce(&mut mlx5_prm::Cqc<&mut [u8]>),
    ) -> Cq {
        let entry = if cqe_128 { 128 } else { 64 };
        let bytes = entry << log_size;
        let ring = self.alloc(bytes);
        // As mlx5e: every entry opcode invalid, owner 1.
        for i in 0..(1u64 << log_size) {
            self.write(ring.iova + i * entry as u64 + entry as u64 - 1, &[0xf1]);
        }
        let dbr = self.alloc(64);
        let pages = bytes.div_ceil(4096);
        let r = self
            .host
            .run::<cmd::CreateCq>(0, pages * 8, 0, |i| {
                let mut c = i.cq_context_mut();
                c.set_log_cq_size(log_size);
                c.set_uar_page(self.uar);
                c.set_c_eqn_or_apu_element(eqn.into());
                c.set_dbr_addr(dbr.iova);
                if cqe_128 {
                    c.set_cqe_sz_raw(1);
                }
                tweak(&mut c);
                for p in 0..pages {
                    i.set_pas(p, ring.iova + p as u64 * 4096).unwrap();
                }
            })
            .ok();
        Cq {
            cqn: mlx5_prm::CreateCqOut::new_unchecked(&r.out[..]).cqn(),
            ring,
            dbr,
            log_size,
            entry,
            ci: Cell::new(0),
            dev: self.dev().clone(),
            uar: self.uar,
        }
    }

    /// QUERY_CQ's context.
    pub fn query_cq(&self, cqn: u32) -> QueryCqOut<Vec<u8>> {
        let r = self
            .host
            .run::<cmd::QueryCq>(0, 0, 0, |i| i.set_cqn(cqn))
            .ok();
        QueryCqOut::new_unchecked(r.out)
    }

    /// QUERY_QP: the QP's state.
    pub fn qp_state(&self, qpn: u32) -> QpState {
        let r = self
            .host
            .run::<cmd::QueryQp>(0, 0, 0, |i| i.set_qpn(qpn))
            .ok();
        QueryQpOut::new_unchecked(&r.out[..]).qpc().state().unwrap()
    }

    /// An RC QP with 2^4 receive WQEs of 64 bytes and 2^log_sq send WQEBBs, in RST.
    pub fn qp(&self, scq: &Cq, rcq: &Cq, log_sq: u8) -> Qp {
        self.qp_with(scq, rcq, log_sq, self.pd)
    }

    pub fn qp_with(&self, scq: &Cq, rcq: &Cq, log_sq: u8, pd: u32) -> Qp {
        let (log_rq, rq_stride_log) = (4u8, 2u8);
        let rq_bytes = (16usize << rq_stride_log) << log_rq;
        let sq_bytes = 64usize << log_sq;
        let buf = self.alloc(rq_bytes + sq_bytes);
        let dbr = self.alloc(64);
        let pages = (rq_bytes + sq_bytes).div_ceil(4096);
        let r = self
            .host
            .run::<cmd::CreateQp>(0, pages * 8, 0, |i| {
                let mut q = i.qpc_mut();
                q.set_st(QpServiceType::Rc);
                q.set_pm_state(QpPmState::Migrated);
                q.set_pd(pd);
                q.set_uar_page(self.uar);
                q.set_log_rq_size(log_rq);
                q.set_log_rq_stride(rq_stride_log);
                q.set_log_sq_size(log_sq);
                q.set_rq_type(QpRqType::Regular);
                q.set_cqn_snd(scq.cqn);
                q.set_cqn_rcv(rcq.cqn);
                q.set_dbr_addr(dbr.iova);
                for p in 0..pages {
                    i.set_pas(p, buf.iova + p as u64 * 4096).unwrap();
                }
            })
            .ok();
        Qp {
            qpn: be32(&r.out, 8) & 0xff_ffff,
            buf,
            dbr,
            rq_base: 0,
            rq_stride: 16 << rq_stride_log,
            log_rq,
            sq_base: rq_bytes as u64,
            log_sq,
            sq_pc: Cell::new(0),
            rq_pc: Cell::new(0),
            bf_offset: Cell::new(0),
            dev: self.dev().clone(),
            uar: self.uar,
        }
    }

    /// RST → INIT → RTR → RTS towards `remote_qpn`, with remote access rights and rnr_retry.
    pub fn connect(&self, qp: &Qp, remote_qpn: u32, rights: (bool, bool, bool), rnr_retry: u8) {
        self.connect_to(qp, self, remote_qpn, rights, rnr_retry);
    }

    /// [`Node::connect`] to a QP of node `remote` (its RoCE address, when on RoCE).
    pub fn connect_to(
        &self,
        qp: &Qp,
        remote: &Node,
        remote_qpn: u32,
        rights: (bool, bool, bool),
        rnr_retry: u8,
    ) {
        let (rre, rwe, rae) = rights;
        self.host
            .run::<cmd::Rst2initQp>(0, 0, 0, |i| {
                i.set_qpn(qp.qpn);
                let mut q = i.qpc_mut();
                q.primary_address_path_mut().set_vhca_port_num(1);
                q.set_rre(rre);
                q.set_rwe(rwe);
                q.set_rae(rae);
                q.set_pm_state(QpPmState::Migrated);
            })
            .ok();
        self.host
            .run::<cmd::Init2rtrQp>(0, 0, 0, |i| {
                i.set_qpn(qp.qpn);
                let mut q = i.qpc_mut();
                q.set_mtu(QpMtu::Mtu1k);
                q.set_log_msg_max(self.log_msg_max.get());
                q.set_remote_qpn(remote_qpn);
                q.set_min_rnr_nak(1);
                let mut ads = q.primary_address_path_mut();
                ads.set_vhca_port_num(1);
                ads.set_rmac_47_32(u16::from_be_bytes([remote.mac[0], remote.mac[1]]));
                ads.set_rmac_31_0(u32::from_be_bytes([
                    remote.mac[2],
                    remote.mac[3],
                    remote.mac[4],
                    remote.mac[5],
                ]));
                let mut gid = [0u8; 16];
                gid[10] = 0xff;
                gid[11] = 0xff;
                gid[12..].copy_from_slice(&remote.ip);
                ads.set_rgid_rip(&gid);
                ads.set_hop_limit(64);
            })
            .ok();
        self.host
            .run::<cmd::Rtr2rtsQp>(0, 0, 0, |i| {
                i.set_qpn(qp.qpn);
                i.qpc_mut().set_retry_count(7);
                i.qpc_mut().set_rnr_retry(rnr_retry);
                // 4.096 us << 12: about 17 ms (the fabric never times out).
                i.qpc_mut().primary_address_path_mut().set_ack_timeout(12);
            })
            .ok();
    }
}

/// A CQ and the driver's view of it.
pub struct Cq {
    pub cqn: u32,
    pub ring: DmaRegion,
    pub dbr: DmaRegion,
    pub log_size: u8,
    pub entry: usize,
    pub ci: Cell<u32>,
    dev: Arc<Device>,
    uar: u32,
}

impl Cq {
    /// The raw 64-byte CQE of slot `index` (the second half of a 128-byte slot).
    pub fn slot(&self, index: u32) -> [u8; 64] {
        let mut e = [0u8; 64];
        let slot = u64::from(index & ((1 << self.log_size) - 1)) * self.entry as u64;
        let at = self.ring.iova + slot + self.entry as u64 - 64;
        // Dword loads: the device writes the owner dword with a 4-byte store.
        assert!(self.dev.dma().read_dwords(at, &mut e));
        e
    }

    /// Polls one CQE as drivers do: the owner bit must equal the pass parity of the consumer
    /// index and the opcode must not be invalid; then the consumer index advances and is
    /// published in the doorbell record.
    /// The dword holding opcode and owner is read first, with the width the device writes it
    /// (4 bytes), then, after an acquire fence, the whole entry.
    pub fn poll(&self) -> Option<[u8; 64]> {
        let ci = self.ci.get();
        let slot = u64::from(ci & ((1 << self.log_size) - 1)) * self.entry as u64;
        let last = self.ring.iova + slot + self.entry as u64 - 4;
        let mut w = [0u8; 4];
        self.dev.dma().read(last, &mut w).unwrap();
        let owner = w[3] & 1;
        if u32::from(owner) != (ci >> self.log_size) & 1 || w[3] >> 4 == 0xf {
            return None;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        let e = self.slot(ci);
        self.ci.set(ci + 1);
        publish(
            &self.dev,
            self.dbr.iova,
            &((ci + 1) & 0xff_ffff).to_be_bytes(),
        );
        Some(e)
    }

    /// Polls a CQE and checks its opcode.
    #[track_caller]
    pub fn expect(&self, opcode: CqeOpcode) -> Cqe64<[u8; 64]> {
        let e = self.poll().expect("a CQE");
        let c = Cqe64::new_unchecked(e);
        assert_eq!(
            c.opcode(),
            Ok(opcode),
            "CQE syndrome {:#x}",
            ErrCqe::new_unchecked(e).syndrome_raw()
        );
        c
    }

    /// Polls an error CQE and returns it.
    #[track_caller]
    pub fn expect_err(&self, opcode: CqeOpcode, syndrome: u8) -> ErrCqe<[u8; 64]> {
        let e = self.poll().expect("an error CQE");
        let c = ErrCqe::new_unchecked(e);
        assert_eq!(c.opcode(), Ok(opcode));
        assert_eq!(c.syndrome_raw(), syndrome, "syndrome");
        c
    }

    /// Arms the CQ (cmd 0: any completion, 1: solicited only) with the current consumer index.
    pub fn arm(&self, solicited: bool) {
        let ci = self.ci.get() & 0xff_ffff;
        let high = (1u32 << 28) | (u32::from(solicited) << 24) | ci;
        let mut rec = [0u8; 8];
        rec[..4].copy_from_slice(&ci.to_be_bytes());
        rec[4..].copy_from_slice(&high.to_be_bytes());
        publish(&self.dev, self.dbr.iova, &rec);
        self.dev.write64(
            self.uar as usize * 4096 + 0x20,
            (u64::from(high) << 32) | u64::from(self.cqn),
        );
    }
}

/// An RC QP and the driver's counters.
pub struct Qp {
    pub qpn: u32,
    pub buf: DmaRegion,
    pub dbr: DmaRegion,
    pub rq_base: u64,
    pub rq_stride: usize,
    pub log_rq: u8,
    pub sq_base: u64,
    pub log_sq: u8,
    pub sq_pc: Cell<u16>,
    pub rq_pc: Cell<u16>,
    bf_offset: Cell<usize>,
    dev: Arc<Device>,
    uar: u32,
}

/// Writes `data` to a doorbell record at `iova` after a release fence, as a driver must: what
/// the record publishes (WQEs written, CQEs read) happens before the device's read of it (the
/// model's acquire fence after that read pairs with this one). Without the fence the threaded
/// mode races the model's thread, which Miri reports.
pub fn publish(dev: &Device, iova: u64, data: &[u8]) {
    std::sync::atomic::fence(Ordering::Release);
    dev.dma().write(iova, data).unwrap();
}

/// How a WQE reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ring {
    /// Written to the ring, then the 8-byte doorbell.
    Doorbell,
    /// Written to the ring, then copied whole to the BlueFlame register.
    BlueFlame,
    /// Written to the ring and the doorbell record only, no UAR write.
    Silent,
}

impl Qp {
    /// Writes `wqe` (a multiple of 16 bytes, fixed up with the WQE index) at the producer
    /// counter, publishes the new counter in the doorbell record, and rings as `how` says.
    /// Returns the WQE index.
    pub fn post(&self, wqe: &[u8], how: Ring) -> u16 {
        let pc = self.sq_pc.get();
        let mut wqe = wqe.to_vec();
        wqe.resize(wqe.len().div_ceil(64) * 64, 0);
        wqe[1..3].copy_from_slice(&pc.to_be_bytes());
        let size = 1u64 << self.log_sq;
        for (k, block) in wqe.chunks(64).enumerate() {
            let slot = (u64::from(pc) + k as u64) % size;
            self.dev
                .dma()
                .write(self.buf.iova + self.sq_base + slot * 64, block)
                .unwrap();
        }
        let next = pc.wrapping_add((wqe.len() / 64) as u16);
        self.sq_pc.set(next);
        publish(&self.dev, self.dbr.iova + 4, &u32::from(next).to_be_bytes());
        let bf = self.uar as usize * 4096 + 0x800 + self.bf_offset.get();
        self.bf_offset.set(self.bf_offset.get() ^ 0x100);
        match how {
            Ring::Doorbell => self.dev.write64(bf, wqe.read_be64(0)),
            Ring::BlueFlame => {
                let words: Vec<u64> = wqe.chunks(8).map(|w| w.read_be64(0)).collect();
                self.dev.write_block(bf, &words);
            }
            Ring::Silent => {}
        }
        pc
    }

    /// Rings the doorbell again with the first 8 bytes of `wqe`, without posting.
    pub fn ring(&self, first8: u64) {
        let bf = self.uar as usize * 4096 + 0x800 + self.bf_offset.get();
        self.bf_offset.set(self.bf_offset.get() ^ 0x100);
        self.dev.write64(bf, first8);
    }

    /// Posts a receive WQE with these (length, lkey, address) entries.
    pub fn post_recv(&self, sges: &[(u32, u32, u64)]) -> u16 {
        let pc = self.rq_pc.get();
        let mut wqe = vec![0u8; self.rq_stride];
        for (k, &(len, lkey, addr)) in sges.iter().enumerate() {
            let mut d = WqeDataSeg::new_unchecked(&mut wqe[k * 16..k * 16 + 16]);
            d.set_byte_count(len);
            d.set_lkey(lkey);
            d.set_addr(addr);
        }
        if sges.len() * 16 < self.rq_stride {
            let at = sges.len() * 16;
            WqeDataSeg::new_unchecked(&mut wqe[at..at + 16]).set_lkey(0x100);
        }
        let slot = u64::from(pc) % (1 << self.log_rq);
        self.dev
            .dma()
            .write(
                self.buf.iova + self.rq_base + slot * self.rq_stride as u64,
                &wqe,
            )
            .unwrap();
        let next = pc.wrapping_add(1);
        self.rq_pc.set(next);
        publish(&self.dev, self.dbr.iova, &u32::from(next).to_be_bytes());
        pc
    }
}

/// Two RC QPs on the same device or on two wired devices, connected to each other in RTS,
/// each with its own send and receive CQ.
pub struct Pair {
    pub scq_a: Cq,
    pub rcq_a: Cq,
    pub a: Qp,
    pub scq_b: Cq,
    pub rcq_b: Cq,
    pub b: Qp,
}

impl Pair {
    /// QPs `a` on `na` and `b` on `nb` (the same node or two wired ones), with remote rights
    /// `rights` (rre, rwe, rae) and `rnr_retry` on both.
    pub fn new(na: &Node, nb: &Node, rights: (bool, bool, bool), rnr_retry: u8) -> Pair {
        let (scq_a, rcq_a) = (na.cq(5, false), na.cq(5, false));
        let (scq_b, rcq_b) = (nb.cq(5, false), nb.cq(5, false));
        let a = na.qp(&scq_a, &rcq_a, 6);
        let b = nb.qp(&scq_b, &rcq_b, 6);
        na.connect_to(&a, nb, b.qpn, rights, rnr_retry);
        nb.connect_to(&b, na, a.qpn, rights, rnr_retry);
        Pair {
            scq_a,
            rcq_a,
            a,
            scq_b,
            rcq_b,
            b,
        }
    }
}
