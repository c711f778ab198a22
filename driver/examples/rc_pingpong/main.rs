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
//! With `--device vfio:ADDRESS` it runs on a function bound to vfio-pci instead, its port on a
//! wire to the peer (not tested here: no card; `--tap`, `--loss` and `--pcap` are the model's).
//!
//! ```text
//! # server (no positional argument), then the peer runs: ibv_rc_pingpong -g 1 <ns address>
//! rc_pingpong --tap rxe0tap --addr 10.99.0.2/24 -g 1
//! # client
//! rc_pingpong --tap rxe0tap --addr 10.99.0.2/24 -g 1 10.99.0.1
//! ```

#[path = "../common/arp.rs"]
mod arp;
mod exchange;
#[path = "../common/oob.rs"]
mod oob;
mod pingpong;
#[path = "../common/roce_port.rs"]
mod roce_port;

use arp::Arp;
use clap::Parser;
use exchange::{Dest, ExchangeError};
use mlx5_driver::backend::AnyBackend;
use mlx5_driver::counters::QCounter;
use mlx5_driver::roce::RocePath;
use mlx5_driver::Hca;
use mlx5_sim::Device;
use oob::Serviced;
use pingpong::{Connected, Params, Side};
use roce_port::{parse_mac, peer_mac_of, random_psn, PortArgs};
use std::cell::RefCell;
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
    /// The model's port.
    #[command(flatten)]
    port_args: PortArgs,
    /// Milliseconds the QP stays up after the last message, answering the peer's resends
    /// (default: 2000 with --loss, else 0). With --loss the port's loss also ends when this
    /// side starts the last round: ibv_rc_pingpong ends without a handshake, so a lost final
    /// ACK would leave one side resending to a peer that has already closed.
    #[arg(long, value_name = "MS")]
    linger: Option<u64>,
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
    let peer_mac = args
        .port_args
        .peer_mac
        .as_deref()
        .map(parse_mac)
        .transpose()?;
    let params = Params {
        size: args.size,
        rx_depth: args.rx_depth,
        iters: args.iters,
        mtu: roce_port::mtu(args.mtu)?,
        check: args.check,
        timeout: Duration::from_secs(args.port_args.timeout),
        counter_set_id: 0,
        ack_timeout: 14,
        linger: Duration::from_millis(args.linger.unwrap_or(if args.port_args.loss.is_some() {
            2000
        } else {
            0
        })),
    };
    roce_port::with_port(&args.port_args, "rc_pingpong", |hca, device, arp| {
        session(args, hca, device, &params, arp, peer_mac)
    })
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
        side: Side<'h, AnyBackend>,
        arp: &mut Arp<'_, AnyBackend>,
        remote: &Dest,
    ) -> Result<Connected<'h, AnyBackend>, String> {
        let peer = peer_mac_of(&remote.gid, self.peer_mac, arp, self.timeout)?;
        let path = RocePath::new(remote.gid, peer, self.gid_index);
        side.connect(remote, &path, self.psn)
    }
}

fn session(
    args: &Args,
    hca: &Hca<AnyBackend>,
    device: Option<&Device>,
    params: &Params,
    arp: &mut Arp<'_, AnyBackend>,
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
        Some(i) => roce_port::sgid(hca, i)?,
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
            let s = oob::connect_to(server, args.port).map_err(|e| e.to_string())?;
            let mut s = Serviced::new(s, &mut idle).map_err(|e| e.to_string())?;
            let remote = exchange::client_exchange(&mut s, &mine)
                .map_err(|e| format!("Couldn't read/write remote address: {e}"))?;
            (remote, link.connect(side, &mut arp.borrow_mut(), &remote)?)
        }
        None => {
            let s = oob::accept_one(args.port, &mut idle)
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
        if let (Some(_), Some(device)) = (args.port_args.loss, device) {
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
