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

mod session;

use clap::Parser;
use mlx5_sim::Mode;
use session::Options;
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
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    if !mlx5_sim::tap::available() {
        eprintln!("ping: /dev/net/tun does not exist: this machine cannot make TAP devices");
        return ExitCode::FAILURE;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let on_ctrl_c = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || on_ctrl_c.store(true, Ordering::Relaxed)) {
        eprintln!("ping: cannot catch Ctrl-C ({e}); it will end the process at once");
    }
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
