//! `ping --device` on anything but the in-process model: there is no namespace or TAP device
//! to make, the port is on a wire (a card's cable, or the model's port behind a vfio-user
//! server) and a peer at `--peer` answers. The driver's host (smoltcp on the Ethernet queues)
//! pings it and answers ARP and echo requests from the wire meanwhile.

use crate::session::{eth_config, mac, ping_peer, Fallible, Options, HOST_MAC};
use mlx5_driver::eth::{EthCounters, EthQueues, Pool};
use mlx5_driver::net::{EchoReply, Host, Port};
use mlx5_driver::{DeviceSpec, Hca, HcaConfig};
use std::net::Ipv4Addr;

/// Where the host is and whom it pings.
pub struct Wire {
    /// The device.
    pub device: DeviceSpec,
    /// The host's address and prefix length.
    pub addr: ([u8; 4], u8),
    /// The peer to ping.
    pub peer: [u8; 4],
}

/// What happened.
pub struct WireReport {
    /// The peer's replies.
    pub pings: Vec<EchoReply>,
    /// The driver's queue counters.
    pub driver: EthCounters,
}

/// Brings the device up, pings the peer, tears down.
pub fn run(wire: &Wire, opts: &Options, say: &mut dyn FnMut(String)) -> Fallible<WireReport> {
    let hca = Hca::open(&wire.device, &HcaConfig::default())?;
    let (ip, prefix) = wire.addr;
    say(format!(
        "{}: driver {}/{prefix} ({}) -> peer {}",
        wire.device,
        Ipv4Addr::from(ip),
        mac(HOST_MAC),
        Ipv4Addr::from(wire.peer)
    ));
    let config = eth_config();
    let result = (|| -> Fallible<WireReport> {
        let pool = Pool::new(&hca, 1024, 2048)?;
        let eth = EthQueues::create(&pool, &config)?;
        let mut host = Host::new(Port::new(eth), HOST_MAC, ip, prefix);
        let pings = ping_peer(&mut host, wire.peer, "driver → peer", opts, say);
        let eth = host.into_port().into_queues();
        let driver = eth.counters();
        let destroyed = eth.destroy();
        let pings = pings?;
        destroyed?;
        Ok(WireReport { pings, driver })
    })();
    let down = hca.teardown();
    let report = result?;
    down?;
    Ok(report)
}
