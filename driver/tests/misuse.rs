//! The misuses the compiler cannot see, refused at run time with a typed error before anything
//! reaches the device: a QP on another HCA's CQ, another HCA's region posted to a QP, and a
//! packet of another pool given to the queues. (The misuses the compiler does see are the
//! compile-fail cases of tests/ui.)

mod common;

use common::{frame, qp_config, to_rts, ALL, MAC_A};
use mlx5_driver::cq::Cq;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::mr::Region;
use mlx5_driver::qp::{Qp, SendOp, SendRequest};
use mlx5_driver::Error;
use mlx5_prm::rt::Bytes;
use mlx5_sim::Mode;

fn foreign(e: &Error, what: &str) -> bool {
    matches!(e, Error::ForeignResource { what: w, owner } if *w == what && (*owner == "HCA" || *owner == "pool"))
}

#[test]
fn a_qp_on_another_hcas_cq_is_refused_before_any_command() {
    let (ha, da) = common::up(Mode::Inline);
    let (hb, db) = common::up(Mode::Inline);
    let cq_a = Cq::create(&ha, 6).unwrap();
    let cq_b = Cq::create(&hb, 6).unwrap();
    let (commands, regions) = (da.commands().len(), da.dma().regions());
    let (b_commands, b_regions) = (db.commands().len(), db.dma().regions());
    for (send, recv) in [(&cq_a, &cq_b), (&cq_b, &cq_a), (&cq_b, &cq_b)] {
        match Qp::create(&ha, send, recv, &qp_config(4)) {
            Err(e) => assert!(foreign(&e, "cq"), "{e}"),
            Ok(_) => panic!("a QP of A reporting to B's CQ was created"),
        }
    }
    assert_eq!(
        (da.commands().len(), da.dma().regions()),
        (commands, regions)
    );
    assert_eq!(
        (db.commands().len(), db.dma().regions()),
        (b_commands, b_regions)
    );
    assert_eq!(da.objects().qps + db.objects().qps, 0);
}

#[test]
fn another_hcas_region_is_refused_by_a_qp_and_handed_back() {
    let (ha, da) = common::up(Mode::Inline);
    let (hb, _db) = common::up(Mode::Inline);
    let cq = Cq::create(&ha, 6).unwrap();
    let qp = Qp::create(&ha, &cq, &cq, &qp_config(4)).unwrap();
    let qpn = qp.qpn();
    let mut qp = to_rts(qp, qpn);
    let uar = ha.info().uar;
    let commands = da.commands().len();
    let theirs = Region::register(&hb, 64, ALL).unwrap();
    let key = theirs.lkey();
    let (e, back) = qp.post_recv(1, theirs).unwrap_err();
    assert!(foreign(&e, "region"), "{e}");
    assert_eq!(back.lkey(), key, "the same region comes back");
    let req = SendRequest {
        id: 2,
        op: SendOp::Send,
        region: Some(back),
        len: None,
        signaled: true,
        inline: None,
    };
    let (e, back) = qp.post_send(req).unwrap_err();
    assert!(foreign(&e, "region"), "{e}");
    assert_eq!(back.map(|r| r.lkey()), Some(key));
    assert_eq!(qp.outstanding(), (0, 0), "nothing posted");
    assert_eq!(da.last_send_doorbell(uar), None, "no doorbell rung");
    assert_eq!(da.commands().len(), commands, "no command sent");
    // Its own regions are taken.
    let mine = Region::register(&ha, 64, ALL).unwrap();
    qp.post_recv(3, mine).map_err(|(e, _)| e).unwrap();
    assert_eq!(qp.outstanding(), (0, 1));
}

#[test]
fn a_packet_of_another_pool_is_refused_and_handed_back() {
    let (ha, da) = common::up(Mode::Inline);
    let (hb, _db) = common::up(Mode::Inline);
    let pool = Pool::new(&ha, 64, 2048).unwrap();
    let same_hca = Pool::new(&ha, 8, 2048).unwrap();
    let other_hca = Pool::new(&hb, 8, 2048).unwrap();
    let mut eth = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    let uar = ha.info().uar;
    for other in [&same_hca, &other_hca] {
        let mut p = other.alloc().unwrap();
        p.write(&frame(MAC_A, 7, 60)).unwrap();
        let mut batch = vec![p];
        let e = eth.tx_batch(&mut batch).unwrap_err();
        assert!(foreign(&e, "packet"), "{e}");
        assert_eq!(batch.len(), 1, "handed back in the batch");
        assert_eq!(batch[0].data().read_be32(14), 7, "the packet is whole");
        assert_eq!(eth.outstanding().0, 0);
        assert_eq!(da.tx_frames(), 0);
        assert_eq!(da.last_send_doorbell(uar), None);
        drop(batch);
        assert_eq!(other.free_buffers(), 8, "back to its own pool");
    }
    // The queues' own pool: every buffer is posted to the RQ (512 slots), none was sent.
    assert_eq!((pool.free_buffers(), eth.outstanding()), (0, (0, 64)));
}
