//! The model's port on a TAP device, without a driver: frames the kernel sends reach the port
//! (and, with no flow table, are dropped and counted there); closing the port deletes the TAP
//! interface. The full exchange with a driver is driver/tests/tap.rs.
#![cfg(target_os = "linux")]

use mlx5_sim::tap::{ifconfig, NetNs, Tap};
use mlx5_sim::{Config, Device};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

#[test]
fn kernel_frames_reach_the_port_and_closing_deletes_the_interface() {
    if !mlx5_sim::tap::available() {
        eprintln!("skipped: /dev/net/tun does not exist, so no TAP device can be made here");
        return;
    }
    let ns = NetNs::new().expect("a network namespace (the suite runs as root)");
    let tap = ns
        .run(|| -> std::io::Result<Tap> {
            let tap = Tap::create("mlx5t%d")?;
            ifconfig::disable_ipv6(tap.name())?;
            ifconfig::set_ipv4(tap.name(), [10, 78, 0, 1].into(), 24)?;
            ifconfig::set_up(tap.name())?;
            Ok(tap)
        })
        .unwrap()
        .unwrap();
    let name = tap.name().to_string();
    assert!(name.starts_with("mlx5t"), "{name}");
    let dev = Device::new(Config::default());
    let port = tap.attach(&dev).unwrap();
    assert_eq!(port.name(), name);
    // A datagram to a neighbour the kernel does not know yet: it asks by ARP broadcast.
    ns.run(|| {
        let s = UdpSocket::bind("10.78.0.1:0").unwrap();
        s.send_to(b"hello", "10.78.0.9:9").unwrap();
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while dev.rx_dropped() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        dev.rx_dropped() >= 1,
        "the kernel's ARP request reached the port"
    );
    assert_eq!(dev.rx_frames(), 0, "no RQ, nothing delivered");
    // Every frame the kernel sent through the interface was read by the port (ARP retries
    // may add more meanwhile, so wait for the two counts to meet).
    let deadline = Instant::now() + Duration::from_secs(5);
    let kernel_sent = || {
        ns.run(|| ifconfig::counters(&name))
            .unwrap()
            .unwrap()
            .tx_packets
    };
    while port.counters().from_kernel != kernel_sent() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(port.counters().from_kernel, kernel_sent());
    assert!(port.failure().is_none());
    let counts = port.close();
    assert!(counts.from_kernel >= 1);
    assert_eq!((counts.to_kernel, counts.write_errors), (0, 0));
    let gone = ns.run(|| ifconfig::counters(&name)).unwrap();
    assert_eq!(
        gone.unwrap_err().kind(),
        std::io::ErrorKind::NotFound,
        "the TAP interface is deleted with its port"
    );
}

#[test]
fn a_bad_interface_name_is_an_error_not_a_panic() {
    if !mlx5_sim::tap::available() {
        eprintln!("skipped: /dev/net/tun does not exist");
        return;
    }
    let e = Tap::create("a-name-far-too-long-for-linux").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("1 to 15 bytes"), "{e}");
}

#[test]
fn a_released_interface_stays_and_cables_the_next_device() {
    if !mlx5_sim::tap::available() {
        eprintln!("skipped: /dev/net/tun does not exist");
        return;
    }
    let ns = NetNs::new().expect("a network namespace (the suite runs as root)");
    let tap = ns
        .run(|| -> std::io::Result<Tap> {
            let tap = Tap::create("mlx5r%d")?;
            ifconfig::disable_ipv6(tap.name())?;
            ifconfig::set_ipv4(tap.name(), [10, 79, 0, 1].into(), 24)?;
            ifconfig::set_up(tap.name())?;
            Ok(tap)
        })
        .unwrap()
        .unwrap();
    let name = tap.name().to_string();
    let first = Device::new(Config::default());
    let tap = tap.attach(&first).unwrap().release();
    assert_eq!(tap.name(), name);
    assert!(
        ns.run(|| ifconfig::counters(&name)).unwrap().is_ok(),
        "the interface outlives its first port"
    );
    let second = Device::new(Config::default());
    let port = tap.attach(&second).unwrap();
    ns.run(|| {
        let s = UdpSocket::bind("10.79.0.1:0").unwrap();
        s.send_to(b"hello", "10.79.0.9:9").unwrap();
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while second.rx_dropped() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        second.rx_dropped() >= 1,
        "the kernel's frames reach the second device"
    );
    assert_eq!(first.rx_dropped(), 0, "and not the first, unplugged");
    port.close();
}
