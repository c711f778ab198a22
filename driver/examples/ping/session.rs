//! One session of the `ping` example, shared with the TAP integration test
//! (driver/tests/tap.rs): a private network namespace with a TAP device whose kernel side has
//! an address, the device model cabled to it, the driver brought up with Ethernet queues and a
//! smoltcp host on them; then the kernel pings the host, the host pings the kernel, and the
//! host exchanges UDP datagrams with a socket the kernel owns. Everything made is torn down on
//! the way out, on success, on error and on a stop request; the namespace and the TAP device
//! belong to this process and vanish with it even if it is killed.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::eth::{EthConfig, EthCounters, EthQueues, Pool};
use mlx5_driver::net::{EchoReply, Host, Port};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::tap::ifconfig::{self, IfCounters};
use mlx5_sim::tap::{NetNs, Tap, TapCounters};
use mlx5_sim::{Config, Mode};
use std::error::Error;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The kernel's address on the TAP device.
pub const KERNEL_IP: [u8; 4] = [10, 77, 0, 1];
/// The driver's (the smoltcp host's) address.
pub const HOST_IP: [u8; 4] = [10, 77, 0, 2];
/// The host's MAC: locally administered, unicast.
pub const HOST_MAC: [u8; 6] = [0x02, 0x4d, 0x4c, 0x58, 0x35, 0x02];
/// The kernel's UDP echo socket's port.
pub const ECHO_PORT: u16 = 7777;
const PREFIX: u8 = 24;
const TAP_NAME: &str = "mlx5sim%d";
/// How long any one answer may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// What to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Echo requests each way.
    pub count: u16,
    /// UDP round trips.
    pub udp: u16,
    /// Bytes of ICMP payload.
    pub size: usize,
    /// Pause between requests.
    pub interval: Duration,
    /// The model's mode.
    pub mode: Mode,
    /// Write the port's traffic to this pcap file.
    pub pcap: Option<PathBuf>,
    /// Set (by a Ctrl-C handler, say) to end the session early, cleanly.
    pub stop: Arc<AtomicBool>,
}

/// An echo the kernel sent to the host and got back.
#[derive(Debug, Clone)]
pub struct KernelEcho {
    /// Sequence number.
    pub seq: u16,
    /// The payload sent.
    pub sent: Vec<u8>,
    /// The payload of the reply.
    pub got: Vec<u8>,
    /// Round-trip time seen by the kernel's socket.
    pub rtt: Duration,
}

/// A UDP datagram sent to the kernel's echo socket, and what came back.
#[derive(Debug, Clone)]
pub struct UdpEcho {
    /// The payload sent.
    pub sent: Vec<u8>,
    /// The payload received back.
    pub got: Vec<u8>,
    /// Round-trip time.
    pub rtt: Duration,
}

/// What happened, with every side's counters (read once traffic stopped).
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The TAP interface's name.
    pub tap: String,
    /// The host's echo requests the kernel answered.
    pub pings: Vec<EchoReply>,
    /// The kernel's echo requests the host answered.
    pub kernel_pings: Vec<KernelEcho>,
    /// UDP round trips.
    pub udp: Vec<UdpEcho>,
    /// Datagrams the kernel's socket echoed.
    pub kernel_udp_echoed: u64,
    /// The driver's Ethernet queue counters.
    pub driver: EthCounters,
    /// The model's port: frames transmitted, delivered to an RQ, dropped.
    pub model_tx: u64,
    /// See `model_tx`.
    pub model_rx: u64,
    /// See `model_tx`.
    pub model_dropped: u64,
    /// Frames that crossed the TAP device, as the model's side counted them.
    pub tap_port: TapCounters,
    /// The kernel's counters of the TAP interface.
    pub kernel: IfCounters,
    /// Frames written to the pcap file.
    pub pcap_frames: Option<u64>,
}

pub type Fallible<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// The payload of request `seq`: recognisable bytes that differ per request.
pub fn payload(seq: u16, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u16).wrapping_mul(7).wrapping_add(seq) as u8)
        .collect()
}

/// Runs a session; `say` gets a line per event as it happens.
pub fn run(opts: &Options, say: &mut dyn FnMut(String)) -> Fallible<Report> {
    let ns = NetNs::new()?;
    let tap = ns.run(|| -> std::io::Result<Tap> {
        let tap = Tap::create(TAP_NAME)?;
        ifconfig::disable_ipv6(tap.name())?;
        ifconfig::set_ipv4(tap.name(), Ipv4Addr::from(KERNEL_IP), PREFIX)?;
        ifconfig::set_up(tap.name())?;
        // Let this process's group open ICMP ping sockets (the kernel's side of the pings).
        std::fs::write("/proc/sys/net/ipv4/ping_group_range", "0 2147483647")?;
        Ok(tap)
    })??;
    let name = tap.name().to_string();
    let (backend, device) = SimBackend::new(Config {
        mode: opts.mode,
        ..Config::default()
    });
    if let Some(path) = &opts.pcap {
        device.capture_to_file(path)?;
    }
    let port = tap.attach(&device)?;
    say(format!(
        "{name}: kernel {}/{PREFIX} <-> driver on the model {} ({}), {} mode",
        Ipv4Addr::from(KERNEL_IP),
        Ipv4Addr::from(HOST_IP),
        mac(HOST_MAC),
        match opts.mode {
            Mode::Inline => "inline",
            Mode::Threaded => "threaded",
        }
    ));

    let hca = Hca::bring_up(backend, &HcaConfig::default())?;
    let config = eth_config();
    let result = (|| -> Fallible<Report> {
        let pool = Pool::new(&hca, 1024, 2048)?;
        let eth = EthQueues::create(&pool, &config)?;
        let mut host = Host::new(Port::new(eth), HOST_MAC, HOST_IP, PREFIX);
        let result = exchange(opts, &ns, &mut host, say);
        let eth = host.into_port().into_queues();
        let driver = eth.counters();
        let destroyed = eth.destroy();
        let r = result?;
        destroyed?;
        Ok(Report { driver, ..r })
    })();
    let down = hca.teardown();
    let pcap = device.stop_capture();
    let kernel = ns.run(|| ifconfig::counters(&name))?;
    let tap_port = port.close();
    let mut report = result?;
    down?;
    report.tap = name;
    report.pcap_frames = opts.pcap.as_ref().map(|_| pcap).transpose()?;
    report.kernel = kernel?;
    report.tap_port = tap_port;
    report.model_tx = device.tx_frames();
    report.model_rx = device.rx_frames();
    report.model_dropped = device.rx_dropped();
    Ok(report)
}

/// The host's Ethernet queues: its MAC and broadcast steered to the RQ.
pub fn eth_config() -> EthConfig {
    EthConfig {
        log_sq_size: 8,
        log_rq_size: 8,
        signal_every: 16,
        inline_l2: false,
        macs: vec![HOST_MAC, [0xff; 6]],
    }
}

pub fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The traffic: kernel → host pings, host → kernel pings, UDP round trips.
fn exchange(
    opts: &Options,
    ns: &NetNs,
    host: &mut Host<'_, SimBackend>,
    say: &mut dyn FnMut(String),
) -> Fallible<Report> {
    let stop = || opts.stop.load(Ordering::Relaxed);
    let mut report = Report::default();

    // The kernel pings the host from a thread in the namespace while the host serves.
    let (count, size, interval) = (opts.count, opts.size, opts.interval);
    let (pinger_stop, server_stop) = (opts.stop.clone(), opts.stop.clone());
    let pinger = ns.spawn("kernel ping", move || {
        kernel_pings(count, size, interval, &pinger_stop)
    })?;
    say(format!(
        "PING {} from the kernel: {size} data bytes",
        Ipv4Addr::from(HOST_IP)
    ));
    while !pinger.is_finished() {
        host.serve(Duration::from_millis(1), &stop)?;
    }
    let echoes = pinger
        .join()
        .map_err(|_| "the kernel ping thread panicked")???;
    for e in &echoes {
        say(echo_line(e.got.len(), HOST_IP, e.seq, e.rtt) + " (answered by the driver)");
    }
    summary(
        say,
        "kernel → driver",
        opts.count,
        echoes.iter().map(|e| e.rtt),
    );
    report.kernel_pings = echoes;

    // The host pings the kernel.
    report.pings = ping_peer(host, KERNEL_IP, "driver → kernel", opts, say)?;

    // UDP with a socket the kernel owns: it echoes what it gets.
    let socket = ns.run(|| UdpSocket::bind(SocketAddrV4::new(KERNEL_IP.into(), ECHO_PORT)))??;
    socket.set_read_timeout(Some(Duration::from_millis(20)))?;
    let done = Arc::new(AtomicBool::new(false));
    let server_done = done.clone();
    let server = std::thread::Builder::new()
        .name("kernel udp".into())
        .spawn(move || udp_echo(&socket, &server_stop, &server_done))?;
    for i in 0..opts.udp {
        if stop() {
            break;
        }
        let sent = format!("datagram {i} from the mlx5 model").into_bytes();
        let (got, rtt) = host.udp_round_trip(KERNEL_IP, ECHO_PORT, &sent, TIMEOUT, &stop)?;
        say(format!(
            "udp {}:{} -> {}:{ECHO_PORT}: {} bytes back in {:.3} ms",
            Ipv4Addr::from(HOST_IP),
            mlx5_driver::net::UDP_PORT,
            Ipv4Addr::from(KERNEL_IP),
            got.len(),
            ms(rtt)
        ));
        report.udp.push(UdpEcho { sent, got, rtt });
    }
    done.store(true, Ordering::Relaxed);
    report.kernel_udp_echoed = server
        .join()
        .map_err(|_| "the kernel UDP thread panicked")??;
    summary(
        say,
        "udp round trips",
        opts.udp,
        report.udp.iter().map(|u| u.rtt),
    );

    // Let the last frames settle before the counters are read.
    host.serve(Duration::from_millis(50), &|| false)?;
    Ok(report)
}

/// The host pings `peer` `opts.count` times (answering whatever else arrives between
/// requests), printing each reply and a summary as ping(8) does.
pub fn ping_peer<B: mlx5_driver::backend::Backend>(
    host: &mut Host<'_, B>,
    peer: [u8; 4],
    what: &str,
    opts: &Options,
    say: &mut dyn FnMut(String),
) -> Fallible<Vec<EchoReply>> {
    let stop = || opts.stop.load(Ordering::Relaxed);
    say(format!(
        "PING {} from the driver: {} data bytes",
        Ipv4Addr::from(peer),
        opts.size
    ));
    let mut replies = Vec::new();
    for seq in 1..=opts.count {
        if stop() {
            break;
        }
        let reply = host.ping(peer, seq, &payload(seq, opts.size), TIMEOUT, &stop)?;
        say(echo_line(reply.payload.len(), peer, reply.seq, reply.rtt));
        replies.push(reply);
        host.serve(opts.interval, &stop)?;
    }
    summary(say, what, opts.count, replies.iter().map(|p| p.rtt));
    Ok(replies)
}

/// A reply as ping(8) prints it (the ICMP header's 8 bytes counted).
fn echo_line(payload: usize, from: [u8; 4], seq: u16, rtt: Duration) -> String {
    format!(
        "{} bytes from {}: icmp_seq={seq} time={:.3} ms",
        payload + 8,
        Ipv4Addr::from(from),
        ms(rtt)
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summary(
    say: &mut dyn FnMut(String),
    what: &str,
    sent: u16,
    rtts: impl Iterator<Item = Duration>,
) {
    let rtts: Vec<f64> = rtts.map(ms).collect();
    if rtts.is_empty() {
        say(format!("--- {what}: {sent} sent, 0 answered"));
        return;
    }
    let min = rtts.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = rtts.iter().cloned().fold(0.0, f64::max);
    let avg = rtts.iter().sum::<f64>() / rtts.len() as f64;
    say(format!(
        "--- {what}: {sent} sent, {} answered, rtt min/avg/max = {min:.3}/{avg:.3}/{max:.3} ms",
        rtts.len()
    ));
}

/// The kernel's side of the pings: an ICMP ping socket in the namespace sends `count` echo
/// requests to the host and checks each reply's sequence number and payload.
fn kernel_pings(
    count: u16,
    size: usize,
    interval: Duration,
    stop: &AtomicBool,
) -> std::io::Result<Vec<KernelEcho>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket: UdpSocket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::ICMPV4))?.into();
    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
    let to = SocketAddrV4::new(HOST_IP.into(), 0);
    let mut echoes = Vec::new();
    let mut buf = vec![0u8; 65_536];
    for seq in 1..=count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let sent = payload(seq.wrapping_add(0x80), size);
        // Type 8 (echo request), code 0; the kernel fills in identifier and checksum.
        let mut request = vec![8, 0, 0, 0, 0, 0];
        request.extend_from_slice(&seq.to_be_bytes());
        request.extend_from_slice(&sent);
        let start = Instant::now();
        socket.send_to(&request, to)?;
        while start.elapsed() < TIMEOUT && !stop.load(Ordering::Relaxed) {
            let n = match socket.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            };
            let reply = &buf[..n];
            if n >= 8 && reply[0] == 0 && reply[6..8] == seq.to_be_bytes() {
                echoes.push(KernelEcho {
                    seq,
                    sent: sent.clone(),
                    got: reply[8..].to_vec(),
                    rtt: start.elapsed(),
                });
                break;
            }
        }
        std::thread::sleep(interval);
    }
    Ok(echoes)
}

/// The kernel's UDP echo socket: sends every datagram back to where it came from, until the
/// session is done or stopped; returns how many it echoed.
fn udp_echo(socket: &UdpSocket, stop: &AtomicBool, done: &AtomicBool) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 65_536];
    let mut echoed = 0;
    while !stop.load(Ordering::Relaxed) && !done.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                socket.send_to(&buf[..n], from)?;
                echoed += 1;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(echoed)
}
