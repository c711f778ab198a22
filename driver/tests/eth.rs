//! Raw Ethernet on the device model: frames sent in batches loop back (or cross a wire to a
//! second device) and arrive whole and in order, steered by destination MAC; one doorbell per
//! batch, sent buffers back every `signal_every` packets; unsendable packets are refused and
//! kept; teardown releases every object. Inline and threaded.

mod common;

use common::{frame, MAC_A, MAC_B};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend, Deferred};
use mlx5_driver::eth::{EthConfig, EthQueues, Packet, Pool};
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::rt::Bytes;
use mlx5_sim::{Config, Device, Mode, Wire};
use pcap_file::pcap::PcapReader;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Receives until `want` packets arrived or two seconds passed.
fn receive<'p, B: Backend>(
    eth: &mut EthQueues<'p, B>,
    dev: &Device,
    want: usize,
    out: &mut Vec<Packet<'p>>,
) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while out.len() < want && Instant::now() < deadline {
        if eth.rx_batch(out, 32).unwrap() == 0 {
            dev.tick();
            std::thread::yield_now();
        }
    }
}

/// A pcap capture's destination that the test can read back.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The frames of a pcap stream (read by an independent pcap reader).
fn pcap_frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut reader = PcapReader::new(bytes).unwrap();
    assert_eq!(reader.header().datalink, pcap_file::DataLink::ETHERNET);
    let mut frames = Vec::new();
    while let Some(p) = reader.next_packet() {
        frames.push(p.unwrap().data.into_owned());
    }
    frames
}

fn loopback(mode: Mode, inline_l2: bool) {
    let (hca, dev) = common::up(mode);
    dev.loopback(true);
    let capture = SharedBuf::default();
    dev.capture(capture.clone()).unwrap();
    assert_eq!(
        dev.capture(SharedBuf::default()).unwrap_err().kind(),
        std::io::ErrorKind::AlreadyExists
    );
    let config = EthConfig {
        log_sq_size: 6,
        log_rq_size: 7,
        signal_every: 16,
        inline_l2,
        macs: vec![MAC_A],
    };
    let pool = Pool::new(&hca, 512, 2048).unwrap();
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    assert_eq!(eth.outstanding(), (0, 128), "the RQ starts full");
    // Under Miri (thousands of times slower) one batch of 16 frames, one signaled completion.
    let total = if cfg!(miri) { 16 } else { 1000u32 };
    let (mut next, mut got) = (0u32, 0u32);
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    while got < total {
        // At most the RQ's 128 frames between send and check: the threaded model may hold
        // frames on the wire after their sends completed, and a burst would then find the
        // RQ empty (the model drops such frames, as a NIC does).
        while next < total && batch.len() < 32 && next - got < 128 {
            let Some(mut p) = pool.alloc() else { break };
            let len = 60 + (next as usize * 37) % 1400;
            p.write(&frame(MAC_A, next, len)).unwrap();
            batch.push(p);
            next += 1;
        }
        eth.tx_batch(&mut batch).unwrap();
        receive(&mut eth, &dev, 1, &mut rx);
        for p in rx.drain(..) {
            let len = 60 + (got as usize * 37) % 1400;
            let mut bytes = vec![0u8; p.len()];
            p.data().read_bytes(0, &mut bytes);
            assert_eq!(bytes, frame(MAC_A, got, len), "frame {got}");
            got += 1;
        }
    }
    assert!(batch.is_empty());
    assert_eq!(dev.tx_frames(), u64::from(total));
    assert_eq!(dev.rx_frames(), u64::from(total));
    // The capture holds each looped-back frame once, as sent.
    assert_eq!(dev.stop_capture().unwrap(), u64::from(total));
    let captured = pcap_frames(&capture.0.lock().unwrap());
    assert_eq!(captured.len(), total as usize);
    for (seq, f) in captured.iter().enumerate() {
        let len = 60 + (seq * 37) % 1400;
        assert_eq!(f, &frame(MAC_A, seq as u32, len), "captured frame {seq}");
    }
    assert_eq!(dev.stop_capture().unwrap(), 0, "no capture runs any more");
    let counted = eth.counters();
    assert_eq!(
        (counted.tx_packets, counted.rx_packets),
        (u64::from(total), u64::from(total))
    );
    assert_eq!((counted.tx_errors, counted.rx_errors), (0, 0));
    // Every buffer is accounted for: in the pool, posted to the RQ, or sent but not yet
    // reported (fewer than signal_every). A threaded model may write the last send CQEs
    // after the frames arrived: reap until they are in.
    let deadline = Instant::now() + Duration::from_secs(2);
    while eth.outstanding().0 >= 16 && Instant::now() < deadline {
        eth.tx_batch(&mut batch).unwrap();
        std::thread::yield_now();
    }
    let (tx_out, rx_posted) = eth.outstanding();
    assert!(tx_out < 16, "{tx_out} sends unreported");
    assert_eq!(pool.free_buffers() + tx_out + rx_posted, 512);
    drop((batch, rx));
    eth.destroy().unwrap();
    assert_eq!(pool.free_buffers(), 512, "the rings' buffers come back");
    drop(pool);
    hca.teardown().unwrap();
}

#[test]
fn loopback_delivers_every_frame_in_order_inline() {
    loopback(Mode::Inline, false);
}

#[test]
fn loopback_delivers_every_frame_in_order_threaded() {
    loopback(Mode::Threaded, false);
}

#[test]
fn loopback_with_inline_l2_headers() {
    loopback(Mode::Inline, true);
    loopback(Mode::Threaded, true);
}

#[test]
fn frames_cross_a_wire_and_are_steered_by_destination_mac() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (ha, da) = common::up(mode);
        let (hb, db) = common::up(mode);
        let _wire = Wire::connect(&da, &db);
        // B's port sees every frame that arrives, steered or not.
        let capture = SharedBuf::default();
        db.capture(capture.clone()).unwrap();
        let (pa, pb) = (
            Pool::new(&ha, 4096, 2048).unwrap(),
            Pool::new(&hb, 4096, 2048).unwrap(),
        );
        let mut a = EthQueues::create(&pa, &EthConfig::default()).unwrap();
        let config = EthConfig {
            macs: vec![MAC_B],
            ..EthConfig::default()
        };
        let mut b = EthQueues::create(&pb, &config).unwrap();
        let mut batch = Vec::new();
        for seq in 0..15 {
            let mut p = pa.alloc().unwrap();
            let dst = if seq % 3 == 2 { MAC_A } else { MAC_B };
            p.write(&frame(dst, seq, 64)).unwrap();
            batch.push(p);
        }
        assert_eq!(a.tx_batch(&mut batch).unwrap(), 15);
        let mut rx = Vec::new();
        receive(&mut b, &db, 10, &mut rx);
        let seqs: Vec<u32> = rx.iter().map(|p| p.data().read_be32(14)).collect();
        assert_eq!(seqs, [0, 1, 3, 4, 6, 7, 9, 10, 12, 13], "{mode:?}");
        let deadline = Instant::now() + Duration::from_secs(2);
        while db.rx_dropped() < 5 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(db.rx_dropped(), 5, "frames to another MAC are dropped");
        assert_eq!(db.stop_capture().unwrap(), 15);
        let captured = pcap_frames(&capture.0.lock().unwrap());
        let expected: Vec<Vec<u8>> = (0..15)
            .map(|seq| frame(if seq % 3 == 2 { MAC_A } else { MAC_B }, seq, 64))
            .collect();
        assert_eq!(captured, expected, "{mode:?}");
        drop((rx, batch));
        a.destroy().unwrap();
        b.destroy().unwrap();
        drop((pa, pb));
        ha.teardown().unwrap();
        hb.teardown().unwrap();
    }
}

#[test]
fn one_doorbell_per_batch_and_buffers_back_every_n() {
    let (be, dev) = SimBackend::new(Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    let config = EthConfig {
        signal_every: 16,
        ..EthConfig::default()
    };
    let pool = Pool::new(&hca, 4096, 2048).unwrap();
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    let before = hca.backend().doorbells();
    let mut batch = Vec::new();
    pool.alloc_batch(&mut batch, 32);
    for p in batch.iter_mut() {
        p.set_len(60);
    }
    let free = pool.free_buffers();
    assert_eq!(eth.tx_batch(&mut batch).unwrap(), 32);
    assert_eq!(hca.backend().doorbells(), before + 1, "one doorbell for 32");
    assert_eq!(dev.tx_frames(), 32);
    // The next call reaps the two completions (slots 15 and 31): all 32 buffers come back.
    assert_eq!(eth.tx_batch(&mut batch).unwrap(), 0);
    assert_eq!(pool.free_buffers(), free + 32);
    // 15 packets: no completion asked for yet, nothing comes back; the 16th brings all.
    pool.alloc_batch(&mut batch, 15);
    batch.iter_mut().for_each(|p| p.set_len(60));
    eth.tx_batch(&mut batch).unwrap();
    eth.tx_batch(&mut batch).unwrap();
    assert_eq!(pool.free_buffers(), free + 32 - 15);
    assert_eq!(eth.outstanding().0, 15);
    pool.alloc_batch(&mut batch, 1);
    batch[0].set_len(60);
    eth.tx_batch(&mut batch).unwrap();
    eth.tx_batch(&mut batch).unwrap();
    assert_eq!(pool.free_buffers(), free + 32);
    // Held doorbells: the device sends nothing until they are released.
    hca.backend().hold();
    pool.alloc_batch(&mut batch, 8);
    batch.iter_mut().for_each(|p| p.set_len(60));
    eth.tx_batch(&mut batch).unwrap();
    assert_eq!(dev.tx_frames(), 48);
    // SAFETY: the SQ whose doorbell is held lives (destroyed below).
    unsafe { hca.backend().stop() };
    assert_eq!(dev.tx_frames(), 56);
    drop(batch);
    eth.destroy().unwrap();
    drop(pool);
    hca.teardown().unwrap();
}

#[test]
fn unsendable_packets_are_refused_and_kept() {
    let (hca, dev) = common::up(Mode::Inline);
    let (pool, other_pool) = (
        Pool::new(&hca, 4096, 2048).unwrap(),
        Pool::new(&hca, 64, 2048).unwrap(),
    );
    let mut eth = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    let mut batch = Vec::new();
    pool.alloc_batch(&mut batch, 3);
    batch[0].set_len(60);
    // batch[1] is empty: a zero byte count would mean 2 GiB to the device.
    let err = eth.tx_batch(&mut batch).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    assert!(err.to_string().contains("cannot be sent"), "{err}");
    assert_eq!(
        batch.len(),
        2,
        "the first packet went, the empty one stayed"
    );
    assert_eq!(dev.tx_frames(), 1);
    batch[0].set_len(10_000);
    assert!(eth.tx_batch(&mut batch).is_err(), "too long");
    assert_eq!(dev.tx_frames(), 1);
    // A packet of another pool (same HCA) is refused before anything reaches the device,
    // and handed back in the batch.
    let doorbell = dev.last_send_doorbell(hca.info().uar);
    let mut foreign = vec![other_pool.alloc().unwrap()];
    foreign[0].write(&frame(MAC_A, 0, 60)).unwrap();
    match eth.tx_batch(&mut foreign) {
        Err(Error::ForeignResource {
            what: "packet",
            owner: "pool",
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(foreign.len(), 1, "handed back");
    assert_eq!(eth.outstanding().0, 1, "nothing posted");
    assert_eq!(dev.tx_frames(), 1);
    assert_eq!(
        dev.last_send_doorbell(hca.info().uar),
        doorbell,
        "no doorbell"
    );
    assert_eq!(other_pool.free_buffers(), 63);
    drop(foreign);
    assert_eq!(
        other_pool.free_buffers(),
        64,
        "back to its own pool on drop"
    );
    drop(batch);
    eth.destroy().unwrap();
    assert_eq!(pool.free_buffers(), 4096);
}

/// Past the 16-bit WQE and CQE counters' wrap (65536), with small rings that wrap often and
/// batches that straddle the ring's end: every frame arrives, in order, and every buffer is
/// accounted for.
#[test]
fn counters_wrap_past_16_bits() {
    let (hca, dev) = common::up(Mode::Inline);
    dev.loopback(true);
    let config = EthConfig {
        log_sq_size: 4,
        log_rq_size: 4,
        signal_every: 4,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let pool = Pool::new(&hca, 64, 2048).unwrap();
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    let total = 70_000u32;
    let (mut next, mut got) = (0u32, 0u32);
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    while got < total {
        // 7 at a time: batches start anywhere in the rings.
        while next < total && batch.len() < 7 {
            let Some(mut p) = pool.alloc() else { break };
            p.write(&frame(MAC_A, next, 60)).unwrap();
            batch.push(p);
            next += 1;
        }
        eth.tx_batch(&mut batch).unwrap();
        // The model delivers at once (inline): all 7 are in; more than that is never asked
        // for, so the RQ (16) never runs dry and drops a frame.
        eth.rx_batch(&mut rx, 16).unwrap();
        for p in rx.drain(..) {
            let mut seq = [0u8; 4];
            p.data().read_bytes(14, &mut seq);
            assert_eq!(u32::from_be_bytes(seq), got, "frame {got}");
            got += 1;
        }
    }
    let (tx_out, rx_posted) = eth.outstanding();
    assert_eq!(pool.free_buffers() + tx_out + rx_posted, 64);
    drop((batch, rx, eth));
    drop(pool);
    hca.teardown().unwrap();
}

/// Batches longer than 256 (the hot loops go in runs of at most 256 slots): one tx_batch
/// and one rx_batch move 600 packets, from the middle of 1024-slot rings.
#[test]
fn batches_longer_than_a_run() {
    let (hca, dev) = common::up(Mode::Inline);
    dev.loopback(true);
    let config = EthConfig {
        log_sq_size: 10,
        log_rq_size: 10,
        signal_every: 8,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let pool = Pool::new(&hca, 4096, 2048).unwrap();
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    let (mut seq, mut expected) = (0u32, 0u32);
    for n in [250, 600] {
        for _ in 0..n {
            let mut p = pool.alloc().unwrap();
            p.write(&frame(MAC_A, seq, 60)).unwrap();
            batch.push(p);
            seq += 1;
        }
        assert_eq!(eth.tx_batch(&mut batch).unwrap(), n);
        assert_eq!(eth.rx_batch(&mut rx, n).unwrap(), n);
        assert_eq!(rx.len(), n);
        for p in rx.drain(..) {
            let mut got = [0u8; 4];
            p.data().read_bytes(14, &mut got);
            assert_eq!(u32::from_be_bytes(got), expected);
            expected += 1;
        }
    }
    drop((batch, rx, eth));
    drop(pool);
    hca.teardown().unwrap();
}

/// The HCA is `Sync`: threads make their own resources from one `&Hca` at once. One moves
/// frames through its own pool and queues (the NIC has one receive root table, so one set of
/// steered queues per HCA); the other meanwhile creates and drops CQs, QPs, regions and pools,
/// and sends RC messages, its commands interleaving with the first's data path.
#[test]
fn threads_make_their_own_resources_from_one_hca() {
    fn sync<T: Sync>(_: &T) {}
    let (hca, dev) = common::up(Mode::Inline);
    sync(&hca);
    dev.loopback(true);
    let base = (dev.objects(), dev.dma().regions());
    std::thread::scope(|s| {
        let hca = &hca;
        s.spawn(move || {
            let pool = Pool::new(hca, 256, 2048).unwrap();
            let config = EthConfig {
                log_sq_size: 6,
                log_rq_size: 6,
                signal_every: 8,
                macs: vec![MAC_A],
                ..EthConfig::default()
            };
            let mut eth = EthQueues::create(&pool, &config).unwrap();
            let (mut batch, mut rx) = (Vec::new(), Vec::new());
            let mut got = 0u32;
            for seq in 0..2000u32 {
                let mut p = pool.alloc().unwrap();
                p.write(&frame(MAC_A, seq, 60)).unwrap();
                batch.push(p);
                eth.tx_batch(&mut batch).unwrap();
                let deadline = Instant::now() + Duration::from_secs(2);
                while rx.is_empty() && Instant::now() < deadline {
                    eth.rx_batch(&mut rx, 8).unwrap();
                }
                for p in rx.drain(..) {
                    assert_eq!(p.data().read_be32(14), got);
                    got += 1;
                }
            }
            assert_eq!(got, 2000);
        });
        s.spawn(move || {
            use mlx5_driver::cq::Cq;
            use mlx5_driver::mr::Region;
            use mlx5_driver::qp::{Qp, SendOp, SendRequest};
            for _ in 0..20 {
                let cq = Cq::create(hca, 6).unwrap();
                let qp = Qp::create(hca, &cq, &cq, &common::qp_config(4)).unwrap();
                let n = qp.qpn();
                let mut qp = common::to_rts(qp, n);
                let _pool = Pool::new(hca, 16, 2048).unwrap();
                qp.post_recv(1, Region::register(hca, 64, common::ALL).unwrap())
                    .map_err(|(e, _)| e)
                    .unwrap();
                let req = SendRequest {
                    id: 2,
                    op: SendOp::Send,
                    region: Some(Region::register(hca, 64, common::ALL).unwrap()),
                    len: Some(8),
                    signaled: true,
                    inline: None,
                };
                qp.post_send(req).map_err(|(e, _)| e).unwrap();
                let mut cq = cq;
                let mut out = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(2);
                while out.len() < 2 && Instant::now() < deadline {
                    cq.poll(2, &mut out);
                }
                assert_eq!(out.len(), 2, "send and receive completions");
                assert!(out.iter().all(|c| c.status.is_ok()));
            }
        });
    });
    assert_eq!(
        (dev.objects(), dev.dma().regions()),
        base,
        "each thread's resources are gone"
    );
    hca.teardown().unwrap();
}

#[test]
fn free_batch_gives_every_buffer_back_once_and_foreign_ones_to_their_pool() {
    let (be, _dev) = SimBackend::new(Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    let (a, b) = (
        Pool::new(&hca, 64, 256).unwrap(),
        Pool::new(&hca, 8, 256).unwrap(),
    );
    let mut batch = Vec::new();
    // More than the pool holds: all of it, no more.
    assert_eq!(a.alloc_batch(&mut batch, 100), 64);
    assert_eq!((batch.len(), a.free_buffers()), (64, 0));
    assert!(batch.iter().all(|p| p.is_empty()), "new packets are empty");
    a.free_batch(&mut batch);
    assert!(batch.is_empty());
    assert_eq!(a.free_buffers(), 64);
    // Each buffer went back once: taking them all again gives 64 distinct buffers (a
    // buffer handed out twice would show the mark written through its other handle).
    a.alloc_batch(&mut batch, 64);
    for (k, p) in batch.iter_mut().enumerate() {
        p.write(&[k as u8]).unwrap();
    }
    for (k, p) in batch.iter().enumerate() {
        assert_eq!(p.data().read_u8(0), k as u8, "packet {k} shares its buffer");
    }
    a.free_batch(&mut batch);
    // A batch with another pool's packets in it: each goes back to its own pool.
    a.alloc_batch(&mut batch, 10);
    b.alloc_batch(&mut batch, 3);
    a.alloc_batch(&mut batch, 2);
    assert_eq!((a.free_buffers(), b.free_buffers()), (52, 5));
    a.free_batch(&mut batch);
    assert!(batch.is_empty());
    assert_eq!((a.free_buffers(), b.free_buffers()), (64, 8));
}
