//! Every kind of resource dropped in every order: one CQ, one region, one QP (reporting to
//! that CQ, with a region posted to it), one packet pool, and one set of Ethernet queues (on a
//! pool of their own, with packets in flight), all 120 orders. After each, the model holds
//! exactly the objects of a fresh bring-up and the driver exactly the DMA memory of the HCA
//! itself, with nothing quarantined; after teardown, nothing at all.

mod common;

use common::{frame, qp_config, to_rts, ALL, MAC_A};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::Cq;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::mr::Region;
use mlx5_driver::qp::Qp;
use mlx5_driver::Hca;
use mlx5_sim::Mode;

/// All orders of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            all.push(q);
        }
    }
    all
}

/// Makes the five resources, uses them a little, and drops them in `order` (0 CQ, 1 region,
/// 2 QP, 3 pool, 4 queues).
fn make_and_drop(hca: &Hca<SimBackend>, queues_pool: &Pool<'_, SimBackend>, order: &[usize]) {
    let cq = Cq::create(hca, 6).unwrap();
    let qp = Qp::create(hca, &cq, &cq, &qp_config(4)).unwrap();
    let qpn = qp.qpn();
    let mut qp = to_rts(qp, qpn);
    qp.post_recv(1, Region::register(hca, 256, ALL).unwrap())
        .map_err(|(e, _)| e)
        .unwrap();
    let region = Region::register(hca, 4096, ALL).unwrap();
    let pool = Pool::new(hca, 64, 2048).unwrap();
    // (A packet borrows its pool, so one held across the drops would pin the pool's place in
    // the order: the compiler sees to that one.)
    drop(pool.alloc());
    assert_eq!(pool.free_buffers(), 64);
    let config = EthConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        signal_every: 16,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(queues_pool, &config).unwrap();
    let mut batch = Vec::new();
    queues_pool.alloc_batch(&mut batch, 5);
    for (seq, p) in batch.iter_mut().enumerate() {
        p.write(&frame(MAC_A, seq as u32, 60)).unwrap();
    }
    assert_eq!(eth.tx_batch(&mut batch).unwrap(), 5);
    drop(batch);

    let (mut cq, mut region, mut qp) = (Some(cq), Some(region), Some(qp));
    let (mut pool, mut eth) = (Some(pool), Some(eth));
    for &k in order {
        match k {
            0 => drop(cq.take()),
            1 => drop(region.take()),
            2 => drop(qp.take()),
            3 => drop(pool.take()),
            4 => drop(eth.take()),
            _ => unreachable!(),
        }
    }
}

#[test]
fn every_resource_dropped_in_every_order_leaves_nothing_behind() {
    let (hca, device) = common::up(Mode::Inline);
    device.loopback(true);
    let base = (
        device.objects(),
        device.dma().regions(),
        device.dma().allocated(),
    );
    let queues_pool = Pool::new(&hca, 256, 2048).unwrap();
    let with_pool = (device.objects(), device.dma().regions());
    let orders = permutations(5);
    assert_eq!(orders.len(), 120);
    for order in &orders {
        make_and_drop(&hca, &queues_pool, order);
        assert_eq!(
            (device.objects(), device.dma().regions()),
            with_pool,
            "order {order:?} left something behind"
        );
        assert_eq!(queues_pool.free_buffers(), 256, "order {order:?}");
        assert_eq!(hca.quarantined().buffers, 0, "order {order:?}");
    }
    drop(queues_pool);
    assert_eq!(
        (
            device.objects(),
            device.dma().regions(),
            device.dma().allocated()
        ),
        base
    );
    assert_eq!(device.dma_faults(), 0);
    hca.teardown().unwrap();
    assert_eq!(device.objects().total(), 0);
    assert_eq!(device.dma().regions(), 0);
}
