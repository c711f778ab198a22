//! `mlx5-netcheck`: byte-checked TCP and UDP transfers, ICMP echo and a peer agent, for the
//! guest harness's traffic milestones (`scripts/guest`, issue 15). The same static binary
//! runs in the QEMU guest and, in the network namespace of the model's TAP interface, on the
//! host; every transfer carries a stream whose every byte the receiver checks
//! ([`pattern`]), and prints one JSON line with its counts, CRC-32 and throughput.
//!
//! ```text
//! mlx5-netcheck udp-recv --listen 0.0.0.0:5001 --seed 7      # prints its report at the end
//! mlx5-netcheck udp-send --to 10.77.0.1:5001 --bytes 10485760 --seed 7
//! mlx5-netcheck tcp-recv --listen 0.0.0.0:5002 --seed 8
//! mlx5-netcheck tcp-send --to 10.77.0.1:5002 --bytes 10485760 --seed 8
//! mlx5-netcheck ping --to 10.77.0.2 --count 100
//! mlx5-netcheck agent --socket /run/peer.sock --iface mlx5tap0   # the host side
//! ```
//! Exit status 0 when the transfer arrived whole (both CRCs equal, every byte checked), 1
//! otherwise, 2 on a usage error.

mod agent;
mod pattern;
mod ping;
mod tcp;
mod udp;

use clap::{Parser, Subcommand};
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// How long a transfer may make no progress before it fails.
pub(crate) const GIVE_UP: Duration = Duration::from_secs(120);

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Byte-checked transfers and a peer agent for the guest harness"
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Receive one UDP stream and check every byte.
    UdpRecv {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        seed: u64,
        /// Datagrams in flight (must match the sender's to ack at the right pace).
        #[arg(long, default_value_t = 32)]
        window: u32,
    },
    /// Send BYTES of the stream as UDP datagrams (go-back-N, every one acknowledged).
    UdpSend {
        #[arg(long)]
        to: SocketAddr,
        #[arg(long)]
        bytes: u64,
        #[arg(long)]
        seed: u64,
        /// Payload bytes per datagram (1400 keeps a datagram in one 1500-byte frame).
        #[arg(long, default_value_t = 1400)]
        chunk: usize,
        #[arg(long, default_value_t = 32)]
        window: u32,
    },
    /// Receive one TCP stream and check every byte.
    TcpRecv {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        seed: u64,
    },
    /// Send BYTES of the stream over TCP.
    TcpSend {
        #[arg(long)]
        to: SocketAddr,
        #[arg(long)]
        bytes: u64,
        #[arg(long)]
        seed: u64,
    },
    /// ICMP echo (raw socket: root).
    Ping {
        #[arg(long)]
        to: Ipv4Addr,
        #[arg(long, default_value_t = 10)]
        count: u16,
    },
    /// The host-side peer: a line server on a Unix socket (see the agent module).
    Agent {
        #[arg(long)]
        socket: PathBuf,
        /// The interface whose counters `stats` reports (the model's TAP device).
        #[arg(long)]
        iface: Option<String>,
        #[arg(long, default_value_t = 1400)]
        chunk: usize,
        #[arg(long, default_value_t = 32)]
        window: u32,
    },
}

/// `report` with the receiver's report merged in, each of its keys prefixed `peer_` (flat
/// JSON: the guest's shell reads it with `sed`).
pub(crate) fn flatten_peer(mut report: Value, peer: &Value) -> Value {
    if let (Some(o), Some(p)) = (report.as_object_mut(), peer.as_object()) {
        for (k, v) in p {
            o.insert(format!("peer_{k}"), v.clone());
        }
        o.insert("peer_answered".into(), Value::Bool(!p.is_empty()));
    }
    report
}

/// True when a report says the stream arrived whole.
fn whole(v: &Value) -> bool {
    match v["mode"].as_str() {
        Some("udp-recv" | "tcp-recv") => v["ok"] == true,
        Some("udp-send" | "tcp-send") => v["peer_ok"] == true && v["peer_crc32"] == v["crc32"],
        Some("ping") => v["received"] == v["sent"],
        _ => false,
    }
}

fn main() {
    let args = Args::parse();
    let result = match args.cmd {
        Cmd::UdpRecv {
            listen,
            seed,
            window,
        } => udp::Receiver::bind(listen, seed, window).and_then(|r| {
            eprintln!("listening on udp {}", r.local_addr()?);
            r.run(GIVE_UP)
        }),
        Cmd::UdpSend {
            to,
            bytes,
            seed,
            chunk,
            window,
        } => udp::send(to, bytes, seed, udp::Shape { chunk, window }, GIVE_UP),
        Cmd::TcpRecv { listen, seed } => tcp::Receiver::bind(listen, seed).and_then(|r| {
            eprintln!("listening on tcp {}", r.local_addr()?);
            r.run(GIVE_UP)
        }),
        Cmd::TcpSend { to, bytes, seed } => tcp::send(to, bytes, seed, GIVE_UP),
        Cmd::Ping { to, count } => {
            ping::ping(to, count, Duration::from_millis(10), Duration::from_secs(2))
        }
        Cmd::Agent {
            socket,
            iface,
            chunk,
            window,
        } => match agent::run(&socket, iface, chunk, window) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("mlx5-netcheck agent: {}: {e}", socket.display());
                std::process::exit(1);
            }
        },
    };
    match result {
        Ok(v) => {
            println!("{v}");
            std::process::exit(if whole(&v) { 0 } else { 1 });
        }
        Err(e) => {
            println!(
                "{}",
                serde_json::json!({ "ok": false, "error": e.to_string() })
            );
            std::process::exit(1);
        }
    }
}
