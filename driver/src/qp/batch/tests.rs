//! The typed batch on the model: every operation's call executes as posted with one doorbell
//! per batch, refusals give the region back and write nothing, and a batch that is leaked
//! leaves its requests for the next doorbell.

use super::*;
use crate::backend::sim::SimBackend;
use crate::backend::Deferred;
use crate::cq::Cq;
use crate::hca::Hca;
use crate::qp::post::tests::{pattern, read, rts, wait, ALL};
use crate::HcaConfig;
use mlx5_prm::rt::{Bytes, BytesMut};

fn up() -> (Hca<Deferred<SimBackend>>, std::sync::Arc<mlx5_sim::Device>) {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    (hca, dev)
}

/// One batch of each typed call and a general request (inline data), on a QP connected to
/// itself: one doorbell, the counter past all six, and each did what it says.
#[test]
fn every_typed_call_executes_as_posted_with_one_doorbell() {
    let (hca, _dev) = up();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 4);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    target.bytes().write_bytes(1024, &pattern(9, 64));
    target.bytes().write_be64(2048, 100);
    target.bytes().write_be64(2056, 7);
    let at = |off: u64| RemoteAddr {
        addr: target.addr() + off,
        rkey: target.rkey(),
    };
    let region = |seed: u8, len: usize| {
        let r = Region::register(&hca, len, ALL).unwrap();
        r.bytes().write_bytes(0, &pattern(seed, len));
        r
    };
    // The SEND lands in a receive of the same QP.
    let inbox = Region::register(&hca, 64, ALL).unwrap();
    qp.post_recv(99, inbox).map_err(|(e, _)| e).unwrap();
    let before = hca.backend().doorbells();
    let mut batch = qp.batch();
    assert!(batch.is_empty());
    assert_eq!(batch.room(), 16);
    batch.write(0, region(1, 64), at(0), false).unwrap();
    batch.read(1, region(0, 64), at(1024), false).unwrap();
    batch.send(2, region(3, 64), false).unwrap();
    batch
        .fetch_add(3, region(0, 8), at(2048), 5, false)
        .unwrap();
    batch
        .compare_swap(4, region(0, 8), at(2056), 7, 70, false)
        .unwrap();
    let inline = SendRequest {
        id: 5,
        op: SendOp::Write(at(512)),
        region: None,
        len: None,
        signaled: true,
        inline: Some(pattern(5, 20)),
    };
    batch.post(inline).map_err(|(e, _)| e).unwrap();
    assert_eq!((batch.len(), batch.room()), (6, 10));
    assert_eq!(
        hca.backend().doorbells(),
        before,
        "nothing rung while the batch lasts"
    );
    assert_eq!(batch.ring(), 6);
    assert_eq!(hca.backend().doorbells(), before + 1, "one doorbell");
    let record = qp.inner.object.memory(1).slice(0, 8);
    assert_eq!(record.read_be32(4) & 0xffff, 6, "the counter past all six");
    // Two completions: the receive (the SEND) and the signalled last request.
    let mut done = Vec::new();
    for c in wait(&mut cq, 2) {
        done.extend(qp.complete(c).unwrap());
    }
    let ids: Vec<u64> = done.iter().map(|d| d.id).collect();
    assert_eq!(ids, [99, 0, 1, 2, 3, 4, 5]);
    let back = |id: u64| {
        done.iter()
            .find(|d| d.id == id)
            .unwrap()
            .region
            .as_ref()
            .unwrap()
    };
    assert_eq!(read(&target, 64), pattern(1, 64), "WRITE");
    assert_eq!(read(back(1), 64), pattern(9, 64), "READ");
    assert_eq!(read(back(99), 64), pattern(3, 64), "SEND");
    assert_eq!(
        back(3).bytes().read_be64(0),
        100,
        "fetch-add: the old value"
    );
    assert_eq!(target.bytes().read_be64(2048), 105, "fetch-add: the sum");
    assert_eq!(
        back(4).bytes().read_be64(0),
        7,
        "compare-swap: the old value"
    );
    assert_eq!(target.bytes().read_be64(2056), 70, "compare-swap: swapped");
    assert_eq!(read(&target, 532)[512..], pattern(5, 20), "inline WRITE");
    assert_eq!(qp.outstanding(), (0, 0));
}

/// A refused call gives its region back, writes nothing and leaves the batch going: a region
/// of another HCA, and a full queue. The requests before it stay posted and are rung when the
/// batch ends; an empty batch rings nothing.
#[test]
fn a_refused_call_gives_the_region_back_and_the_batch_goes_on() {
    let (hca, _dev) = up();
    let (other, _odev) = up();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 3);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let remote = RemoteAddr::of(&target);
    let before = hca.backend().doorbells();
    drop(qp.batch());
    assert_eq!(
        hca.backend().doorbells(),
        before,
        "an empty batch rings nothing"
    );
    let mut batch = qp.batch();
    batch
        .write(0, Region::register(&hca, 64, ALL).unwrap(), remote, false)
        .unwrap();
    let foreign = Region::register(&other, 64, ALL).unwrap();
    let key = foreign.lkey();
    let (e, back) = batch.write(1, foreign, remote, true).unwrap_err();
    assert!(matches!(e, Error::ForeignResource { .. }), "{e}");
    assert_eq!(back.lkey(), key, "the same region back");
    assert_eq!(batch.len(), 1);
    // Eight slots: seven more fit, the ninth request is refused.
    for id in 2..9 {
        let r = Region::register(&hca, 64, ALL).unwrap();
        batch.write(id, r, remote, id == 8).unwrap();
    }
    assert_eq!(batch.room(), 0);
    let r = Region::register(&hca, 64, ALL).unwrap();
    let (e, _r) = batch.read(9, r, remote, true).unwrap_err();
    assert!(matches!(e, Error::QueueFull { capacity: 8, .. }), "{e}");
    drop(batch);
    assert_eq!(hca.backend().doorbells(), before + 1);
    let done = qp.complete(wait(&mut cq, 1).remove(0)).unwrap();
    assert_eq!(done.len(), 8);
    assert_eq!(qp.outstanding(), (0, 0));
}

/// A leaked batch rings nothing, and its requests wait in the QP: the next doorbell covers
/// them, and their completion gives their regions back. With BlueFlame on, a batch of one is
/// copied whole, as `post_send` copies it, unless leaked requests come before it.
#[test]
fn a_leaked_batch_leaves_its_requests_for_the_next_doorbell() {
    let (hca, dev) = up();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let mut qp = rts(&hca, &cq, 4);
    let target = Region::register(&hca, 4096, ALL).unwrap();
    let remote = RemoteAddr::of(&target);
    let before = hca.backend().doorbells();
    let mut batch = qp.batch();
    for id in 0..3 {
        let r = Region::register(&hca, 64, ALL).unwrap();
        batch.write(id, r, remote, false).unwrap();
    }
    std::mem::forget(batch);
    assert_eq!(hca.backend().doorbells(), before);
    assert_eq!(qp.outstanding(), (3, 0));
    // BlueFlame on: the next batch of one is not copied, as its WQE is not the next one
    // the device will fetch (the three leaked ones come first).
    qp.set_blueflame(true);
    let copies = (dev.blueflame_wqes(), hca.backend().copies());
    let mut batch = qp.batch();
    let r = Region::register(&hca, 64, ALL).unwrap();
    batch.write(3, r, remote, true).unwrap();
    drop(batch);
    assert_eq!(hca.backend().doorbells(), before + 1);
    assert_eq!(
        hca.backend().copies(),
        copies.1,
        "no copy after a leaked batch"
    );
    let done = qp.complete(wait(&mut cq, 1).remove(0)).unwrap();
    let ids: Vec<u64> = done.iter().map(|d| d.id).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert!(done.iter().all(|d| d.region.is_some()));
    assert_eq!(qp.outstanding(), (0, 0));
    // Otherwise a batch of one is copied whole; a batch of two is not.
    let mut batch = qp.batch();
    let r = Region::register(&hca, 64, ALL).unwrap();
    batch.write(4, r, remote, true).unwrap();
    drop(batch);
    assert_eq!(
        hca.backend().copies(),
        copies.1 + 1,
        "a batch of one is copied"
    );
    assert_eq!(
        dev.blueflame_wqes(),
        copies.0 + 1,
        "and the device took the copy"
    );
    let mut batch = qp.batch();
    for id in 5..7 {
        let r = Region::register(&hca, 64, ALL).unwrap();
        batch.write(id, r, remote, id == 6).unwrap();
    }
    drop(batch);
    assert_eq!(
        hca.backend().copies(),
        copies.1 + 1,
        "a batch of two is not"
    );
    for c in wait(&mut cq, 2) {
        qp.complete(c).unwrap();
    }
    assert_eq!(qp.outstanding(), (0, 0));
}
