//! The RoCE v2 port the interop examples (rc_pingpong, rdma_bw) stand on: the device model
//! with its port on a TAP device in this network namespace, the HCA brought up, the RoCE
//! address table filled as soft-RoCE numbers its GIDs (index 0 the link-local GID of the MAC,
//! index 1 the IPv4-mapped GID of `--addr`, both RoCE v2), ARP answered for `--addr` on the
//! raw Ethernet queues, and the peer's MAC found from its GID. Also the small parsers the
//! examples' command lines share.

use crate::arp::Arp;
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{AnyBackend, Backend};
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::roce::{gid_ipv4, link_local_gid, RoceAddress};
use mlx5_driver::DeviceSpec;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::QpMtu;
use mlx5_sim::tap::{ifconfig, Tap};
use mlx5_sim::{Config, Device, Faults, Mode, RcTransport};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

/// The port's options, the same in every example.
#[derive(clap::Args, Debug, Clone)]
pub struct PortArgs {
    /// The device: sim (the model, its port on --tap) or vfio:ADDRESS (a function bound to
    /// vfio-pci, its port on a wire to the peer).
    #[arg(long, default_value = "sim")]
    pub device: DeviceSpec,
    /// The TAP device the model's port uses, opened (created if missing) in this network
    /// namespace and brought up; the harness bridges it to the peer (the model only).
    #[arg(long)]
    pub tap: Option<String>,
    /// The model's IPv4 address and prefix (its GID index 1, and what it answers ARP for).
    #[arg(long)]
    pub addr: String,
    /// The model's MAC.
    #[arg(long, default_value = "02:4d:4c:58:35:10")]
    pub mac: String,
    /// The peer's MAC, instead of asking ARP for the IPv4 address in its GID.
    #[arg(long = "peer-mac")]
    pub peer_mac: Option<String>,
    /// Run the model's command interface on its own firmware thread.
    #[arg(long)]
    pub threaded: bool,
    /// Record the port's frames (both ways) to this pcap file.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Seconds to wait for ARP answers and, during the run, for any completion.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
    /// Make the model's port lossy: it loses one frame in this many, each way, at random
    /// (a fault of the model, `FaultInjector::port_loss`; the transports' retransmissions
    /// must recover).
    #[arg(long, value_name = "N")]
    pub loss: Option<u32>,
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let bytes: Vec<u8> = parts
        .iter()
        .filter_map(|p| u8::from_str_radix(p, 16).ok())
        .collect();
    <[u8; 6]>::try_from(bytes.as_slice())
        .ok()
        .filter(|_| parts.len() == 6)
        .ok_or(format!("bad MAC {s:?} (want aa:bb:cc:dd:ee:ff)"))
}

/// Parses `A.B.C.D/P` (prefix 24 when missing).
pub fn parse_cidr(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (ip, prefix) = s.split_once('/').unwrap_or((s, "24"));
    let ip: Ipv4Addr = ip.parse().map_err(|_| format!("bad IPv4 address {ip:?}"))?;
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= 32)
        .ok_or(format!("bad prefix {prefix:?}"))?;
    Ok((ip, prefix))
}

/// The path MTU of a size in bytes.
pub fn mtu(bytes: u32) -> Result<QpMtu, String> {
    Ok(match bytes {
        256 => QpMtu::Mtu256,
        512 => QpMtu::Mtu512,
        1024 => QpMtu::Mtu1k,
        2048 => QpMtu::Mtu2k,
        4096 => QpMtu::Mtu4k,
        _ => return Err(format!("MTU {bytes} is not 256, 512, 1024, 2048 or 4096")),
    })
}

/// The MAC inside a link-local GID made from one (fe80::/64, EUI-64 with ff:fe).
pub fn eui64_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    let g = gid;
    (g[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0] && g[11] == 0xff && g[12] == 0xfe)
        .then(|| [g[8] ^ 0x02, g[9], g[10], g[13], g[14], g[15]])
}

/// A PSN as the rdma-core and perftest tools pick one: random, 24 bits.
pub fn random_psn() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) as u32 & 0xff_ffff
}

/// The GID of entry `index` of the HCA's RoCE address table.
pub fn sgid<B: Backend>(hca: &Hca<B>, index: u8) -> Result<[u8; 16], String> {
    Ok(hca
        .query_roce_address(u16::from(index))
        .map_err(|e| e.to_string())?
        .ok_or(format!("can't read sgid of index {index}"))?
        .gid())
}

/// The peer's MAC: given, from ARP for the IPv4 address in its GID, or from its link-local
/// GID.
pub fn peer_mac_of(
    gid: &[u8; 16],
    given: Option<[u8; 6]>,
    arp: &mut Arp<'_, impl Backend>,
    timeout: Duration,
) -> Result<[u8; 6], String> {
    if let Some(m) = given {
        return Ok(m);
    }
    if *gid == [0; 16] {
        return Err("the peer sent no GID: run it with a GID index (RoCE needs a GID)".into());
    }
    if let Some(v4) = gid_ipv4(gid) {
        return arp.resolve(v4, timeout);
    }
    eui64_mac(gid).ok_or(format!(
        "cannot tell the MAC of GID {}: give --peer-mac",
        Ipv6Addr::from(*gid)
    ))
}

/// Brings the device up (the model on the TAP device, RoCE v2 transport; or the device
/// `--device` names), runs `body` with the HCA, the model when it is one, and the port's ARP,
/// and takes everything down again; `name` prefixes what is printed.
pub fn with_port<T>(
    args: &PortArgs,
    name: &str,
    body: impl FnOnce(&Hca<AnyBackend>, Option<&Device>, &mut Arp<'_, AnyBackend>) -> Result<T, String>,
) -> Result<T, String> {
    let mac = parse_mac(&args.mac)?;
    if args.loss.is_some_and(|n| n < 2) {
        return Err("--loss N loses one frame in N: N must be at least 2".into());
    }
    let (ip, prefix) = parse_cidr(&args.addr)?;
    let threaded = match &args.device {
        DeviceSpec::Sim { threaded } => *threaded || args.threaded,
        spec => {
            if args.loss.is_some() || args.pcap.is_some() || args.tap.is_some() || args.threaded {
                return Err(format!(
                    "--tap, --loss, --pcap and --threaded are the model's, not for --device {spec}"
                ));
            }
            let hca = Hca::open(spec, &HcaConfig::default()).map_err(|e| e.to_string())?;
            let result = with_hca(&hca, mac, (ip, prefix), |hca, arp| body(hca, None, arp));
            let down = hca.teardown();
            let value = result?;
            down.map_err(|e| format!("teardown: {e}"))?;
            return Ok(value);
        }
    };
    let tap = args
        .tap
        .as_deref()
        .ok_or("--tap NAME: the TAP device the model's port uses")?;
    if !mlx5_sim::tap::available() {
        return Err("/dev/net/tun does not exist: this machine cannot make TAP devices".into());
    }
    let (backend, device) = SimBackend::new(Config {
        rc_transport: RcTransport::Roce,
        mode: if threaded {
            Mode::Threaded
        } else {
            Mode::Inline
        },
        faults: Faults {
            port_loss: args.loss.unwrap_or(0),
            ..Faults::default()
        },
        ..Config::default()
    });
    if let Some(path) = &args.pcap {
        device
            .capture_to_file(path)
            .map_err(|e| format!("pcap {}: {e}", path.display()))?;
    }
    let tap = Tap::create(tap).map_err(|e| e.to_string())?;
    ifconfig::set_up(tap.name()).map_err(|e| format!("bringing {} up: {e}", tap.name()))?;
    let port = tap.attach(&device).map_err(|e| e.to_string())?;
    let hca = Hca::bring_up(AnyBackend::Sim(backend), &HcaConfig::default())
        .map_err(|e| e.to_string())?;
    let result = with_hca(&hca, mac, (ip, prefix), |hca, arp| {
        body(hca, Some(&device), arp)
    });
    let down = hca.teardown();
    if let Some(path) = &args.pcap {
        match device.stop_capture() {
            Ok(n) => println!("{n} frames written to {}", path.display()),
            Err(e) => eprintln!("{name}: pcap: {e}"),
        }
    }
    port.close();
    let (lost_out, lost_in) = device.faults().frames_lost();
    let r = device.roce_stats();
    println!(
        "model port: {} RoCE packets sent, {} taken; lost {lost_out} leaving, {lost_in} arriving; \
         dropped: {} bad ICRC, {} malformed, {} bad opcode, {} unknown QPN",
        r.tx_packets, r.rx_packets, r.icrc_errors, r.malformed, r.bad_opcode, r.unknown_qpn
    );
    let value = result?;
    down.map_err(|e| format!("teardown: {e}"))?;
    Ok(value)
}

fn with_hca<T, B: Backend>(
    hca: &Hca<B>,
    mac: [u8; 6],
    (ip, prefix): (Ipv4Addr, u8),
    body: impl FnOnce(&Hca<B>, &mut Arp<'_, B>) -> Result<T, String>,
) -> Result<T, String> {
    let gids = [
        RoceAddress::v2(IpAddr::V6(link_local_gid(mac)), mac),
        RoceAddress::v2(IpAddr::V4(ip), mac),
    ];
    for (i, a) in gids.iter().enumerate() {
        hca.set_roce_address(i as u16, a)
            .map_err(|e| format!("GID {i}: {e}"))?;
    }
    log::info!("GIDs: 0 {} 1 {} (/{prefix})", gids[0].ip, gids[1].ip);
    let pool = Pool::new(hca, 256, 2048).map_err(|e| e.to_string())?;
    let eth = EthQueues::create(
        &pool,
        &EthConfig {
            log_sq_size: 6,
            log_rq_size: 6,
            signal_every: 1,
            inline_l2: false,
            macs: vec![mac, [0xff; 6]],
        },
    )
    .map_err(|e| format!("Ethernet queues: {e}"))?;
    let mut arp = Arp::new(eth, &pool, mac, ip);
    let result = body(hca, &mut arp);
    let answered = arp.answered;
    let destroyed = arp.into_queues().destroy();
    log::info!("ARP requests answered: {answered}");
    let value = result?;
    destroyed.map_err(|e| e.to_string())?;
    Ok(value)
}
