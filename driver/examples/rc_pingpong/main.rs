//! The interop partner of rdma-core's `ibv_rc_pingpong`, on the device model as a RoCE v2
//! endpoint: the model's port is a TAP device in the current network namespace, the driver
//! fills the port's RoCE address table (index 0 the link-local GID of the MAC, index 1 the
//! IPv4-mapped GID of `--addr`, both RoCE v2, as soft-RoCE numbers its GIDs, so `-g 1` means
//! the IPv4 GID at both ends), answers ARP for `--addr`, and runs ibv_rc_pingpong's exchange
//! (TCP, port 18515) and message pattern on an RC QP.
//!
//! The out-of-band TCP connection uses the kernel's sockets of the namespace the process runs
//! in (its own addresses, not `--addr`, which belongs to the model): the peer's
//! `ibv_rc_pingpong SERVER` names an address of this namespace, and `rc_pingpong SERVER`
//! names one of the peer's. The RoCE traffic itself only crosses the TAP device.
//!
//! ```text
//! # server (no positional argument), then the peer runs: ibv_rc_pingpong -g 1 <ns address>
//! rc_pingpong --tap rxe0tap --addr 10.99.0.2/24 -g 1
//! # client
//! rc_pingpong --tap rxe0tap --addr 10.99.0.2/24 -g 1 10.99.0.1
//! ```

mod arp;
mod exchange;
mod pingpong;

use arp::Arp;
use clap::Parser;
use exchange::{Dest, ExchangeError, Serviced};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::counters::QCounter;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::roce::{gid_ipv4, link_local_gid, RoceAddress, RocePath};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::QpMtu;
use mlx5_sim::tap::{ifconfig, Tap};
use mlx5_sim::{Config, Device, Faults, Mode, RcTransport};
use pingpong::{Connected, Params, Side};
use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// ibv_rc_pingpong's peer on the device model (RoCE v2 over a TAP device). Unlike
/// ibv_rc_pingpong, which never looks at the data, `--check` verifies every received byte.
#[derive(Parser, Debug)]
#[command(name = "rc_pingpong")]
struct Args {
    /// Connect to the ibv_rc_pingpong (or rc_pingpong) server at this host; without it, be
    /// the server and wait for a client.
    server: Option<String>,
    /// TCP port of the address exchange.
    #[arg(short, long, default_value_t = exchange::DEFAULT_PORT)]
    port: u16,
    /// Bytes per message (larger than the MTU is fine: the transport splits messages).
    #[arg(short, long, default_value_t = 4096)]
    size: usize,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    #[arg(short, long, default_value_t = 1024)]
    mtu: u32,
    /// Receives to keep posted (at most 64 MiB of receive buffers are posted; as each side
    /// sends only after receiving, one would do).
    #[arg(short, long = "rx-depth", default_value_t = 500)]
    rx_depth: usize,
    /// Messages each way.
    #[arg(short = 'n', long, default_value_t = 1000)]
    iters: u32,
    /// Local GID index to send from and to advertise (0: link-local IPv6 of the MAC,
    /// 1: the IPv4 address of --addr). Without it the GID sent is zero, which RoCE cannot use.
    #[arg(short, long = "gid-idx")]
    gid_idx: Option<u8>,
    /// Fill the send buffer with a pattern and check every received byte: each message must be
    /// that pattern (an echo, or a peer rc_pingpong --check) or ibv_rc_pingpong's initial 0x7b
    /// fill. ibv_rc_pingpong itself does not check data.
    #[arg(long)]
    check: bool,
    /// The TAP device the model's port uses, opened (created if missing) in this network
    /// namespace and brought up; the harness bridges it to the peer.
    #[arg(long)]
    tap: String,
    /// The model's IPv4 address and prefix (its GID index 1, and what it answers ARP for).
    #[arg(long)]
    addr: String,
    /// The model's MAC.
    #[arg(long, default_value = "02:4d:4c:58:35:10")]
    mac: String,
    /// The peer's MAC, instead of asking ARP for the IPv4 address in its GID.
    #[arg(long = "peer-mac")]
    peer_mac: Option<String>,
    /// Run the model's command interface on its own firmware thread.
    #[arg(long)]
    threaded: bool,
    /// Record the port's frames (both ways) to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Seconds to wait for ARP answers and, during the run, for any completion.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
    /// Make the model's port lossy: it loses one frame in this many, each way, at random
    /// (a fault of the model; the transport's retransmissions must recover). The loss ends
    /// when this side starts the last round: ibv_rc_pingpong ends without a handshake, so
    /// a lost final ACK would leave one side resending to a peer that has already closed.
    #[arg(long, value_name = "N")]
    loss: Option<u32>,
    /// Milliseconds the QP stays up after the last message, answering the peer's resends
    /// (default: 2000 with --loss, else 0).
    #[arg(long, value_name = "MS")]
    linger: Option<u64>,
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
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

fn parse_cidr(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (ip, prefix) = s.split_once('/').unwrap_or((s, "24"));
    let ip: Ipv4Addr = ip.parse().map_err(|_| format!("bad IPv4 address {ip:?}"))?;
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= 32)
        .ok_or(format!("bad prefix {prefix:?}"))?;
    Ok((ip, prefix))
}

fn mtu(bytes: u32) -> Result<QpMtu, String> {
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
fn eui64_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    let g = gid;
    (g[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0] && g[11] == 0xff && g[12] == 0xfe)
        .then(|| [g[8] ^ 0x02, g[9], g[10], g[13], g[14], g[15]])
}

/// A PSN as ibv_rc_pingpong picks one: random, 24 bits.
fn random_psn() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) as u32 & 0xff_ffff
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rc_pingpong: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let mac = parse_mac(&args.mac)?;
    let (ip, prefix) = parse_cidr(&args.addr)?;
    let peer_mac = args.peer_mac.as_deref().map(parse_mac).transpose()?;
    let params = Params {
        size: args.size,
        rx_depth: args.rx_depth,
        iters: args.iters,
        mtu: mtu(args.mtu)?,
        check: args.check,
        timeout: Duration::from_secs(args.timeout),
        counter_set_id: 0,
        linger: Duration::from_millis(args.linger.unwrap_or(if args.loss.is_some() {
            2000
        } else {
            0
        })),
    };
    if args.loss.is_some_and(|n| n < 2) {
        return Err("--loss N loses one frame in N: N must be at least 2".into());
    }
    if !mlx5_sim::tap::available() {
        return Err("/dev/net/tun does not exist: this machine cannot make TAP devices".into());
    }
    let (backend, device) = SimBackend::new(Config {
        rc_transport: RcTransport::Roce,
        mode: if args.threaded {
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
    let tap = Tap::create(&args.tap).map_err(|e| e.to_string())?;
    ifconfig::set_up(tap.name()).map_err(|e| format!("bringing {} up: {e}", tap.name()))?;
    let port = tap.attach(&device).map_err(|e| e.to_string())?;
    let hca = Hca::bring_up(backend, &HcaConfig::default()).map_err(|e| e.to_string())?;
    let result = with_hca(args, &hca, &device, &params, (mac, ip, prefix), peer_mac);
    let down = hca.teardown();
    if let Some(path) = &args.pcap {
        match device.stop_capture() {
            Ok(n) => println!("{n} frames written to {}", path.display()),
            Err(e) => eprintln!("rc_pingpong: pcap: {e}"),
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
    result?;
    down.map(|_| ()).map_err(|e| format!("teardown: {e}"))
}

fn with_hca(
    args: &Args,
    hca: &Hca<SimBackend>,
    device: &Device,
    params: &Params,
    (mac, ip, prefix): ([u8; 6], Ipv4Addr, u8),
    peer_mac: Option<[u8; 6]>,
) -> Result<(), String> {
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
    let result = session(args, hca, device, params, &mut arp, peer_mac);
    let answered = arp.answered;
    let destroyed = arp.into_queues().destroy();
    log::info!("ARP requests answered: {answered}");
    result?;
    destroyed.map_err(|e| e.to_string())
}

/// The peer's MAC: given, from ARP for the IPv4 address in its GID, or from its link-local
/// GID.
fn peer_mac_of(
    remote: &Dest,
    given: Option<[u8; 6]>,
    arp: &mut Arp<'_, SimBackend>,
    timeout: Duration,
) -> Result<[u8; 6], String> {
    if let Some(m) = given {
        return Ok(m);
    }
    if remote.gid == [0; 16] {
        return Err("the peer sent no GID: run it with -g (RoCE needs a GID)".into());
    }
    if let Some(v4) = gid_ipv4(&remote.gid) {
        return arp.resolve(v4, timeout);
    }
    eui64_mac(&remote.gid).ok_or(format!(
        "cannot tell the MAC of GID {}: give --peer-mac",
        Ipv6Addr::from(remote.gid)
    ))
}

/// What connecting the QP to the peer needs besides the peer's address.
struct Link {
    peer_mac: Option<[u8; 6]>,
    gid_index: u8,
    psn: u32,
    timeout: Duration,
}

impl Link {
    /// Finds the peer's MAC and takes the QP to RTS towards it.
    fn connect<'h>(
        &self,
        side: Side<'h, SimBackend>,
        arp: &mut Arp<'_, SimBackend>,
        remote: &Dest,
    ) -> Result<Connected<'h, SimBackend>, String> {
        let peer = peer_mac_of(remote, self.peer_mac, arp, self.timeout)?;
        let path = RocePath::new(remote.gid, peer, self.gid_index);
        side.connect(remote, &path, self.psn)
    }
}

fn session(
    args: &Args,
    hca: &Hca<SimBackend>,
    device: &Device,
    params: &Params,
    arp: &mut Arp<'_, SimBackend>,
    peer_mac: Option<[u8; 6]>,
) -> Result<(), String> {
    // Counts the QP's transport events (out of sequence, timeouts, duplicates...).
    let counter = QCounter::alloc(hca).map_err(|e| format!("ALLOC_Q_COUNTER: {e}"))?;
    let params = &Params {
        counter_set_id: counter.id(),
        ..params.clone()
    };
    let side = Side::new(hca, params)?;
    let gid_index = args.gid_idx.unwrap_or(0);
    let gid = match args.gid_idx {
        Some(i) => hca
            .query_roce_address(u16::from(i))
            .map_err(|e| e.to_string())?
            .ok_or(format!("can't read sgid of index {i}"))?
            .gid(),
        None => [0; 16],
    };
    let mine = Dest {
        lid: 0,
        qpn: side.qpn(),
        psn: random_psn(),
        gid,
    };
    println!("  local address:  {mine}");
    let link = Link {
        peer_mac,
        gid_index,
        psn: mine.psn,
        timeout: params.timeout,
    };
    // ARP is answered while the exchange waits, and used by the connection in between.
    let arp = RefCell::new(arp);
    let mut idle = || {
        if let Err(e) = arp.borrow_mut().poll() {
            log::warn!("ARP: {e}");
        }
    };
    let (remote, connected) = match &args.server {
        Some(server) => {
            let s = exchange::connect_to(server, args.port).map_err(|e| e.to_string())?;
            let mut s = Serviced::new(s, &mut idle).map_err(|e| e.to_string())?;
            let remote = exchange::client_exchange(&mut s, &mine)
                .map_err(|e| format!("Couldn't read/write remote address: {e}"))?;
            (remote, link.connect(side, &mut arp.borrow_mut(), &remote)?)
        }
        None => {
            let s = exchange::accept_one(args.port, &mut idle)
                .map_err(|e| format!("Couldn't listen to port {}: {e}", args.port))?;
            let mut s = Serviced::new(s, &mut idle).map_err(|e| e.to_string())?;
            let mut side = Some(side);
            let mut connected = None;
            let remote = exchange::server_exchange(&mut s, &mine, |remote| {
                let side = side.take().ok_or("connected twice")?;
                connected = Some(link.connect(side, &mut arp.borrow_mut(), remote)?);
                Ok::<(), String>(())
            })
            .map_err(|e: ExchangeError<String>| e.to_string())?;
            (remote, connected.ok_or("not connected")?)
        }
    };
    println!("  remote address: {remote}");
    let mut last_round = || {
        if args.loss.is_some() {
            device.faults().port_loss(0);
        }
    };
    let stats = connected.run_hooked(args.server.is_some(), &mut idle, &mut last_round)?;
    for line in stats.summary() {
        println!("{line}");
    }
    if params.check {
        println!(
            "checked {} messages of {} bytes: all intact",
            stats.checked, stats.size
        );
    }
    // The counts `rdma statistic` would show for this QP on Linux (the nonzero ones).
    let counts = counter
        .query(false)
        .map_err(|e| format!("QUERY_Q_COUNTER: {e}"))?;
    let shown: Vec<String> = counts.nonzero().map(|(n, v)| format!("{n} {v}")).collect();
    println!(
        "QP counters: {}",
        if shown.is_empty() {
            "all 0".to_string()
        } else {
            shown.join(", ")
        }
    );
    Ok(())
}
