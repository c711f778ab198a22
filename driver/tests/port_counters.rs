//! PPCNT through the driver: counters move with the frames the model's port carries, carry
//! their `ethtool -S` names, clear per group, and give bit error rates.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::port::CounterGroup;
use mlx5_driver::{Hca, HcaConfig};

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa];

/// Sends `n` frames of `len` bytes to itself through the model's loopback and receives them.
fn loop_frames(hca: &Hca<SimBackend>, device: &mlx5_sim::Device, n: usize, len: usize) {
    // Room for the receive ring (64) and the frames sent.
    let pool = Pool::new(hca, 256, 2048).unwrap();
    let config = EthConfig {
        log_sq_size: 6,
        log_rq_size: 6,
        signal_every: 1,
        inline_l2: false,
        macs: vec![MAC],
    };
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    device.loopback(true);
    let mut pkts = Vec::new();
    pool.alloc_batch(&mut pkts, n);
    for p in pkts.iter_mut() {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&MAC);
        f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
        p.write(&f).unwrap();
    }
    while !pkts.is_empty() {
        eth.tx_batch(&mut pkts).unwrap();
    }
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while got.len() < n {
        eth.rx_batch(&mut got, 32).unwrap();
        assert!(
            std::time::Instant::now() < deadline,
            "received {} of {n}",
            got.len()
        );
    }
}

#[test]
fn counters_move_with_traffic_by_their_ethtool_names() {
    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let port = hca.port(1);
    let before = port.counters(CounterGroup::Ieee8023, false).unwrap();
    assert_eq!(before.get("tx_packets_phy"), Some(0));
    loop_frames(&hca, &device, 10, 100);
    let c = port.counters(CounterGroup::Ieee8023, false).unwrap();
    assert_eq!(c.get("tx_packets_phy"), Some(10));
    assert_eq!(
        c.get("a_frames_received_ok"),
        Some(10),
        "by the spec's name too"
    );
    // Octets count the wire: 100 bytes + 4 of FCS.
    assert_eq!(c.get("rx_bytes_phy"), Some(1040));
    assert_eq!(c.get("rx_crc_errors_phy"), Some(0));
    assert!(c
        .counters
        .iter()
        .all(|x| !x.name.ends_with("_high") && !x.name.ends_with("_low")));
    let rmon = port.counters(CounterGroup::Rfc2819, false).unwrap();
    assert_eq!(rmon.get("rx_65_to_127_bytes_phy"), Some(10));
    let prio0 = port.counters(CounterGroup::PerPriority(0), false).unwrap();
    assert_eq!(prio0.get("rx_prio0_packets"), Some(10));
    assert_eq!(
        port.counters(CounterGroup::PerPriority(3), false)
            .unwrap()
            .get("rx_prio3_packets"),
        Some(0)
    );

    // Clearing one group leaves the others.
    port.counters(CounterGroup::Ieee8023, true).unwrap();
    assert_eq!(
        port.counters(CounterGroup::Ieee8023, false)
            .unwrap()
            .get("tx_packets_phy"),
        Some(0)
    );
    assert_eq!(
        port.counters(CounterGroup::Rfc2819, false)
            .unwrap()
            .get("rx_65_to_127_bytes_phy"),
        Some(10)
    );
}

#[test]
fn link_down_events_and_bit_error_rates() {
    let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let port = hca.port(1);
    port.set_admin(false).unwrap();
    port.set_admin(true).unwrap();
    let phy = port.counters(CounterGroup::PhysicalLayer, false).unwrap();
    assert_eq!(phy.get("link_down_events_phy"), Some(1));
    std::thread::sleep(std::time::Duration::from_millis(5));
    let ber = port.bit_error_rate().unwrap();
    assert!(ber.received_bits > 0);
    assert_eq!((ber.symbol_errors, ber.effective), (0, Some(0.0)));
    let bound = ber.bound.unwrap();
    assert!(bound > 0.0 && bound < 1e-6, "{bound}");
}

#[test]
fn groups_parse_by_name() {
    for g in CounterGroup::all() {
        assert_eq!(CounterGroup::parse(&g.name()), Some(g));
    }
    assert_eq!(CounterGroup::parse("prio8"), None);
    assert_eq!(CounterGroup::parse("nope"), None);
}
