//! Posting on the model: requests written over slots full of stale bytes (a previous lap of
//! the ring, another operation's segments) execute as posted and leave no stale bit in the
//! units the device reads; a batch rings the doorbell once.

use super::*;
use crate::backend::sim::SimBackend;
use crate::backend::Deferred;
use crate::cq::{Completion, Cq};
use crate::mr::Access;
use crate::qp::{
    rmac_fields, Init2rtr, Init2rtrOptional, QpConfig, Rst2init, Rtr2rts, Rtr2rtsOptional,
    Transitions as _,
};
use crate::HcaConfig;
use mlx5_prm::rt::Bytes;
use mlx5_prm::{QpMtu, QpPmState, WqeAtomicSeg, WqeCtrlSeg, WqeInlineSeg, WqeRaddrSeg};

#[path = "../../../tests/common/qp_params.rs"]
mod qp_params;

pub(crate) const ALL: Access = Access {
    local_write: true,
    remote_read: true,
    remote_write: true,
    remote_atomic: true,
};

/// A QP of `1 << log_sq` WQEBBs on `cq`, in RTS, connected to itself with remote access on.
pub(crate) fn rts<'h, B: Backend>(hca: &'h Hca<B>, cq: &Cq<'h, B>, log_sq: u8) -> Qp<'h, B, Rts> {
    let config = QpConfig {
        log_sq_size: log_sq,
        log_rq_size: 4,
        log_rq_stride: 1,
    };
    let qp = Qp::create(hca, cq, cq, &config).unwrap();
    let qpn = qp.qpn();
    let (init, rtr, rts) = qp_params::params(qpn);
    let qp = qp.rst2init(init).map_err(|(e, _)| e).unwrap();
    let qp = qp.init2rtr(rtr).map_err(|(e, _)| e).unwrap();
    qp.rtr2rts(rts).map_err(|(e, _)| e).unwrap()
}

/// Polls until `n` completions came (the model runs at the doorbell), all successful.
pub(crate) fn wait<B: Backend>(cq: &mut Cq<'_, B>, n: usize) -> Vec<Completion> {
    let mut out = Vec::new();
    for _ in 0..1000 {
        if out.len() == n {
            break;
        }
        cq.poll(n - out.len(), &mut out);
        std::thread::yield_now();
    }
    assert_eq!(out.len(), n, "completions: {out:?}");
    assert!(out.iter().all(|c| c.status.is_ok()), "{out:?}");
    out
}

/// A CQE of `opcode` for QP `qpn`'s WQE `wqe_counter` with `byte_cnt` bytes, written at
/// `cq`'s consumer index as a device would write it (a lying one, as the test needs), and
/// polled: a completion made as every completion is.
pub(crate) fn forged<B: Backend>(
    cq: &mut Cq<'_, B>,
    opcode: mlx5_prm::CqeOpcode,
    qpn: u32,
    wqe_counter: u16,
    byte_cnt: u32,
) -> Completion {
    cq.forge(|c| {
        c.set_opcode(opcode);
        c.set_qpn(qpn);
        c.set_wqe_counter(wqe_counter);
        c.set_byte_cnt(byte_cnt);
    });
    let mut out = Vec::new();
    assert_eq!(cq.poll(1, &mut out), 1);
    out.remove(0)
}

pub(crate) fn read<B: Backend>(r: &Region<'_, B>, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    r.bytes().read_bytes(0, &mut v);
    v
}

pub(crate) fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

/// The units of the WQE in `slot` that the device reads, rebuilt from the fields the PRM
/// defines (read with the generated getters, written with the setters into a zeroed block):
/// equal to the slot's bytes exactly when no reserved bit and no padding byte is set.
fn canonical(slot: &[u8; WQEBB]) -> Vec<u8> {
    let ctrl = WqeCtrlSeg::new_unchecked(&slot[..UNIT]);
    let ds = usize::from(ctrl.ds());
    let opcode = ctrl.opcode().expect("a known opcode");
    let mut out = vec![0u8; ds * UNIT];
    let mut c = WqeCtrlSeg::new_unchecked(&mut out[..UNIT]);
    c.set_opcode(opcode);
    c.set_wqe_index(ctrl.wqe_index());
    c.set_qpn(ctrl.qpn());
    c.set_ds(ctrl.ds());
    c.set_ce(ctrl.ce().expect("a known completion mode"));
    c.set_imm(ctrl.imm());
    let mut at = UNIT;
    use SendOpcode::*;
    if matches!(
        opcode,
        RdmaWrite | RdmaWriteImm | RdmaRead | AtomicCs | AtomicFa
    ) {
        let r = WqeRaddrSeg::new_unchecked(&slot[at..at + UNIT]);
        let mut o = WqeRaddrSeg::new_unchecked(&mut out[at..at + UNIT]);
        o.set_raddr(r.raddr());
        o.set_rkey(r.rkey());
        at += UNIT;
    }
    if matches!(opcode, AtomicCs | AtomicFa) {
        let a = WqeAtomicSeg::new_unchecked(&slot[at..at + UNIT]);
        let mut o = WqeAtomicSeg::new_unchecked(&mut out[at..at + UNIT]);
        o.set_swap_add(a.swap_add());
        o.set_compare(a.compare());
        at += UNIT;
    }
    if at < ds * UNIT {
        let hdr = WqeInlineSeg::new_unchecked(&slot[at..at + INLINE]);
        if hdr.inline() {
            let len = usize::from(hdr.byte_count());
            let mut o = WqeInlineSeg::new_unchecked(&mut out[at..at + INLINE]);
            o.set_inline(true);
            o.set_byte_count(hdr.byte_count());
            let data = at + INLINE..at + INLINE + len;
            out[data.clone()].copy_from_slice(&slot[data]);
        } else {
            let d = WqeDataSeg::new_unchecked(&slot[at..at + UNIT]);
            let mut o = WqeDataSeg::new_unchecked(&mut out[at..at + UNIT]);
            o.set_byte_count(d.byte_count());
            o.set_lkey(d.lkey());
            o.set_addr(d.addr());
        }
    }
    out
}
const INLINE: usize = super::super::wqe::INLINE_DATA;

/// The WQE slot of send counter `pi`, as bytes.
fn slot<B: Backend, S>(qp: &Qp<'_, B, S>, pi: u32) -> [u8; WQEBB] {
    let entries = 1usize << qp.config().log_sq_size;
    let at = qp.rq_bytes() + (pi as usize & (entries - 1)) * WQEBB;
    let mut out = [0u8; WQEBB];
    qp.inner
        .object
        .memory(0)
        .slice(at, WQEBB)
        .read_bytes(0, &mut out);
    out
}

/// Inline lengths that end inside a unit, so their segments have padding to zero.
const WRITE_INLINE: usize = MAX_INLINE_RDMA - 12;
const SEND_INLINE: usize = MAX_INLINE - 12;
const _: () = assert!((INLINE + WRITE_INLINE) % UNIT != 0 && (INLINE + SEND_INLINE) % UNIT != 0);

/// Every kind of request, round after round over an 8-slot ring whose every byte was 0xff to
/// begin with: 7 kinds over 8 slots, so each slot holds a different kind on each lap (and a
/// short WQE lands where a longer one left its segments); on the second lap those that bring
/// nothing back ask for no completion. Each executes on the model as posted (and completes
/// only when asked to), and the units it occupies hold nothing but its fields.
#[test]
fn requests_over_stale_slots_execute_as_posted() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    {
        let sq = qp.rq_bytes();
        let mut ring = qp.inner.object.memory(0).slice(sq, 8 * WQEBB);
        ring.write_bytes(0, &[0xff; 8 * WQEBB]);
    }
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let remote = RemoteAddr::of(&target);
    // Local buffers: an unsignalled request keeps its own until a later completion.
    let mut pool: Vec<_> = (0..4)
        .map(|_| Region::register(&hca, 4096, ALL).unwrap())
        .collect();
    let mut rx = Some(Region::register(&hca, 4096, ALL).unwrap());
    for n in 0..21u8 {
        let pi = qp.inner.work.sq_pi;
        let data = pattern(n, 64);
        let kind = n % 7;
        // On the second lap the requests that bring nothing back ask for no completion (a
        // stale completion mode would make one anyway).
        let signaled = !((7..14).contains(&n) && matches!(kind, 0 | 1 | 3 | 4));
        let mut req = SendRequest {
            id: u64::from(n),
            op: SendOp::Send,
            region: pool.pop(),
            len: Some(64),
            signaled,
            inline: None,
        };
        let old = (u64::from(n) << 40) | 0x1234;
        match kind {
            0 => req.op = SendOp::Write(remote),
            1 => {
                req.op = SendOp::WriteImm(remote, u32::from(n));
                req.inline = Some(data[..WRITE_INLINE].to_vec());
            }
            2 => req.op = SendOp::Read(remote),
            3 => {}
            4 => {
                req.op = SendOp::SendImm(0xabcd_0000 | u32::from(n));
                req.inline = Some(data[..SEND_INLINE].to_vec());
            }
            5 => {
                req.op = SendOp::FetchAdd {
                    remote,
                    add: u64::from(n),
                }
            }
            _ => {
                req.op = SendOp::CompareSwap {
                    remote,
                    compare: old,
                    swap: !old,
                }
            }
        }
        // The data each kind moves: in the local region, the target, or the WQE.
        let r = req.region.as_ref().unwrap();
        match kind {
            0 | 3 => r.bytes().write_bytes(0, &data),
            2 => target.bytes().write_bytes(0, &data),
            5 | 6 => target.bytes().write_be64(0, old),
            _ => {}
        }
        // SENDs and WRITE with immediate consume a receive (the QP is its own peer).
        let consumes = matches!(kind, 1 | 3 | 4);
        if consumes {
            qp.post_recv(100, rx.take().unwrap())
                .map_err(|(e, _)| e)
                .unwrap();
        }
        qp.post_send(req).map_err(|(e, _)| e).unwrap();
        let wqe = slot(&qp, pi);
        let ds = usize::from(WqeCtrlSeg::new_unchecked(&wqe[..UNIT]).ds());
        assert_eq!(
            wqe[..ds * UNIT],
            canonical(&wqe)[..],
            "request {n}: stale bits"
        );
        for c in wait(&mut cq, usize::from(signaled) + usize::from(consumes)) {
            let (opcode, immediate) = (c.opcode, c.immediate);
            let done = qp.complete(c).unwrap();
            if opcode == mlx5_prm::CqeOpcode::Req.raw() {
                let last = done.last().unwrap();
                assert_eq!(last.id, u64::from(n));
                let local = last.region.as_ref().unwrap();
                match kind {
                    2 => assert_eq!(read(local, 64), data, "request {n}: read"),
                    5 | 6 => assert_eq!(local.bytes().read_be64(0), old, "request {n}"),
                    _ => {}
                }
                pool.extend(done.into_iter().filter_map(|d| d.region));
            } else {
                let region = read(done[0].region.as_ref().unwrap(), 64);
                match kind {
                    1 => assert_eq!(immediate, u32::from(n)),
                    3 => assert_eq!(region, data, "request {n}: received"),
                    _ => {
                        assert_eq!(immediate, 0xabcd_0000 | u32::from(n));
                        assert_eq!(region[..SEND_INLINE], data[..SEND_INLINE]);
                    }
                }
                rx = done.into_iter().next().unwrap().region;
            }
        }
        let mut more = Vec::new();
        assert_eq!(cq.poll(4, &mut more), 0, "request {n}: {more:?}");
        match kind {
            0 => assert_eq!(read(&target, 64), data, "request {n}: written"),
            1 => assert_eq!(read(&target, WRITE_INLINE), data[..WRITE_INLINE]),
            5 | 6 => {
                let new = if kind == 5 { old + u64::from(n) } else { !old };
                assert_eq!(target.bytes().read_be64(0), new, "request {n}: atomic");
            }
            _ => {}
        }
    }
    assert_eq!(qp.outstanding(), (0, 0));
}

/// A batch is one doorbell: five WRITEs, the last signalled, ring once with the last WQE's
/// first 8 bytes and the counter past all five; the one completion gives all five back.
#[test]
fn a_batch_of_writes_rings_the_doorbell_once() {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 4);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let reqs: Vec<_> = (0..5u8)
        .map(|k| {
            let src = Region::register(&hca, 64, ALL).unwrap();
            src.bytes().write_bytes(0, &pattern(k, 64));
            SendRequest {
                id: u64::from(k),
                op: SendOp::Write(RemoteAddr {
                    addr: target.addr() + 64 * u64::from(k),
                    rkey: target.rkey(),
                }),
                region: Some(src),
                len: None,
                signaled: k == 4,
                inline: None,
            }
        })
        .collect();
    let before = hca.backend().doorbells();
    assert_eq!(qp.post_sends(reqs).map_err(|(_, (e, _))| e).unwrap(), 5);
    assert_eq!(hca.backend().doorbells(), before + 1, "one doorbell");
    let record = qp.inner.object.memory(1).slice(0, 8);
    assert_eq!(record.read_be32(4) & 0xffff, 5, "the counter past all five");
    let last = u64::from_be_bytes(slot(&qp, 4)[..8].try_into().unwrap());
    assert_eq!(dev.last_send_doorbell(hca.info().uar), Some(last));
    let done = qp.complete(wait(&mut cq, 1).remove(0)).unwrap();
    assert_eq!(
        done.iter().map(|d| d.id).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    for k in 0..5u8 {
        let got = read(&target, 64 * (usize::from(k) + 1));
        assert_eq!(got[64 * usize::from(k)..], pattern(k, 64), "write {k}");
    }
    // An empty batch rings nothing.
    assert_eq!(
        qp.post_sends(std::iter::empty())
            .map_err(|(_, (e, _))| e)
            .unwrap(),
        0
    );
    assert_eq!(hca.backend().doorbells(), before + 1);
}

/// A refused request ends the batch: the ones before it are posted and rung, its region comes
/// back with the error, and the ones after it stay in the caller's iterator. A full queue is
/// such a refusal. A batch of one is copied to BlueFlame as `post_send` copies it; a longer
/// one is not.
#[test]
fn a_batch_stops_at_a_refused_request_and_posts_those_before() {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let remote = RemoteAddr::of(&target);
    let req = |id: u64, op: SendOp, inline: Option<Vec<u8>>| SendRequest {
        id,
        op,
        region: Some(Region::register(&hca, 64, ALL).unwrap()),
        len: None,
        signaled: true,
        inline,
    };
    // READ carries no inline data: the third is refused.
    let reqs = vec![
        req(0, SendOp::Write(remote), None),
        req(1, SendOp::Write(remote), None),
        req(2, SendOp::Read(remote), Some(vec![1])),
        req(3, SendOp::Write(remote), None),
    ];
    let mut it = reqs.into_iter();
    let before = hca.backend().doorbells();
    let (posted, (e, region)) = qp.post_sends(&mut it).unwrap_err();
    assert_eq!(posted, 2);
    assert!(matches!(e, Error::InlineTooLong { max: 0, .. }), "{e}");
    assert!(region.is_some(), "the refused request's region comes back");
    assert_eq!(
        it.next().map(|r| r.id),
        Some(3),
        "the rest stay with the caller"
    );
    assert_eq!(hca.backend().doorbells(), before + 1);
    assert_eq!(qp.outstanding(), (2, 0));
    for c in wait(&mut cq, 2) {
        qp.complete(c).unwrap();
    }
    // Ten requests, eight slots: eight posted, the ninth refused as the queue is full.
    let reqs: Vec<_> = (0..10)
        .map(|id| req(id, SendOp::Write(remote), None))
        .collect();
    let mut it = reqs.into_iter();
    let (posted, (e, region)) = qp.post_sends(&mut it).unwrap_err();
    assert_eq!(posted, 8);
    assert!(matches!(e, Error::QueueFull { capacity: 8, .. }), "{e}");
    assert!(region.is_some());
    assert_eq!(it.len(), 1);
    for c in wait(&mut cq, 8) {
        qp.complete(c).unwrap();
    }
    // BlueFlame: a batch of one is copied, a batch of three is not.
    qp.set_blueflame(true);
    let copies = dev.blueflame_wqes();
    qp.post_sends([req(20, SendOp::Write(remote), None)])
        .map_err(|(_, (e, _))| e)
        .unwrap();
    assert_eq!(dev.blueflame_wqes(), copies + 1);
    let three = (21..24).map(|id| req(id, SendOp::Write(remote), None));
    assert_eq!(qp.post_sends(three).map_err(|(_, (e, _))| e).unwrap(), 3);
    assert_eq!(dev.blueflame_wqes(), copies + 1);
    for c in wait(&mut cq, 4) {
        qp.complete(c).unwrap();
    }
    assert_eq!(qp.outstanding(), (0, 0));
}

/// Posts one BlueFlame-copied WRITE on `hca` (on its own model `dev`), runs `after` (what the
/// backend needs before the device acts), and returns how many WQEs the device took from the
/// copy rather than the ring.
fn blueflame_through<B: Backend>(hca: &Hca<B>, dev: &mlx5_sim::Device, after: impl Fn(&B)) -> u64 {
    let mut cq = Cq::create(hca, 6).unwrap();
    let mut qp = rts(hca, &cq, 3);
    let target = Region::register(hca, 4096, ALL).unwrap();
    qp.set_blueflame(true);
    let copies = dev.blueflame_wqes();
    let req = SendRequest {
        id: 1,
        op: SendOp::Write(RemoteAddr::of(&target)),
        region: Some(Region::register(hca, 64, ALL).unwrap()),
        len: None,
        signaled: true,
        inline: None,
    };
    qp.post_sends([req]).map_err(|(_, (e, _))| e).unwrap();
    after(hca.backend());
    for c in wait(&mut cq, 1) {
        qp.complete(c).unwrap();
    }
    dev.blueflame_wqes() - copies
}

/// A BlueFlame copy reaches the device through each backend wrapper: the run-time choice
/// (`AnyBackend`) and the forging wrapper with nothing to forge pass it on; `Deferred`, while
/// it holds doorbells, keeps only its first word (a plain doorbell: the device reads the WQE
/// from the ring) until released.
#[test]
fn a_blueflame_copy_passes_through_every_backend_wrapper() {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(crate::backend::AnyBackend::Sim(be), &HcaConfig::default()).unwrap();
    assert_eq!(blueflame_through(&hca, &dev, |_| {}), 1);

    #[cfg(feature = "forge")]
    {
        use crate::backend::forge::{ForgeBackend, Sites};
        let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
        let forge = ForgeBackend::new(be, Vec::new(), Sites::ALL);
        let hca = Hca::bring_up(forge, &HcaConfig::default()).unwrap();
        assert_eq!(blueflame_through(&hca, &dev, |_| {}), 1);
    }

    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    hca.backend().hold();
    // SAFETY: released right after the post, while the QP that rang lives.
    let release = |b: &Deferred<SimBackend>| unsafe { b.stop() };
    assert_eq!(blueflame_through(&hca, &dev, release), 0);
    assert_eq!(
        hca.backend().copies(),
        1,
        "the copy was seen, and held as a doorbell"
    );
}
