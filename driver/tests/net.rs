//! `driver::net` without a kernel: two smoltcp hosts on two model devices joined by a wire, each
//! on its own thread, ping each other (ARP first) and the counters of both queue pairs and
//! both devices agree. The kernel as the peer is tests/tap.rs.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::eth::{EthConfig, EthQueues};
use mlx5_driver::net::{Host, NetError, Port};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::{Config, Device, Mode, Wire};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]];
const IP: [[u8; 4]; 2] = [[192, 168, 9, 1], [192, 168, 9, 2]];

fn up(mode: Mode) -> (Hca<SimBackend>, Arc<Device>) {
    let (be, dev) = SimBackend::new(Config {
        mode,
        ..Config::default()
    });
    (Hca::bring_up(be, &HcaConfig::default()).unwrap(), dev)
}

fn config(i: usize) -> EthConfig {
    EthConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        buffers: 256,
        signal_every: 8,
        macs: vec![MAC[i], [0xff; 6]],
        ..EthConfig::default()
    }
}

fn two_hosts(mode: Mode) {
    let (mut ha, da) = up(mode);
    let (mut hb, db) = up(mode);
    let _wire = Wire::connect(&da, &db);
    let ea = EthQueues::create(&mut ha, &config(0)).unwrap();
    let eb = EthQueues::create(&mut hb, &config(1)).unwrap();
    let done = AtomicBool::new(false);
    let (bea, beb) = (ha.backend(), hb.backend());
    let (ca, cb, ea, eb) = std::thread::scope(|s| {
        let server = s.spawn(|| {
            let mut b = Host::new(Port::new(eb, beb), MAC[1], IP[1], 24);
            b.serve(Duration::from_secs(20), &|| done.load(Ordering::Relaxed))
                .unwrap();
            let c = b.port().queues().counters();
            (c, b.into_port().into_queues())
        });
        let mut a = Host::new(Port::new(ea, bea), MAC[0], IP[0], 24);
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
        let (cb, eb) = server.join().unwrap();
        (ca, cb, a.into_port().into_queues(), eb)
    });
    ea.destroy(&mut ha).unwrap();
    eb.destroy(&mut hb).unwrap();
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
