//! `driver::net` without a kernel: two smoltcp hosts on two model devices joined by a wire, each
//! on its own thread, ping each other (ARP first) and the counters of both queue pairs and
//! both devices agree. The kernel as the peer is tests/tap.rs.

mod common;

use mlx5_driver::eth::{EthConfig, EthCounters, EthQueues, Pool};
use mlx5_driver::net::{Host, NetError, Port};
use mlx5_sim::{Mode, Wire};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]];
const IP: [[u8; 4]; 2] = [[192, 168, 9, 1], [192, 168, 9, 2]];

fn config(i: usize) -> EthConfig {
    EthConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        signal_every: 8,
        macs: vec![MAC[i], [0xff; 6]],
        ..EthConfig::default()
    }
}

/// Each host makes its pool and queues on its own thread, from a shared `&Hca` (the HCA is
/// `Sync`; pools, queues and packets stay on the thread that made them).
fn two_hosts(mode: Mode) {
    let (ha, da) = common::up(mode);
    let (hb, db) = common::up(mode);
    let _wire = Wire::connect(&da, &db);
    let done = AtomicBool::new(false);
    let (ca, cb) = std::thread::scope(|s| {
        let server = s.spawn(|| -> EthCounters {
            let pool = Pool::new(&hb, 256, 2048).unwrap();
            let eb = EthQueues::create(&pool, &config(1)).unwrap();
            let mut b = Host::new(Port::new(eb), MAC[1], IP[1], 24);
            b.serve(Duration::from_secs(20), &|| done.load(Ordering::Relaxed))
                .unwrap();
            let c = b.port().queues().counters();
            b.into_port().into_queues().destroy().unwrap();
            c
        });
        let pool = Pool::new(&ha, 256, 2048).unwrap();
        let ea = EthQueues::create(&pool, &config(0)).unwrap();
        let mut a = Host::new(Port::new(ea), MAC[0], IP[0], 24);
        for seq in 1..=20u16 {
            let payload = vec![seq as u8; 100 + usize::from(seq)];
            let reply = a
                .ping(IP[1], seq, &payload, Duration::from_secs(5), &|| false)
                .unwrap();
            assert_eq!((reply.seq, reply.payload), (seq, payload));
        }
        // Nobody at .3: ARP goes unanswered, the ping times out cleanly.
        let lost = a.ping(
            [192, 168, 9, 3],
            1,
            b"x",
            Duration::from_millis(50),
            &|| false,
        );
        assert!(matches!(lost, Err(NetError::Timeout { .. })), "{lost:?}");
        done.store(true, Ordering::Relaxed);
        let ca = a.port().queues().counters();
        a.into_port().into_queues().destroy().unwrap();
        (ca, server.join().unwrap())
    });
    // 20 echo requests (plus ARP) each way, every frame counted once on every side.
    assert!(ca.tx_packets >= 21 && cb.tx_packets >= 21, "{ca:?} {cb:?}");
    assert_eq!(da.tx_frames(), ca.tx_packets);
    assert_eq!(db.tx_frames(), cb.tx_packets);
    assert_eq!(db.rx_frames() + db.rx_dropped(), ca.tx_packets);
    assert_eq!(da.rx_frames() + da.rx_dropped(), cb.tx_packets);
    assert_eq!(ca.rx_packets, da.rx_frames());
    assert_eq!(cb.rx_packets, db.rx_frames());
    assert_eq!(
        (ca.rx_errors, ca.tx_errors, cb.rx_errors, cb.tx_errors),
        (0, 0, 0, 0)
    );
    assert_eq!(da.objects().total(), db.objects().total());
    ha.teardown().unwrap();
    hb.teardown().unwrap();
}

#[test]
fn two_hosts_ping_across_a_wire_inline() {
    two_hosts(Mode::Inline);
}

#[test]
fn two_hosts_ping_across_a_wire_threaded() {
    two_hosts(Mode::Threaded);
}
