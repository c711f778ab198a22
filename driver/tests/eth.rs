//! Raw Ethernet on the device model: frames sent in batches loop back (or cross a wire to a
//! second device) and arrive whole and in order, steered by destination MAC; one doorbell per
//! batch, sent buffers back every `signal_every` packets; unsendable packets are refused and
//! kept; teardown releases every object. Inline and threaded.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend, Deferred};
use mlx5_driver::eth::{EthConfig, EthQueues, Packet};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::rt::Bytes;
use mlx5_sim::{Config, Device, Mode, Wire};
use pcap_file::pcap::PcapReader;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb];

fn up(mode: Mode) -> (Hca<SimBackend>, Arc<Device>) {
    let (be, dev) = SimBackend::new(Config {
        mode,
        ..Config::default()
    });
    (Hca::bring_up(be, &HcaConfig::default()).unwrap(), dev)
}

/// A frame to `dst` of `len` bytes carrying `seq`.
fn frame(dst: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&MAC_A);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes()); // local experimental ethertype
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f.iter_mut().enumerate().skip(18) {
        *b = (seq as usize + i) as u8;
    }
    f
}

/// Receives until `want` packets arrived or two seconds passed.
fn receive<B: Backend>(
    eth: &mut EthQueues,
    be: &B,
    dev: &Device,
    want: usize,
    out: &mut Vec<Packet>,
) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while out.len() < want && Instant::now() < deadline {
        if eth.rx_batch(be, out, 32).unwrap() == 0 {
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
    let (mut hca, dev) = up(mode);
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
        buffers: 512,
        signal_every: 16,
        inline_l2,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(&mut hca, &config).unwrap();
    assert_eq!(eth.outstanding(), (0, 128), "the RQ starts full");
    let total = 1000u32;
    let (mut next, mut got) = (0u32, 0u32);
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    while got < total {
        while next < total && batch.len() < 32 {
            let Some(mut p) = eth.alloc() else { break };
            let len = 60 + (next as usize * 37) % 1400;
            eth.write(&mut p, &frame(MAC_A, next, len)).unwrap();
            batch.push(p);
            next += 1;
        }
        eth.tx_batch(hca.backend(), &mut batch).unwrap();
        receive(&mut eth, hca.backend(), &dev, 1, &mut rx);
        for p in rx.drain(..) {
            let len = 60 + (got as usize * 37) % 1400;
            let mut bytes = vec![0u8; p.len()];
            eth.data(&p).read_bytes(0, &mut bytes);
            assert_eq!(bytes, frame(MAC_A, got, len), "frame {got}");
            got += 1;
            eth.free(p);
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
        eth.tx_batch(hca.backend(), &mut batch).unwrap();
        std::thread::yield_now();
    }
    let (tx_out, rx_posted) = eth.outstanding();
    assert!(tx_out < 16, "{tx_out} sends unreported");
    assert_eq!(eth.free_buffers() + tx_out + rx_posted, 512);
    eth.destroy(&mut hca).unwrap();
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
        let (mut ha, da) = up(mode);
        let (mut hb, db) = up(mode);
        let _wire = Wire::connect(&da, &db);
        // B's port sees every frame that arrives, steered or not.
        let capture = SharedBuf::default();
        db.capture(capture.clone()).unwrap();
        let mut a = EthQueues::create(&mut ha, &EthConfig::default()).unwrap();
        let mut b = EthQueues::create(
            &mut hb,
            &EthConfig {
                macs: vec![MAC_B],
                ..EthConfig::default()
            },
        )
        .unwrap();
        let mut batch = Vec::new();
        for seq in 0..15 {
            let mut p = a.alloc().unwrap();
            let dst = if seq % 3 == 2 { MAC_A } else { MAC_B };
            a.write(&mut p, &frame(dst, seq, 64)).unwrap();
            batch.push(p);
        }
        assert_eq!(a.tx_batch(ha.backend(), &mut batch).unwrap(), 15);
        let mut rx = Vec::new();
        receive(&mut b, hb.backend(), &db, 10, &mut rx);
        let seqs: Vec<u32> = rx.iter().map(|p| b.data(p).read_be32(14)).collect();
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
        b.free_batch(&mut rx);
        a.destroy(&mut ha).unwrap();
        b.destroy(&mut hb).unwrap();
        ha.teardown().unwrap();
        hb.teardown().unwrap();
    }
}

#[test]
fn one_doorbell_per_batch_and_buffers_back_every_n() {
    let (be, dev) = SimBackend::new(Config::default());
    let mut hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).unwrap();
    let config = EthConfig {
        signal_every: 16,
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(&mut hca, &config).unwrap();
    let before = hca.backend().doorbells();
    let mut batch = Vec::new();
    eth.alloc_batch(&mut batch, 32);
    for p in batch.iter_mut() {
        p.set_len(60);
    }
    let free = eth.free_buffers();
    assert_eq!(eth.tx_batch(hca.backend(), &mut batch).unwrap(), 32);
    assert_eq!(hca.backend().doorbells(), before + 1, "one doorbell for 32");
    assert_eq!(dev.tx_frames(), 32);
    // The next call reaps the two completions (slots 15 and 31): all 32 buffers come back.
    assert_eq!(eth.tx_batch(hca.backend(), &mut batch).unwrap(), 0);
    assert_eq!(eth.free_buffers(), free + 32);
    // 15 packets: no completion asked for yet, nothing comes back; the 16th brings all.
    eth.alloc_batch(&mut batch, 15);
    batch.iter_mut().for_each(|p| p.set_len(60));
    eth.tx_batch(hca.backend(), &mut batch).unwrap();
    eth.tx_batch(hca.backend(), &mut batch).unwrap();
    assert_eq!(eth.free_buffers(), free + 32 - 15);
    assert_eq!(eth.outstanding().0, 15);
    eth.alloc_batch(&mut batch, 1);
    batch[0].set_len(60);
    eth.tx_batch(hca.backend(), &mut batch).unwrap();
    eth.tx_batch(hca.backend(), &mut batch).unwrap();
    assert_eq!(eth.free_buffers(), free + 32);
    // Held doorbells: the device sends nothing until they are released.
    hca.backend().hold();
    eth.alloc_batch(&mut batch, 8);
    batch.iter_mut().for_each(|p| p.set_len(60));
    eth.tx_batch(hca.backend(), &mut batch).unwrap();
    assert_eq!(dev.tx_frames(), 48);
    hca.backend().stop();
    assert_eq!(dev.tx_frames(), 56);
    eth.destroy(&mut hca).unwrap();
    hca.teardown().unwrap();
}

#[test]
fn unsendable_packets_are_refused_and_kept() {
    let (mut hca, dev) = up(Mode::Inline);
    let mut eth = EthQueues::create(&mut hca, &EthConfig::default()).unwrap();
    let mut other = EthQueues::create(&mut hca, &EthConfig::default()).unwrap();
    let mut batch = Vec::new();
    eth.alloc_batch(&mut batch, 3);
    batch[0].set_len(60);
    // batch[1] is empty: a zero byte count would mean 2 GiB to the device.
    let err = eth.tx_batch(hca.backend(), &mut batch).unwrap_err();
    assert!(err.to_string().contains("cannot be sent"), "{err}");
    assert_eq!(
        batch.len(),
        2,
        "the first packet went, the empty one stayed"
    );
    assert_eq!(dev.tx_frames(), 1);
    batch[0].set_len(10_000);
    assert!(eth.tx_batch(hca.backend(), &mut batch).is_err(), "too long");
    let mut foreign = vec![other.alloc().unwrap()];
    foreign[0].set_len(60);
    assert!(eth.tx_batch(hca.backend(), &mut foreign).is_err());
    assert_eq!(foreign.len(), 1);
    other.free_batch(&mut foreign);
    eth.free_batch(&mut batch);
    other.destroy(&mut hca).unwrap();
    eth.destroy(&mut hca).unwrap();
    hca.teardown().unwrap();
}

#[test]
fn bad_configurations_are_refused_without_leaks() {
    let (mut hca, _dev) = up(Mode::Inline);
    for config in [
        EthConfig {
            signal_every: 3,
            ..EthConfig::default()
        },
        EthConfig {
            log_sq_size: 4,
            signal_every: 32,
            ..EthConfig::default()
        },
        EthConfig {
            buf_size: 0,
            ..EthConfig::default()
        },
    ] {
        assert!(EthQueues::create(&mut hca, &config).is_err());
    }
    hca.teardown().unwrap();
}

#[test]
fn after_destroy_frames_are_dropped() {
    let (mut hca, dev) = up(Mode::Inline);
    let eth = EthQueues::create(
        &mut hca,
        &EthConfig {
            macs: vec![MAC_A],
            ..EthConfig::default()
        },
    )
    .unwrap();
    assert!(dev.receive_frame(&frame(MAC_A, 0, 64)));
    eth.destroy(&mut hca).unwrap();
    assert!(!dev.receive_frame(&frame(MAC_A, 1, 64)));
    hca.teardown().unwrap();
    assert_eq!(dev.pages_held(), 0);
}

/// Past the 16-bit WQE and CQE counters' wrap (65536), with small rings that wrap often and
/// batches that straddle the ring's end: every frame arrives, in order, and every buffer is
/// accounted for.
#[test]
fn counters_wrap_past_16_bits() {
    let (mut hca, dev) = up(Mode::Inline);
    dev.loopback(true);
    let config = EthConfig {
        log_sq_size: 4,
        log_rq_size: 4,
        buffers: 64,
        signal_every: 4,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(&mut hca, &config).unwrap();
    let total = 70_000u32;
    let (mut next, mut got) = (0u32, 0u32);
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    while got < total {
        // 7 at a time: batches start anywhere in the rings.
        while next < total && batch.len() < 7 {
            let Some(mut p) = eth.alloc() else { break };
            eth.write(&mut p, &frame(MAC_A, next, 60)).unwrap();
            batch.push(p);
            next += 1;
        }
        eth.tx_batch(hca.backend(), &mut batch).unwrap();
        // The model delivers at once (inline): all 7 are in; more than that is never asked
        // for, so the RQ (16) never runs dry and drops a frame.
        eth.rx_batch(hca.backend(), &mut rx, 16).unwrap();
        for p in rx.drain(..) {
            let mut seq = [0u8; 4];
            eth.data(&p).read_bytes(14, &mut seq);
            assert_eq!(u32::from_be_bytes(seq), got, "frame {got}");
            got += 1;
            eth.free(p);
        }
    }
    let (tx_out, rx_posted) = eth.outstanding();
    assert_eq!(eth.free_buffers() + tx_out + rx_posted, 64);
    eth.destroy(&mut hca).unwrap();
    hca.teardown().unwrap();
}

/// Batches longer than 256 (the hot loops go in runs of at most 256 slots): one tx_batch
/// and one rx_batch move 600 packets, from the middle of 1024-slot rings.
#[test]
fn batches_longer_than_a_run() {
    let (mut hca, dev) = up(Mode::Inline);
    dev.loopback(true);
    let config = EthConfig {
        log_sq_size: 10,
        log_rq_size: 10,
        buffers: 4096,
        signal_every: 8,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(&mut hca, &config).unwrap();
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    let (mut seq, mut expected) = (0u32, 0u32);
    for n in [250, 600] {
        for _ in 0..n {
            let mut p = eth.alloc().unwrap();
            eth.write(&mut p, &frame(MAC_A, seq, 60)).unwrap();
            batch.push(p);
            seq += 1;
        }
        assert_eq!(eth.tx_batch(hca.backend(), &mut batch).unwrap(), n);
        assert_eq!(eth.rx_batch(hca.backend(), &mut rx, n).unwrap(), n);
        assert_eq!(rx.len(), n);
        for p in rx.drain(..) {
            let mut got = [0u8; 4];
            eth.data(&p).read_bytes(14, &mut got);
            assert_eq!(u32::from_be_bytes(got), expected);
            expected += 1;
            eth.free(p);
        }
    }
    eth.destroy(&mut hca).unwrap();
    hca.teardown().unwrap();
}
