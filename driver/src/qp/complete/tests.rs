//! The slot table on the model: requests posted in batches round a small ring come back in
//! order through `complete_with`, each region once; a full table refuses as the queue did; a
//! completion that names no outstanding WQE changes nothing; a region of another HCA is still
//! refused, by `post_send` and `post_batch` alike.

use super::*;
use crate::backend::sim::SimBackend;
use crate::backend::Deferred;
use crate::cq::Cq;
use crate::mr::Region;
use crate::qp::post::tests::{forged, pattern, read, rts, wait, ALL};
use crate::qp::{RemoteAddr, SendOp, SendRequest};
use crate::{Hca, HcaConfig};
use mlx5_prm::rt::BytesMut;
use mlx5_prm::CqeOpcode;

/// Bytes of the inline WRITE in each batch.
const INLINE: usize = crate::qp::MAX_INLINE_RDMA;

/// A WRITE of a fresh 64-byte region to `remote`.
fn write<'h, B: Backend>(
    hca: &'h Hca<B>,
    id: u64,
    remote: RemoteAddr,
    signaled: bool,
) -> SendRequest<'h, B> {
    let src = Region::register(hca, 64, ALL).unwrap();
    src.bytes().write_bytes(0, &pattern(id as u8, 64));
    SendRequest {
        id,
        op: SendOp::Write(remote),
        region: Some(src),
        len: None,
        signaled,
        inline: None,
    }
}

/// Five batches of five WRITEs (one of them inline) over an 8-slot ring (so batches straddle
/// its end), each rung once and given back by one completion through `complete_with`: in
/// posting order, every region, the completion with the last only. A completion for a WQE
/// not yet posted, or of another QP, is refused before the closure runs, and changes nothing;
/// so is the device's CQE written again once its requests are back. (Those are forged in the
/// last round: a forged CQE takes a place in the CQ that the model does not know of.)
#[test]
fn batches_round_the_slot_table_come_back_in_order_through_complete_with() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    for round in 0..5u64 {
        let mut batch: Vec<_> = (0..5)
            .map(|k| {
                let id = round * 5 + k;
                let remote = RemoteAddr {
                    addr: target.addr() + 64 * k,
                    rkey: target.rkey(),
                };
                let mut req = write(&hca, id, remote, k == 4);
                if k == 2 {
                    // One carries its bytes inline (its data Vec leaves with the post).
                    req.region = None;
                    req.inline = Some(pattern(id as u8, INLINE));
                }
                req
            })
            .collect();
        let before = hca.backend().doorbells();
        assert_eq!(qp.post_batch(&mut batch).unwrap(), 5);
        assert!(batch.is_empty(), "the posted requests leave the batch");
        assert_eq!(hca.backend().doorbells(), before + 1, "one doorbell");
        assert_eq!(qp.outstanding(), (5, 0));
        let c = wait(&mut cq, 1).remove(0);
        let (qpn, last) = (c.qpn, c.wqe_counter);
        assert_eq!(last, (round * 5 + 4) as u16);
        let forging = round == 4;
        if forging {
            // Not yet posted, and another QP's: refused, nothing handed out or taken.
            let ahead = forged(&mut cq, CqeOpcode::Req, qpn, last.wrapping_add(1), 0);
            let other = forged(&mut cq, CqeOpcode::Req, qpn + 1, last, 0);
            for bad in [ahead, other] {
                let mut called = false;
                assert!(qp.complete_with(bad, |_| called = true).is_err());
                assert!(!called);
                assert_eq!(qp.outstanding(), (5, 0));
            }
        }
        let mut got = Vec::new();
        let n = qp
            .complete_with(c, |d| {
                got.push((d.id, d.region.is_some(), d.completion.is_some()));
            })
            .unwrap();
        assert_eq!(n, 5);
        let want: Vec<_> = (0..5).map(|k| (round * 5 + k, k != 2, k == 4)).collect();
        assert_eq!(got, want, "round {round}");
        assert_eq!(qp.outstanding(), (0, 0));
        for k in 0..5 {
            let (at, len) = (64 * k as usize, if k == 2 { INLINE } else { 64 });
            let bytes = read(&target, at + len);
            assert_eq!(bytes[at..], pattern((round * 5 + k) as u8, len));
        }
        if forging {
            // The same CQE again names nothing outstanding.
            let again = forged(&mut cq, CqeOpcode::Req, qpn, last, 0);
            assert!(qp.complete_with(again, |_| unreachable!()).is_err());
        }
    }
}

/// A full slot table is a full queue: `post_send` hands the region back, `post_batch` leaves
/// the request at the front of the batch, nothing is rung. The completion frees the slots,
/// and the next lap reuses them.
#[test]
fn a_full_slot_table_refuses_until_a_completion_frees_it() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 2);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let remote = RemoteAddr::of(&target);
    for lap in 0..3u64 {
        for k in 0..4 {
            let req = write(&hca, lap * 4 + k, remote, k == 3);
            qp.post_send(req).map_err(|(e, _)| e).unwrap();
        }
        assert_eq!(qp.outstanding(), (4, 0));
        let before = hca.backend().doorbells();
        let (e, region) = qp.post_send(write(&hca, 99, remote, true)).unwrap_err();
        assert!(matches!(e, Error::QueueFull { capacity: 4, .. }), "{e}");
        assert!(region.is_some(), "the region comes back");
        let mut batch = vec![write(&hca, 98, remote, true)];
        let (posted, e) = qp.post_batch(&mut batch).unwrap_err();
        assert_eq!(posted, 0);
        assert!(matches!(e, Error::QueueFull { capacity: 4, .. }), "{e}");
        assert_eq!(batch.len(), 1, "the refused request stays with the caller");
        assert!(batch[0].region.is_some());
        assert_eq!(hca.backend().doorbells(), before, "nothing rung");
        assert_eq!(qp.outstanding(), (4, 0));
        let done = qp.complete(wait(&mut cq, 1).remove(0)).unwrap();
        let ids: Vec<_> = done.iter().map(|d| d.id).collect();
        assert_eq!(ids, (lap * 4..lap * 4 + 4).collect::<Vec<_>>());
        assert!(done.iter().all(|d| d.region.is_some()));
        assert_eq!(qp.outstanding(), (0, 0));
    }
}

/// A region of another HCA is refused before anything is written, by either post: its region
/// comes back, and a batch stops at it after posting those before.
#[test]
fn a_foreign_region_is_still_refused() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let (be2, _dev2) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    let other = Hca::bring_up(be2, &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let remote = RemoteAddr::of(&target);
    let foreign = |id| write(&other, id, remote, true);
    let (e, region) = qp.post_send(foreign(1)).unwrap_err();
    assert!(
        matches!(e, Error::ForeignResource { what: "region", .. }),
        "{e}"
    );
    assert!(region.is_some());
    assert_eq!(qp.outstanding(), (0, 0));
    let mut batch = vec![
        write(&hca, 2, remote, true),
        foreign(3),
        write(&hca, 4, remote, true),
    ];
    let (posted, e) = qp.post_batch(&mut batch).unwrap_err();
    assert_eq!(posted, 1);
    assert!(
        matches!(e, Error::ForeignResource { what: "region", .. }),
        "{e}"
    );
    assert_eq!(batch.iter().map(|r| r.id).collect::<Vec<_>>(), [3, 4]);
    assert!(batch.iter().all(|r| r.region.is_some()));
    assert_eq!(qp.outstanding(), (1, 0));
    let done = qp.complete(wait(&mut cq, 1).remove(0)).unwrap();
    assert_eq!(done.iter().map(|d| d.id).collect::<Vec<_>>(), [2]);
}

/// A receive CQE of `qpn` for WQE `wqe_counter` with `byte_cnt` bytes, forged and polled.
fn forged_recv(
    cq: &mut Cq<'_, SimBackend>,
    qpn: u32,
    wqe_counter: u16,
    byte_cnt: u32,
) -> Completion {
    forged(cq, CqeOpcode::RespSend, qpn, wqe_counter, byte_cnt)
}

/// A receive completion the QP cannot match is refused with everything left as it was: one
/// that names another WQE than the receive at the head, and one that claims more bytes than
/// the head's region holds (its region stays posted, not lost). The one that matches then
/// gives the region back.
#[test]
fn a_receive_completion_that_does_not_match_changes_nothing() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    let qpn = qp.qpn();
    let rx = Region::register(&hca, 64, ALL).unwrap();
    qp.post_recv(7, rx).map_err(|(e, _)| e).unwrap();
    for (wqe_counter, byte_cnt) in [(0, 65), (1, 8), (0xffff, 8)] {
        let c = forged_recv(&mut cq, qpn, wqe_counter, byte_cnt);
        let mut called = false;
        let e = qp.complete_with(c, |_| called = true).unwrap_err();
        assert!(matches!(e, Error::BadDeviceValue { .. }), "{e}");
        assert!(!called, "WQE {wqe_counter}, {byte_cnt} bytes");
        assert_eq!(
            qp.outstanding(),
            (0, 1),
            "WQE {wqe_counter}, {byte_cnt} bytes"
        );
    }
    let done = qp.complete(forged_recv(&mut cq, qpn, 0, 64)).unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(
        (done[0].id, done[0].region.as_ref().map(|r| r.len())),
        (7, Some(64))
    );
    assert_eq!(qp.outstanding(), (0, 0));
}

/// A completion from the CQ of another HCA is refused, even one for a QP of the same number
/// at the same WQE: the receive it would match stays posted.
#[test]
fn a_completion_of_another_hca_is_refused() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let (be2, _dev2) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    let other = Hca::bring_up(be2, &HcaConfig::default()).unwrap();
    let cq = Cq::create(&hca, 6).unwrap();
    let mut cq2 = Cq::create(&other, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    let mut qp2 = rts(&other, &cq2, 3);
    assert_eq!(
        qp.qpn(),
        qp2.qpn(),
        "the two models number their first QP alike"
    );
    qp.post_recv(1, Region::register(&hca, 64, ALL).unwrap())
        .map_err(|(e, _)| e)
        .unwrap();
    qp2.post_recv(2, Region::register(&other, 64, ALL).unwrap())
        .map_err(|(e, _)| e)
        .unwrap();
    let tx = Region::register(&other, 64, ALL).unwrap();
    let req = SendRequest {
        id: 3,
        op: SendOp::Send,
        region: Some(tx),
        len: Some(8),
        signaled: true,
        inline: None,
    };
    qp2.post_send(req).map_err(|(e, _)| e).unwrap();
    for c in wait(&mut cq2, 2) {
        if c.opcode == CqeOpcode::RespSend.raw() {
            let mut called = false;
            assert!(qp.complete_with(c, |_| called = true).is_err());
            assert!(!called);
            assert_eq!(qp.outstanding(), (0, 1), "the receive stays posted");
        }
    }
}
