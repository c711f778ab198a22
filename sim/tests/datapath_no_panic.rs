//! Nothing the driver writes on the data path makes the model panic or loop: WQEs of every
//! opcode (on Ethernet SQs mostly SEND and LSO, with checksum flags, VLAN insert requests and
//! inline headers) with keys right or wrong, lengths small or huge, addresses in mapped memory or
//! anywhere, some bytes flipped at random; random receive WQEs; doorbell record counters that
//! are right or garbage; doorbells, BlueFlame copies and CQ arms with random values; random
//! frames. Afterwards both devices still answer commands.

mod common;

use common::dp::{Node, Pair};
use common::eth::Eth;
use mlx5_prm::cmd;
use proptest::prelude::*;

/// 64 cases by default (`PROPTEST_CASES` overrides); each brings two devices up.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A scatter/gather entry: which key (0..4 of the test's keys, else random), length, and
/// address (offset into the scratch region, or anywhere).
#[derive(Debug, Clone)]
struct Sge {
    key: u8,
    len: u32,
    addr: u32,
    wild: bool,
}

fn sge() -> impl Strategy<Value = Sge> {
    (
        prop_oneof![3 => Just(0u8), 1 => any::<u8>()],
        prop_oneof![6 => 0u32..512, 1 => any::<u32>()],
        0u32..0x1_0000,
        prop::bool::weighted(0.05),
    )
        .prop_map(|(key, len, addr, wild)| Sge {
            key,
            len,
            addr,
            wild,
        })
}

/// A send WQE: opcode, signaled, remote address entry, atomic operands, gather list, inline
/// data, and bytes to corrupt afterwards.
#[derive(Debug, Clone)]
struct Send {
    opcode: u8,
    signaled: bool,
    raddr: Sge,
    inline: Option<Vec<u8>>,
    sges: Vec<Sge>,
    flips: Vec<(u8, u8)>,
}

fn send() -> impl Strategy<Value = Send> {
    (
        prop_oneof![
            9 => prop::sample::select(vec![0x00u8, 0x01, 0x08, 0x09, 0x0a, 0x0b, 0x10, 0x11, 0x12]),
            1 => any::<u8>(),
        ],
        any::<bool>(),
        sge(),
        prop::option::weighted(0.3, prop::collection::vec(any::<u8>(), 0..120)),
        prop::collection::vec(sge(), 0..4),
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec(any::<(u8, u8)>(), 1..3),
        ],
    )
        .prop_map(|(opcode, signaled, raddr, inline, sges, flips)| Send {
            opcode,
            signaled,
            raddr,
            inline,
            sges,
            flips,
        })
}

fn key_of(keys: &[u32; 4], s: &Sge) -> u32 {
    match keys.get(usize::from(s.key % 8)) {
        Some(&k) => k,
        None => u32::from(s.key) << 8 | u32::from(s.key),
    }
}

fn addr_of(base: u64, s: &Sge) -> u64 {
    if s.wild {
        u64::from(s.addr) << 24
    } else {
        base + u64::from(s.addr)
    }
}

fn data_seg(out: &mut Vec<u8>, keys: &[u32; 4], base: u64, s: &Sge) {
    out.extend_from_slice(&s.len.to_be_bytes());
    out.extend_from_slice(&key_of(keys, s).to_be_bytes());
    out.extend_from_slice(&addr_of(base, s).to_be_bytes());
}

/// The bytes of a WQE (index filled in), padded to whole WQEBBs. With `eth`, an Ethernet
/// segment with some inline header comes after the control segment instead of the RDMA
/// segments.
fn wqe(w: &Send, index: u16, qn: u32, keys: &[u32; 4], base: u64, eth: bool) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[1..3].copy_from_slice(&index.to_be_bytes());
    // Ethernet queues take SEND, LSO (and NOP); keep most of their WQEs to those.
    b[3] = match w.opcode {
        0x10..=0x12 if eth => 0x0e,
        0x01..=0x0b if eth => 0x0a,
        op => op,
    };
    b[11] = if w.signaled { 0x08 } else { 0 };
    if eth {
        // Checksum flags, an mss, and inline headers: for an LSO mostly TCP/IPv4 ones (54
        // bytes), else filler; sometimes a VLAN insert request instead.
        let mut e = [0u8; 16];
        e[4] = w.raddr.key;
        e[6..8].copy_from_slice(&((w.raddr.addr % 2000) as u16).to_be_bytes());
        let mut hdr = vec![0xab; w.raddr.len as usize % 40];
        if b[3] == 0x0e && w.raddr.len % 5 != 0 {
            hdr = vec![0u8; 54];
            hdr[12..16].copy_from_slice(&[0x08, 0x00, 0x45, 0]);
            hdr[23] = if w.raddr.len % 3 == 0 { 17 } else { 6 };
            hdr[34 + 12] = 5 << 4;
            hdr.truncate(if hdr[23] == 17 { 42 } else { 54 });
        }
        e[12..14].copy_from_slice(&(hdr.len() as u16).to_be_bytes());
        if w.raddr.len % 7 == 1 {
            e[12..16].copy_from_slice(&[0x80, w.raddr.key & 1, 0x12, 0x34]);
        }
        let first = hdr.len().min(2);
        e[14..14 + first].copy_from_slice(&hdr[..first]);
        b.extend_from_slice(&e);
        let at = b.len();
        b.extend_from_slice(&hdr[first..]);
        b.resize(at + (hdr.len() - first).div_ceil(16) * 16, 0);
    } else {
        if matches!(w.opcode, 0x08..=0x12) {
            b.extend_from_slice(&addr_of(base, &w.raddr).to_be_bytes());
            b.extend_from_slice(&key_of(keys, &w.raddr).to_be_bytes());
            b.extend_from_slice(&[0; 4]);
        }
        if matches!(w.opcode, 0x11 | 0x12) {
            b.extend_from_slice(&u64::from(w.raddr.len).to_be_bytes());
            b.extend_from_slice(&u64::from(w.raddr.addr).to_be_bytes());
        }
    }
    if let Some(data) = &w.inline {
        let at = b.len();
        b.extend_from_slice(&(0x8000_0000u32 | data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        b.resize(at + (b.len() - at).div_ceil(16) * 16, 0);
    }
    for s in &w.sges {
        data_seg(&mut b, keys, base, s);
    }
    b.truncate(63 * 16);
    let ds = (b.len() / 16) as u32;
    b[4..8].copy_from_slice(&((qn << 8) | ds).to_be_bytes());
    b.resize(b.len().div_ceil(64) * 64, 0);
    for &(at, v) in &w.flips {
        let at = usize::from(at) % b.len();
        b[at] ^= v;
    }
    b
}

/// Lays WQEs out in a ring of 2^log WQEBBs from WQEBB 0; returns the producer counter.
fn lay_out(ring: &mut [u8], wqes: &[Send], qn: u32, keys: &[u32; 4], base: u64, eth: bool) -> u16 {
    let blocks = ring.len() / 64;
    let mut pc = 0u16;
    for w in wqes {
        let bytes = wqe(w, pc, qn, keys, base, eth);
        for (k, block) in bytes.chunks(64).enumerate() {
            let slot = (usize::from(pc) + k) % blocks;
            ring[slot * 64..slot * 64 + 64].copy_from_slice(block);
        }
        pc = pc.wrapping_add((bytes.len() / 64) as u16);
    }
    pc
}

/// Receive WQEs: up to 4 entries each of a 64-byte stride.
fn recv_ring(len: usize, stride: usize, wqes: &[Vec<Sge>], keys: &[u32; 4], base: u64) -> Vec<u8> {
    let mut ring = vec![0u8; len];
    for (slot, chunk) in ring.chunks_mut(stride).enumerate() {
        let mut b = Vec::new();
        if let Some(list) = wqes.get(slot % wqes.len().max(1)) {
            for s in list.iter().take(stride / 16) {
                data_seg(&mut b, keys, base, s);
            }
        }
        if b.len() < stride {
            b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 1, 0]);
        }
        let n = b.len().min(chunk.len());
        chunk[..n].copy_from_slice(&b[..n]);
    }
    ring
}

/// What the driver does next.
#[derive(Debug, Clone)]
enum Act {
    /// Publish the send counter: the real one, or garbage.
    SendCounter(Option<u16>),
    /// Publish receive counters (b and a).
    RecvCounter(u16),
    /// Ring a's doorbell (or write a random value there).
    Doorbell(Option<u64>),
    /// A BlueFlame copy of the ring's first blocks (at a random offset), or of random words.
    Block(Option<Vec<u64>>, u8),
    /// Arm a CQ with a random consumer index.
    Arm(u32, bool),
    /// Publish a CQ consumer index: the right one or garbage.
    CqCi(Option<u32>),
    Tick,
    Frame(Vec<u8>),
    /// Publish the Ethernet SQ's counter (real or garbage) and ring.
    Eth(Option<u16>),
    /// Move a to ERR, or b to RST, by command.
    Modify(bool),
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        3 => prop::option::weighted(0.2, any::<u16>()).prop_map(Act::SendCounter),
        2 => prop_oneof![0u16..20, any::<u16>()].prop_map(Act::RecvCounter),
        3 => prop::option::weighted(0.2, any::<u64>()).prop_map(Act::Doorbell),
        1 => (prop::option::of(prop::collection::vec(any::<u64>(), 0..40)), any::<u8>())
            .prop_map(|(w, k)| Act::Block(w, k)),
        1 => (any::<u32>(), any::<bool>()).prop_map(|(ci, s)| Act::Arm(ci, s)),
        2 => prop::option::weighted(0.2, any::<u32>()).prop_map(Act::CqCi),
        1 => Just(Act::Tick),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Act::Frame),
        2 => prop::option::weighted(0.2, any::<u16>()).prop_map(Act::Eth),
        1 => any::<bool>().prop_map(Act::Modify),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_wqes_and_doorbells(
        sends in prop::collection::vec(send(), 1..24),
        recvs in prop::collection::vec(prop::collection::vec(sge(), 0..5), 0..8),
        eth_sends in prop::collection::vec(send(), 1..8),
        acts in prop::collection::vec(act(), 1..24),
        rnr_retry in 0u8..8,
    ) {
        let n = Node::inline();
        let p = Pair::new(&n, &n, (true, true, true), rnr_retry);
        let e = Eth::new(Node::inline(), &[[0xab; 6]]);
        e.n.dev().loopback(true);
        let scratch = n.alloc(1 << 16);
        let keys = [
            n.mkey(n.pd, scratch.iova, 1 << 16, "lr,lw,rr,rw,a"),
            n.mkey(n.pd, scratch.iova + 4096, 4096, "lr"),
            0x700,
            0x100,
        ];
        let mut sq = vec![0u8; 64 << p.a.log_sq];
        let pc = lay_out(&mut sq, &sends, p.a.qpn, &keys, scratch.iova, false);
        n.write(p.a.buf.iova + p.a.sq_base, &sq);
        let rq_len = p.a.rq_stride << p.a.log_rq;
        let rq = recv_ring(rq_len, p.a.rq_stride, &recvs, &keys, scratch.iova);
        n.write(p.b.buf.iova, &rq);
        n.write(p.a.buf.iova, &rq);
        let ekeys = [e.key, e.key ^ 1, 0x700, 0x100];
        let mut esq = vec![0u8; 4096];
        let epc = lay_out(&mut esq, &eth_sends, e.sqn, &ekeys, e.buf, true);
        e.n.write(e.sq_ring, &esq);
        e.n.write(e.rq_ring, &recv_ring(4096, 64, &recvs, &ekeys, e.buf));
        e.n.write(e.rq_dbr, &8u32.to_be_bytes());
        let uar = n.uar as usize * 4096;
        for a in acts {
            match a {
                Act::SendCounter(s) => {
                    n.write(p.a.dbr.iova + 4, &u32::from(s.unwrap_or(pc)).to_be_bytes());
                }
                Act::RecvCounter(r) => {
                    n.write(p.b.dbr.iova, &u32::from(r).to_be_bytes());
                    n.write(p.a.dbr.iova, &u32::from(r).to_be_bytes());
                }
                Act::Doorbell(v) => {
                    let v = v.unwrap_or(u64::from(p.a.qpn) << 8 | 1);
                    n.dev().write64(uar + 0x800, v);
                }
                Act::Block(words, k) => {
                    let words = words.unwrap_or_else(|| {
                        let at = u64::from(k % 8) * 64;
                        let b = n.read(p.a.buf.iova + p.a.sq_base + at, 256);
                        b.chunks(8).map(|w| u64::from_be_bytes(w.try_into().unwrap())).collect()
                    });
                    n.dev().write_block(uar + 0x800 + usize::from(k % 4) * 0x100, &words);
                }
                Act::Arm(ci, s) => {
                    let high = u64::from((1 << 28) | (u32::from(s) << 24) | (ci & 0xff_ffff));
                    n.dev().write64(uar + 0x20, high << 32 | u64::from(p.scq_a.cqn));
                }
                Act::CqCi(ci) => {
                    for cq in [&p.scq_a, &p.rcq_a, &p.scq_b, &p.rcq_b, &e.scq, &e.rcq] {
                        // Consume everything there is, or publish garbage.
                        match ci {
                            None => while cq.poll().is_some() {},
                            Some(ci) => {
                                cq.ci.set(ci);
                                n.dev().dma().write(cq.dbr.iova, &ci.to_be_bytes()).ok();
                                e.n.dev().dma().write(cq.dbr.iova, &ci.to_be_bytes()).ok();
                            }
                        }
                    }
                }
                Act::Tick => n.dev().tick(),
                Act::Frame(f) => {
                    e.n.dev().receive_frame(&f);
                }
                Act::Eth(c) => {
                    e.n.write(e.sq_dbr + 4, &u32::from(c.unwrap_or(epc)).to_be_bytes());
                    e.n.dev().write64(e.n.uar as usize * 4096 + 0x900, u64::from(e.sqn) << 8);
                }
                Act::Modify(err) => {
                    if err {
                        n.host.run::<cmd::Qp2err>(0, 0, 0, |i| i.set_qpn(p.a.qpn)).ok();
                    } else {
                        n.host.run::<cmd::Qp2rst>(0, 0, 0, |i| i.set_qpn(p.b.qpn)).ok();
                    }
                }
            }
        }
        n.dev().tick();
        for node in [&n, &e.n] {
            let r = node.host.simple::<cmd::QueryIssi>(0);
            prop_assert_eq!((r.delivery, r.status()), (0, 0));
        }
    }
}
