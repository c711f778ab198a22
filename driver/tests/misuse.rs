//! The misuses the compiler cannot see, refused at run time with a typed error before anything
//! reaches the device: a QP on another HCA's CQ, another HCA's region posted to a QP, a packet
//! of another pool given to the queues, and a second set of Ethernet queues on one HCA (which
//! would take the NIC receive root table from the first). (The misuses the compiler does see
//! are the compile-fail cases of ui-tests/tests/driver.)

mod common;

use common::{frame, qp_config, to_rts, ALL, MAC_A};
use mlx5_driver::cq::Cq;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::mr::Region;
use mlx5_driver::qp::{Qp, SendOp, SendRequest};
use mlx5_driver::Error;
use mlx5_prm::rt::Bytes;
use mlx5_sim::Mode;
use std::time::{Duration, Instant};

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

/// Sends one frame to `MAC_A` carrying `seq` through `eth` (looped back by the model) and
/// returns the sequence numbers received within two seconds.
fn round_trip(
    eth: &mut EthQueues<'_, mlx5_driver::backend::sim::SimBackend>,
    seq: u32,
) -> Vec<u32> {
    let mut p = eth.pool().alloc().unwrap();
    p.write(&frame(MAC_A, seq, 60)).unwrap();
    assert_eq!(eth.tx_batch(&mut vec![p]).unwrap(), 1);
    let (mut rx, deadline) = (Vec::new(), Instant::now() + Duration::from_secs(2));
    while rx.is_empty() && Instant::now() < deadline {
        eth.rx_batch(&mut rx, 8).unwrap();
    }
    rx.iter().map(|p| p.data().read_be32(14)).collect()
}

/// The NIC has one receive root flow table: a second set of queues on the same HCA would make
/// its own table the root and the first set's steering would stop. It is refused (whatever
/// pool it is on) before any command or allocation, the first keeps receiving, and once the
/// first is dropped a new set is made.
#[test]
fn a_second_set_of_ethernet_queues_on_one_hca_is_refused_until_the_first_goes() {
    let (hca, dev) = common::up(Mode::Inline);
    dev.loopback(true);
    let config = EthConfig {
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let (pool, other) = (
        Pool::new(&hca, 1024, 2048).unwrap(),
        Pool::new(&hca, 1024, 2048).unwrap(),
    );
    let mut first = EthQueues::create(&pool, &config).unwrap();
    assert_eq!(round_trip(&mut first, 1), [1]);
    let (commands, regions, objects) = (dev.commands().len(), dev.dma().regions(), dev.objects());
    for p in [&pool, &other] {
        match EthQueues::create(p, &config) {
            Err(Error::Claimed { what, holder }) => {
                assert!(what.contains("receive root"), "{what}");
                assert!(holder.contains("Ethernet queues"), "{holder}");
            }
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("a second set of queues was made on the same HCA"),
        }
    }
    assert_eq!(dev.commands().len(), commands, "no command sent");
    assert_eq!(dev.dma().regions(), regions, "nothing allocated");
    assert_eq!(dev.objects(), objects);
    assert_eq!(round_trip(&mut first, 2), [2], "the first still receives");
    drop(first);
    let mut second = EthQueues::create(&other, &config).unwrap();
    assert_eq!(round_trip(&mut second, 3), [3]);
    // Queues on another HCA were never affected by this one's claim.
    let (hb, _db) = common::up(Mode::Inline);
    let pb = Pool::new(&hb, 1024, 2048).unwrap();
    EthQueues::create(&pb, &config).unwrap();
}
