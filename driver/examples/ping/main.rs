//! The driver against the Linux kernel's network stack: the device model's port is cabled to a
//! TAP device in a private network namespace, the driver brings the HCA up and runs an IPv4
//! host (smoltcp on the driver's Ethernet queues) at 10.77.0.2; the kernel, at 10.77.0.1,
//! pings it, it pings the kernel and prints round-trip times, and it exchanges UDP datagrams
//! with a socket the kernel owns. Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN).
//!
//! ```text
//! sudo cargo run --release --example ping
//! sudo cargo run --release --example ping -- --count 10 --threaded --pcap /tmp/mlx5.pcap
//! tcpdump -nr /tmp/mlx5.pcap            # or wireshark / tshark -r
//! ```
//!
//! Everything it makes belongs to this process: the namespace and the TAP device vanish when
//! it exits, also on Ctrl-C (which ends the session cleanly) or on an error.
//!
//! On another device (`--device vfio:0000:03:00.0`, or `sim:threaded`) the port is on a wire
//! and the program pings a peer there: `--peer 10.0.0.1 --addr 10.0.0.2/24`.

mod session;
mod wire;

use clap::Parser;
use mlx5_driver::DeviceSpec;
use mlx5_sim::Mode;
use session::Options;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Ping and UDP between the driver (on the device model) and the Linux kernel, over a TAP
/// device in a private network namespace.
#[derive(Parser)]
struct Args {
    /// Echo requests each way.
    #[arg(short, long, default_value_t = 5)]
    count: u16,
    /// UDP round trips with the kernel's echo socket.
    #[arg(short, long, default_value_t = 5)]
    udp: u16,
    /// ICMP payload bytes.
    #[arg(short, long, default_value_t = 56)]
    size: usize,
    /// Milliseconds between echo requests.
    #[arg(short, long, default_value_t = 200)]
    interval: u64,
    /// Run the model on its own firmware thread instead of inline.
    #[arg(long)]
    threaded: bool,
    /// Record the model's port traffic (both ways) to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// The device: sim (the model cabled to a TAP device, the kernel as peer) or anything
    /// else `--device` takes (sim:threaded, vfio:ADDRESS), whose port is on a wire with a
    /// peer at --peer.
    #[arg(long, default_value = "sim")]
    device: DeviceSpec,
    /// The peer to ping, for a device on a wire.
    #[arg(long, value_name = "IPV4")]
    peer: Option<Ipv4Addr>,
    /// The driver's address on the wire.
    #[arg(long, value_name = "IPV4/PREFIX", default_value = "10.77.0.2/24", value_parser = cidr)]
    addr: ([u8; 4], u8),
}

/// `A.B.C.D/N`.
fn cidr(text: &str) -> Result<([u8; 4], u8), String> {
    let (ip, n) = text.split_once('/').ok_or("expected IPV4/PREFIX")?;
    let ip: Ipv4Addr = ip.parse().map_err(|e| format!("{ip}: {e}"))?;
    let n: u8 = n.parse().map_err(|e| format!("{n}: {e}"))?;
    if n == 0 || n > 32 {
        return Err(format!("prefix {n} (1..=32)"));
    }
    Ok((ip.octets(), n))
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    if args.device != DeviceSpec::default() {
        return on_wire(&args);
    }
    if !mlx5_sim::tap::available() {
        eprintln!("ping: /dev/net/tun does not exist: this machine cannot make TAP devices");
        return ExitCode::FAILURE;
    }
    let stop = stop_on_ctrl_c();
    let opts = Options {
        count: args.count,
        udp: args.udp,
        size: args.size,
        interval: Duration::from_millis(args.interval),
        mode: if args.threaded {
            Mode::Threaded
        } else {
            Mode::Inline
        },
        pcap: args.pcap.clone(),
        stop: stop.clone(),
    };
    match session::run(&opts, &mut |line| println!("{line}")) {
        Ok(r) => {
            let bad = r.kernel_pings.iter().filter(|e| e.got != e.sent).count()
                + r.udp.iter().filter(|u| u.got != u.sent).count();
            let checked = r.kernel_pings.len() + r.udp.len() + r.pings.len();
            if bad > 0 {
                println!("payloads: {bad} of {checked} came back different");
            } else {
                println!("payloads: all {checked} came back intact");
            }
            let interrupted = stop.load(Ordering::Relaxed);
            if interrupted {
                println!("interrupted; everything was torn down");
            }
            println!(
                "counters: driver tx {} rx {} | model tx {} rx {} dropped {} | \
                 tap to kernel {} from kernel {} | kernel rx {} tx {}",
                r.driver.tx_packets,
                r.driver.rx_packets,
                r.model_tx,
                r.model_rx,
                r.model_dropped,
                r.tap_port.to_kernel,
                r.tap_port.from_kernel,
                r.kernel.rx_packets,
                r.kernel.tx_packets
            );
            if let (Some(path), Some(n)) = (&args.pcap, r.pcap_frames) {
                println!(
                    "{n} frames written to {} (read with tcpdump -nr)",
                    path.display()
                );
            }
            if bad > 0 {
                ExitCode::FAILURE
            } else if interrupted {
                // As a shell reports a process ended by SIGINT.
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("ping: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Pinging a peer on the wire of a device other than the TAP-cabled model.
fn on_wire(args: &Args) -> ExitCode {
    let Some(peer) = args.peer else {
        eprintln!(
            "ping: --device {} needs --peer (the address to ping on its wire)",
            args.device
        );
        return ExitCode::from(2);
    };
    let stop = stop_on_ctrl_c();
    let opts = Options {
        count: args.count,
        udp: 0,
        size: args.size,
        interval: Duration::from_millis(args.interval),
        mode: Mode::Inline,
        pcap: None,
        stop: stop.clone(),
    };
    let w = wire::Wire {
        device: args.device.clone(),
        addr: args.addr,
        peer: peer.octets(),
    };
    match wire::run(&w, &opts, &mut |line| println!("{line}")) {
        Ok(r) => {
            let bad = r
                .pings
                .iter()
                .filter(|p| p.payload != session::payload(p.seq, args.size))
                .count();
            println!(
                "payloads: {} of {} came back intact; driver tx {} rx {}",
                r.pings.len() - bad,
                r.pings.len(),
                r.driver.tx_packets,
                r.driver.rx_packets
            );
            if bad > 0 || r.pings.len() < usize::from(args.count) && !stop.load(Ordering::Relaxed) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("ping: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A flag Ctrl-C sets, so the session ends cleanly.
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let on_ctrl_c = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || on_ctrl_c.store(true, Ordering::Relaxed)) {
        eprintln!("ping: cannot catch Ctrl-C ({e}); it will end the process at once");
    }
    stop
}
