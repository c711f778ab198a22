//! The RC data path: SEND/RECV, RDMA write and read, atomics, inline data and BlueFlame copies
//! between two QPs on one device or on two devices joined by a wire, each test also on RoCEv2
//! frames; the PRM's errors and receiver-not-ready retries in `errors`.

#[path = "../common/mod.rs"]
mod common;

/// Every test of the module it is used in again with RC on RoCEv2 frames
/// (`RcTransport::Roce`): requests, acknowledgements and responses cross the port (or loop
/// back inside one device) instead of acting on the peer QP directly, and must come out the
/// same.
macro_rules! again_on_roce {
    ($($test:ident),* $(,)?) => {
        mod roce {
            $(
                #[test]
                fn $test() {
                    crate::common::dp::on_roce(super::$test);
                }
            )*
        }
    };
}

mod errors;

use common::dp::{Node, Pair, Ring};
use common::rc_wqe::Wqe;
use common::Host;
use mlx5_prm::{CqeOpcode, QpState, SendOpcode};
use mlx5_sim::Wire;

const NO_RIGHTS: (bool, bool, bool) = (false, false, false);
const ALL_RIGHTS: (bool, bool, bool) = (true, true, true);

/// A 64 KiB buffer on `n` with a key granting `rights`, and the key.
fn buffer(n: &Node, rights: &str) -> (u64, u32) {
    let r = n.alloc(1 << 16);
    let key = n.mkey(n.pd, r.iova, 1 << 16, rights);
    (r.iova, key)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

#[test]
fn send_and_receive_on_one_device() {
    let n = Node::inline();
    let p = Pair::new(&n, &n, NO_RIGHTS, 7);
    let (src, skey) = buffer(&n, "lr");
    let (dst, dkey) = buffer(&n, "lw");
    n.write(src, &pattern(300, 1));

    // Two scatter entries of 50 and 200 bytes take a 100-byte message.
    p.b.post_recv(&[(50, dkey, dst), (200, dkey, dst + 0x1000)]);
    let idx = p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, true)
            .data(100, skey, src)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(idx, 0);
    let c = p.rcq_b.expect(CqeOpcode::RespSend);
    assert_eq!(
        (c.byte_cnt(), c.qpn(), c.wqe_counter(), c.rqpn()),
        (100, p.b.qpn, 0, p.a.qpn)
    );
    let c = p.scq_a.expect(CqeOpcode::Req);
    assert_eq!(
        (c.wqe_counter(), c.qpn(), c.s_wqe_opcode()),
        (0, p.a.qpn, SendOpcode::Send.raw())
    );
    assert_eq!(n.read(dst, 50), pattern(300, 1)[..50]);
    assert_eq!(n.read(dst + 0x1000, 50), pattern(300, 1)[50..100]);

    // Unsignaled SEND_IMM, solicited: only the receiver completes, with the immediate.
    p.b.post_recv(&[(256, dkey, dst + 0x2000)]);
    p.a.post(
        &Wqe::new(SendOpcode::SendImm, p.a.qpn, false)
            .imm(0xdead_beef)
            .solicited()
            .data(7, skey, src + 200)
            .build(),
        Ring::Doorbell,
    );
    let c = p.rcq_b.expect(CqeOpcode::RespSendImm);
    assert_eq!(
        (c.immediate(), c.byte_cnt(), c.wqe_counter()),
        (0xdead_beef, 7, 1)
    );
    assert!(c.se());
    assert!(p.scq_a.poll().is_none(), "unsignaled");
    assert_eq!(n.read(dst + 0x2000, 7), pattern(300, 1)[200..207]);

    // Inline data: no key needed.
    p.b.post_recv(&[(256, dkey, dst + 0x3000)]);
    let text = b"inline data straight from the WQE, 47 bytes....";
    p.a.post(
        &Wqe::new(SendOpcode::Send, p.a.qpn, true)
            .inline(text)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(
        p.rcq_b.expect(CqeOpcode::RespSend).byte_cnt(),
        text.len() as u32
    );
    // The inline WQE took two WQEBBs (16 + 4 + 47 bytes): the next index is 2 + 1 + 2.
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 2);
    assert_eq!(n.read(dst + 0x3000, text.len()), text);
    assert_eq!(n.qp_state(p.a.qpn), QpState::Rts);
    assert_eq!(n.dev().ignored_doorbells(), 0);
}

#[test]
fn send_across_a_wire_between_two_devices() {
    for threaded in [false, true] {
        let host = |t| if t { Host::threaded() } else { Host::inline() };
        let (na, nb) = (Node::new(host(threaded)), Node::new(host(threaded)));
        let _wire = Wire::connect(na.dev(), nb.dev());
        let p = Pair::new(&na, &nb, ALL_RIGHTS, 7);
        // Both devices number their first QP alike: the remote QPN resolves on the peer.
        assert_eq!(p.a.qpn, p.b.qpn);
        let (src, skey) = buffer(&na, "lr");
        let (dst, dkey) = buffer(&nb, "lw,rw");
        na.write(src, &pattern(4000, 9));
        p.b.post_recv(&[(8192, dkey, dst)]);
        p.a.post(
            &Wqe::new(SendOpcode::Send, p.a.qpn, true)
                .data(4000, skey, src)
                .build(),
            Ring::Doorbell,
        );
        na.dev().sync();
        assert_eq!(p.rcq_b.expect(CqeOpcode::RespSend).byte_cnt(), 4000);
        assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 0);
        assert_eq!(nb.read(dst, 4000), pattern(4000, 9));
        // And back, as an RDMA write from b into a's memory.
        let (land, lkey) = buffer(&na, "lw,rw");
        let (from, fkey) = buffer(&nb, "lr");
        nb.write(from, b"the other way");
        p.b.post(
            &Wqe::new(SendOpcode::RdmaWrite, p.b.qpn, true)
                .raddr(land + 8, lkey)
                .data(13, fkey, from)
                .build(),
            Ring::Doorbell,
        );
        nb.dev().sync();
        assert_eq!(p.scq_b.expect(CqeOpcode::Req).wqe_counter(), 0);
        assert_eq!(na.read(land + 8, 13), b"the other way");
        assert!(
            p.rcq_a.poll().is_none(),
            "a plain write consumes no receive"
        );
    }
}

#[test]
fn rdma_write_read_and_write_with_immediate() {
    let n = Node::inline();
    let p = Pair::new(&n, &n, ALL_RIGHTS, 7);
    let (local, lkey) = buffer(&n, "lr,lw");
    let (remote, rkey) = buffer(&n, "rr,rw,lw");
    n.write(local, &pattern(512, 3));

    p.a.post(
        &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
            .raddr(remote + 100, rkey)
            .data(512, lkey, local)
            .build(),
        Ring::Doorbell,
    );
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).s_wqe_opcode(), 0x08);
    assert_eq!(n.read(remote + 100, 512), pattern(512, 3));

    // Write with immediate consumes a receive WQE; the CQE says how much was written.
    p.b.post_recv(&[(16, rkey, remote)]);
    p.a.post(
        &Wqe::new(SendOpcode::RdmaWriteImm, p.a.qpn, true)
            .imm(77)
            .raddr(remote + 2000, rkey)
            .data(32, lkey, local)
            .build(),
        Ring::Doorbell,
    );
    let c = p.rcq_b.expect(CqeOpcode::RespWrImm);
    assert_eq!((c.immediate(), c.byte_cnt(), c.wqe_counter()), (77, 32, 0));
    p.scq_a.expect(CqeOpcode::Req);

    // Read back 300 bytes into two local scatter entries; the CQE carries the length.
    n.write(remote + 8000, &pattern(300, 42));
    p.a.post(
        &Wqe::new(SendOpcode::RdmaRead, p.a.qpn, true)
            .raddr(remote + 8000, rkey)
            .data(100, lkey, local + 4096)
            .data(200, lkey, local + 8192)
            .build(),
        Ring::Doorbell,
    );
    let c = p.scq_a.expect(CqeOpcode::Req);
    assert_eq!((c.byte_cnt(), c.s_wqe_opcode()), (300, 0x10));
    assert_eq!(n.read(local + 4096, 100), pattern(300, 42)[..100]);
    assert_eq!(n.read(local + 8192, 200), pattern(300, 42)[100..]);

    // Several WQEs, one doorbell for the last (the record is what counts).
    for k in 0..5u64 {
        p.a.post(
            &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, k == 4)
                .raddr(remote + 20_000 + k * 8, rkey)
                .inline(&k.to_be_bytes())
                .build(),
            if k == 4 { Ring::Doorbell } else { Ring::Silent },
        );
    }
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 7);
    assert!(p.scq_a.poll().is_none());
    for k in 0..5u64 {
        assert_eq!(n.read(remote + 20_000 + k * 8, 8), k.to_be_bytes());
    }
}

#[test]
fn atomics() {
    let n = Node::inline();
    let p = Pair::new(&n, &n, (false, false, true), 7);
    let (local, lkey) = buffer(&n, "lw");
    let (remote, rkey) = buffer(&n, "a");
    n.write(remote + 64, &10u64.to_be_bytes());
    let atomic = |op, swap_add, compare, at: u64| {
        p.a.post(
            &Wqe::new(op, p.a.qpn, true)
                .raddr(remote + 64, rkey)
                .atomic(swap_add, compare)
                .data(8, lkey, local + at)
                .build(),
            Ring::Doorbell,
        );
        assert_eq!(p.scq_a.expect(CqeOpcode::Req).byte_cnt(), 8);
        u64::from_be_bytes(n.read(local + at, 8).try_into().unwrap())
    };
    let remote_value = || u64::from_be_bytes(n.read(remote + 64, 8).try_into().unwrap());
    assert_eq!(atomic(SendOpcode::AtomicFa, 5, 0, 0), 10);
    assert_eq!(remote_value(), 15);
    assert_eq!(atomic(SendOpcode::AtomicCs, 100, 15, 8), 15);
    assert_eq!(remote_value(), 100);
    assert_eq!(
        atomic(SendOpcode::AtomicCs, 7, 15, 16),
        100,
        "compare fails"
    );
    assert_eq!(remote_value(), 100);
    assert_eq!(atomic(SendOpcode::AtomicFa, u64::MAX, 0, 24), 100, "wraps");
    assert_eq!(remote_value(), 99);
}

#[test]
fn blue_flame_copies_execute_like_the_ring() {
    let n = Node::inline();
    let p = Pair::new(&n, &n, ALL_RIGHTS, 7);
    let (remote, rkey) = buffer(&n, "rw");
    // Post through BlueFlame: the WQE is in the ring and in the register.
    p.a.post(
        &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
            .raddr(remote, rkey)
            .inline(b"blue flame")
            .build(),
        Ring::BlueFlame,
    );
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 0);
    assert_eq!(n.read(remote, 10), b"blue flame");

    // The device executes the copy, not the ring: post silently, spoil the ring's copy,
    // then write the good WQE to the register.
    let good = Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
        .raddr(remote + 64, rkey)
        .inline(b"from the copy")
        .build();
    let idx = p.a.post(&good, Ring::Silent);
    let ring_at = p.a.buf.iova + p.a.sq_base + u64::from(idx) * 64;
    n.write(ring_at + 16, &[0xff; 16]);
    let mut copy = good.clone();
    copy[1..3].copy_from_slice(&idx.to_be_bytes());
    let words: Vec<u64> = copy
        .chunks(8)
        .map(|w| u64::from_be_bytes(w.try_into().unwrap()))
        .collect();
    n.dev().write_block(n.uar as usize * 4096 + 0x900, &words);
    assert_eq!(p.scq_a.expect(CqeOpcode::Req).wqe_counter(), 1);
    assert_eq!(n.read(remote + 64, 13), b"from the copy");
    assert_eq!(n.dev().last_send_doorbell(n.uar), Some(words[0]));
}

#[test]
fn doorbells_for_other_queues_are_ignored() {
    let n = Node::inline();
    let p = Pair::new(&n, &n, NO_RIGHTS, 7);
    // No such QP.
    p.a.ring(0x0000_0a00_0077_7701);
    // A real QP through another UAR page.
    let other = n.host.alloc_uar();
    n.dev()
        .write64(other as usize * 4096 + 0x800, u64::from(p.a.qpn) << 8 | 1);
    assert_eq!(n.dev().ignored_doorbells(), 2);
    // A doorbell with nothing new posted does nothing.
    p.a.ring(u64::from(p.a.qpn) << 8 | 1);
    assert!(p.scq_a.poll().is_none());
}

#[test]
fn wqes_wrap_around_the_ring() {
    let n = Node::inline();
    let (scq, rcq) = (n.cq(3, false), n.cq(3, false));
    // 8 WQEBBs; two-block WQEs after one one-block NOP straddle the end of the ring.
    let a = n.qp(&scq, &rcq, 3);
    let b = n.qp(&scq, &rcq, 3);
    n.connect(&a, b.qpn, ALL_RIGHTS, 7);
    n.connect(&b, a.qpn, ALL_RIGHTS, 7);
    let (remote, rkey) = buffer(&n, "rw");
    a.post(
        &Wqe::new(SendOpcode::Nop, a.qpn, true).build(),
        Ring::Doorbell,
    );
    scq.expect(CqeOpcode::Req);
    for k in 0..20u8 {
        let text = [k; 60];
        let idx = a.post(
            &Wqe::new(SendOpcode::RdmaWrite, a.qpn, true)
                .raddr(remote + u64::from(k) * 64, rkey)
                .inline(&text)
                .build(),
            Ring::Doorbell,
        );
        assert_eq!(idx, 1 + 2 * u16::from(k));
        assert_eq!(scq.expect(CqeOpcode::Req).wqe_counter(), idx);
        assert_eq!(n.read(remote + u64::from(k) * 64, 60), text);
    }
}

#[test]
fn threaded_devices_send_to_each_other_at_once() {
    let (na, nb) = (Node::new(Host::threaded()), Node::new(Host::threaded()));
    let _wire = Wire::connect(na.dev(), nb.dev());
    let p = Pair::new(&na, &nb, NO_RIGHTS, 7);
    let (ba, ka) = buffer(&na, "lr,lw");
    let (bb, kb) = buffer(&nb, "lr,lw");
    let Pair {
        scq_a,
        rcq_a,
        a,
        scq_b,
        rcq_b,
        b,
    } = p;
    let side = move |n: Node,
                     scq: common::dp::Cq,
                     rcq: common::dp::Cq,
                     qp: common::dp::Qp,
                     buf: u64,
                     key: u32| {
        std::thread::spawn(move || {
            // Miri runs each step thousands of times slower: fewer rounds, more time.
            let (rounds, secs) = if cfg!(miri) { (8u32, 600) } else { (200, 20) };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
            for k in 0..rounds {
                qp.post_recv(&[(64, key, buf + 4096)]);
                n.write(buf, &k.to_be_bytes());
                qp.post(
                    &Wqe::new(SendOpcode::Send, qp.qpn, true)
                        .data(4, key, buf)
                        .build(),
                    Ring::Doorbell,
                );
                let (mut sent, mut got) = (false, false);
                while !(sent && got) {
                    sent |= scq.poll().is_some();
                    got |= rcq.poll().is_some();
                    assert!(std::time::Instant::now() < deadline, "stuck at {k}");
                    std::thread::yield_now();
                }
            }
            n
        })
    };
    let ta = side(na, scq_a, rcq_a, a, ba, ka);
    let tb = side(nb, scq_b, rcq_b, b, bb, kb);
    let (na, nb) = (ta.join().unwrap(), tb.join().unwrap());
    let last = if cfg!(miri) { 7u32 } else { 199 };
    assert_eq!(na.read(ba + 4096, 4), last.to_be_bytes());
    assert_eq!(nb.read(bb + 4096, 4), last.to_be_bytes());
}

#[test]
fn mtt_keys_translate_page_by_page() {
    use mlx5_prm::cmd;
    let n = Node::inline();
    let p = Pair::new(&n, &n, ALL_RIGHTS, 7);
    // Two pages far apart in IOVA space, mapped at consecutive virtual addresses.
    let (p0, p1) = (n.alloc(4096), n.alloc(4096));
    let va = 0x7000_0000_0000u64;
    let r = n
        .host
        .run::<cmd::CreateMkey>(0, 16, 0, |i| {
            let mut m = i.memory_key_mkey_entry_mut();
            m.set_pd(n.pd);
            m.set_lr(true);
            m.set_lw(true);
            m.set_rw(true);
            m.set_access_mode_1_0(1);
            m.set_mkey_7_0(0x33);
            m.set_start_addr(va + 0x100);
            m.set_len(8000);
            m.set_log_page_size(12);
            m.set_translations_octword_size(1);
            i.set_translations_octword_actual_size(1);
            for (k, page) in [p0.iova, p1.iova].into_iter().enumerate() {
                i.set_klm_pas_mtt(2 * k, (page >> 32) as u32).unwrap();
                // Linux puts read/write flags in the low bits; the device ignores them.
                i.set_klm_pas_mtt(2 * k + 1, page as u32 | 3).unwrap();
            }
        })
        .ok();
    let rkey = (mlx5_prm::CreateMkeyOut::new_unchecked(&r.out[..]).mkey_index() << 8) | 0x33;
    let data = pattern(200, 5);
    p.a.post(
        &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
            .raddr(va + 4000, rkey)
            .inline(&data)
            .build(),
        Ring::Doorbell,
    );
    p.scq_a.expect(CqeOpcode::Req);
    assert_eq!(n.read(p0.iova + 4000, 96), data[..96]);
    assert_eq!(n.read(p1.iova, 104), data[96..]);
    // Past the region's end: a remote access error.
    p.a.post(
        &Wqe::new(SendOpcode::RdmaWrite, p.a.qpn, true)
            .raddr(va + 8000, rkey)
            .inline(&data)
            .build(),
        Ring::Doorbell,
    );
    p.scq_a.expect_err(CqeOpcode::ReqErr, 0x13);
}

again_on_roce!(
    send_and_receive_on_one_device,
    send_across_a_wire_between_two_devices,
    rdma_write_read_and_write_with_immediate,
    atomics,
    blue_flame_copies_execute_like_the_ring,
    doorbells_for_other_queues_are_ignored,
    wqes_wrap_around_the_ring,
    threaded_devices_send_to_each_other_at_once,
    mtt_keys_translate_page_by_page,
);
