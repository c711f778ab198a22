//! A CQ error (here an overrun the model is told to report) reaches the driver as an event
//! naming the CQ, and Ethernet queues recover from it by being recreated: every buffer comes
//! back to the pool, the frames the device could not report are counted by it as dropped, and
//! traffic flows again. Inline and threaded.

mod common;

use common::{frame, MAC_A};
use mlx5_driver::backend::Backend;
use mlx5_driver::eq::Event;
use mlx5_driver::eth::{EthConfig, EthQueues, Packet, Pool};
use mlx5_driver::Hca;
use mlx5_prm::rt::Bytes;
use mlx5_sim::{Device, Mode};
use std::time::{Duration, Instant};

/// Sends frames `seqs` and receives until `want` of them came back or a second passed with
/// none; returns the sequence numbers received.
fn round<'p, B: Backend>(
    pool: &'p Pool<'p, B>,
    eth: &mut EthQueues<'p, B>,
    dev: &Device,
    seqs: std::ops::Range<u32>,
    want: usize,
) -> Vec<u32> {
    let mut batch: Vec<Packet<'p>> = Vec::new();
    for seq in seqs {
        let mut p = pool.alloc().unwrap();
        p.write(&frame(MAC_A, seq, 64)).unwrap();
        batch.push(p);
    }
    let n = batch.len();
    assert_eq!(eth.tx_batch(&mut batch).unwrap(), n, "the SQ took them all");
    let (mut rx, mut got) = (Vec::new(), Vec::new());
    let mut last = Instant::now();
    while got.len() < want && last.elapsed() < Duration::from_secs(1) {
        if eth.rx_batch(&mut rx, 32).unwrap() == 0 {
            dev.tick();
            std::thread::yield_now();
        } else {
            last = Instant::now();
        }
        got.extend(rx.drain(..).map(|p| p.data().read_be32(14)));
    }
    got
}

/// Polls events until one names a CQ; returns it.
fn cq_error<B: Backend>(hca: &Hca<B>) -> (u32, u8) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        for e in hca.poll_events().unwrap() {
            if let Event::CqError { cqn, syndrome } = e {
                return (cqn, syndrome);
            }
        }
        assert!(Instant::now() < deadline, "no CQ error event");
        std::thread::yield_now();
    }
}

/// Which CQ overruns.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Hit {
    /// The receive CQ: the first frame back finds it full.
    Rx,
    /// The send CQ: the first signaled send finds it full.
    Tx,
}

fn overrun_and_recover(mode: Mode, hit: Hit) {
    let (hca, dev) = common::up(mode);
    dev.loopback(true);
    let pool = Pool::new(&hca, 256, 2048).unwrap();
    let config = EthConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        signal_every: 8,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    assert_eq!(
        round(&pool, &mut eth, &dev, 0..16, 16),
        (0..16).collect::<Vec<_>>()
    );

    let dropped = dev.rx_dropped();
    let (tx_cq, rx_cq) = eth.cqns();
    let target = if hit == Hit::Rx { rx_cq } else { tx_cq };
    dev.faults().overrun_cq(target);
    let got = round(&pool, &mut eth, &dev, 16..32, 16);
    assert_eq!(
        cq_error(&hca),
        (target, 1),
        "{mode:?} {hit:?}: an overrun of that CQ"
    );
    if hit == Hit::Rx {
        // Every frame from the overrun on landed with no completion: dropped, and counted.
        assert_eq!(
            (got.len() as u64, dev.rx_dropped() - dropped),
            (0, 16),
            "{mode:?}: frames neither received nor counted"
        );
    } else {
        // The frames came back; the sends' completions are lost, so they stay outstanding
        // until the queues go.
        assert_eq!((got.len(), eth.outstanding().0), (16, 16));
    }
    let before = eth.counters();

    let mut eth = eth.recover().unwrap();
    assert_eq!(eth.counters(), before, "the counters carry on");
    assert_ne!(eth.cqns(), (tx_cq, rx_cq), "new CQs");
    let (tx_out, rx_posted) = eth.outstanding();
    assert_eq!(tx_out, 0);
    assert_eq!(pool.free_buffers() + rx_posted, 256, "every buffer back");
    assert_eq!(
        round(&pool, &mut eth, &dev, 100..148, 48),
        (100..148).collect::<Vec<_>>(),
        "{mode:?} {hit:?}: traffic after recovery"
    );
    assert!(hca.quarantined().buffers == 0);
    eth.destroy().unwrap();
    assert_eq!(pool.free_buffers(), 256);
    drop(pool);
    let q = hca.teardown().unwrap();
    assert_eq!(q.buffers, 0);
    assert_eq!(dev.pages_held(), 0);
}

#[test]
fn queues_recover_from_a_cq_overrun_inline() {
    overrun_and_recover(Mode::Inline, Hit::Rx);
    overrun_and_recover(Mode::Inline, Hit::Tx);
}

#[test]
fn queues_recover_from_a_cq_overrun_threaded() {
    overrun_and_recover(Mode::Threaded, Hit::Rx);
    overrun_and_recover(Mode::Threaded, Hit::Tx);
}
