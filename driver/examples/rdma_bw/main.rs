//! The interop partner of perftest 25.01's `ib_write_bw`, `ib_read_bw` and `ib_atomic_bw`
//! (RC, one QP, half duplex, a fixed iteration count), on the device model as a RoCE v2
//! endpoint: the port as rc_pingpong's (a TAP device, GIDs 0 and 1 as soft-RoCE numbers
//! them, ARP answered), perftest's TCP exchange (port 18515) byte for byte, and the
//! operations, as server (the perftest client writes, reads or runs atomics on our buffer) or
//! as client (we do, on the perftest server's).
//!
//! perftest itself checks no data. With the same `--payload_file_path` pattern on the peer as
//! `--payload` here, this side predicts every byte: a server checks its whole buffer after
//! the run (the bytes the client wrote, the words its atomics changed, everything else
//! unchanged), a client checks every byte it read and every value its atomics returned. What
//! each test checks is in `bw.rs`'s doc; the last line printed says what was checked.
//!
//! With `--device vfio:ADDRESS` it runs on a function bound to vfio-pci instead, its port on a
//! wire to the peer (not tested here: no card; `--tap`, `--loss` and `--pcap` are the model's).
//!
//! ```text
//! # server; then the peer runs: ib_write_bw -d rxe0 -x 1 -s 65536 -n 1000 -m 1024 \
//! #   --payload_file_path=FILE <ns address>
//! rdma_bw --tap mlx5roce --addr 10.99.0.2/24 -x 1 --test write -s 65536 -n 1000 -m 1024
//! # client of a perftest server at 10.99.0.1
//! rdma_bw --tap mlx5roce --addr 10.99.0.2/24 -x 1 --test read -s 65536 -n 1000 10.99.0.1
//! ```

#[path = "../common/arp.rs"]
mod arp;
mod bw;
mod layout;
#[path = "../common/oob.rs"]
mod oob;
mod perftest;
#[path = "../common/roce_port.rs"]
mod roce_port;
mod session;

use bw::Kind;
use clap::Parser;
use layout::{Payload, DEFAULT_PAYLOAD};
use perftest::Role;
use roce_port::{parse_mac, peer_mac_of, random_psn, PortArgs};
use session::Setup;
use std::cell::RefCell;
use std::process::ExitCode;
use std::time::Duration;

/// perftest's bandwidth tests' peer on the device model (RoCE v2 over a TAP device).
#[derive(Parser, Debug)]
#[command(name = "rdma_bw")]
struct Args {
    /// Connect to the perftest server at this host; without it, be the server.
    server: Option<String>,
    /// The test: write (ib_write_bw), read (ib_read_bw) or atomic (ib_atomic_bw).
    #[arg(long, value_parser = ["write", "read", "atomic"])]
    test: String,
    /// The atomic operation, as ib_atomic_bw's -A.
    #[arg(short = 'A', long = "atomic_type", default_value = "FETCH_AND_ADD",
          value_parser = ["FETCH_AND_ADD", "CMP_AND_SWAP"])]
    atomic_type: String,
    /// TCP port of the exchange.
    #[arg(short, long, default_value_t = perftest::DEFAULT_PORT)]
    port: u16,
    /// Bytes per operation (must match the peer's -s; atomics are always 8).
    #[arg(short, long, default_value_t = 65536)]
    size: usize,
    /// Operations (must match the peer's -n).
    #[arg(short = 'n', long, default_value_t = 1000)]
    iters: u64,
    /// Path MTU asked for: 256 … 4096 (the smaller of the two sides' is used).
    #[arg(short, long, default_value_t = 1024)]
    mtu: u32,
    /// GID index (0: link-local IPv6 of the MAC, 1: the IPv4 address of --addr).
    #[arg(short = 'x', long = "gid-index", default_value_t = 1)]
    gid_index: u8,
    /// Operations in flight, as a client (perftest's -t).
    #[arg(short = 't', long = "tx-depth", default_value_t = 16)]
    tx_depth: usize,
    /// The buffer pattern, in perftest's --payload_file_path syntax; the peer must use the
    /// same file for the data checks to hold.
    #[arg(long, default_value = DEFAULT_PAYLOAD)]
    payload: String,
    /// QPs (perftest's -q): only 1 is spoken.
    #[arg(short = 'q', long = "qp", default_value_t = 1)]
    qps: u32,
    /// perftest's -b (bidirectional): not spoken; refused.
    #[arg(short = 'b', long)]
    bidirectional: bool,
    /// perftest's -a (all sizes): not spoken; refused.
    #[arg(short = 'a', long)]
    all: bool,
    /// perftest's -D (duration): not spoken; refused.
    #[arg(short = 'D', long)]
    duration: Option<u64>,
    /// The model's port.
    #[command(flatten)]
    port_args: PortArgs,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rdma_bw: {e}");
            ExitCode::FAILURE
        }
    }
}

fn setup(args: &Args) -> Result<Setup, String> {
    if args.qps != 1 {
        return Err("only one QP (-q 1): perftest sends a key message per QP".into());
    }
    if args.bidirectional || args.all || args.duration.is_some() {
        return Err(
            "-b, -a and -D change perftest's exchange and are not spoken; run single-size, \
             one-way, fixed-iteration tests"
                .into(),
        );
    }
    let kind = match (args.test.as_str(), args.atomic_type.as_str()) {
        ("write", _) => Kind::Write,
        ("read", _) => Kind::Read,
        (_, "CMP_AND_SWAP") => Kind::CompareSwap,
        _ => Kind::FetchAdd,
    };
    if args.size == 0 || args.iters == 0 {
        return Err("size and iterations must be at least 1".into());
    }
    roce_port::mtu(args.mtu)?;
    Ok(Setup {
        kind,
        size: if kind.atomic() { 8 } else { args.size },
        iters: args.iters,
        mtu: args.mtu,
        gid_index: args.gid_index,
        payload: Payload::parse(&args.payload)?,
        depth: args.tx_depth,
        timeout: Duration::from_secs(args.port_args.timeout),
        psn: random_psn(),
    })
}

fn run(args: &Args) -> Result<(), String> {
    let setup = setup(args)?;
    let peer_mac = args
        .port_args
        .peer_mac
        .as_deref()
        .map(parse_mac)
        .transpose()?;
    let timeout = Duration::from_secs(args.port_args.timeout);
    roce_port::with_port(&args.port_args, "rdma_bw", |hca, _device, arp| {
        let gid = roce_port::sgid(hca, args.gid_index)?;
        // ARP is answered whenever the exchange or the run waits.
        let arp = RefCell::new(arp);
        let mut idle = || {
            if let Err(e) = arp.borrow_mut().poll() {
                log::warn!("ARP: {e}");
            }
        };
        let mut idle2 = || {
            if let Err(e) = arp.borrow_mut().poll() {
                log::warn!("ARP: {e}");
            }
        };
        let mut resolve = |g: &[u8; 16]| peer_mac_of(g, peer_mac, &mut arp.borrow_mut(), timeout);
        let (role, stream) = match &args.server {
            Some(host) => (Role::Client, oob::connect_to(host, args.port)),
            None => (Role::Server, oob::accept_one(args.port, &mut idle)),
        };
        let stream = stream.map_err(|e| format!("connection on port {}: {e}", args.port))?;
        let stream = oob::Serviced::new(stream, &mut idle).map_err(|e| e.to_string())?;
        let op = if setup.kind.atomic() {
            format!(" -A {}", args.atomic_type)
        } else {
            String::new()
        };
        println!(
            "{}{op} as {role:?}: {} x {} B",
            setup.kind.program(),
            setup.iters,
            setup.size
        );
        let o = session::run(hca, stream, role, &setup, gid, &mut resolve, &mut idle2)?;
        println!(
            " peer version {}, MTU {}, page {} B, cache line {} B, {} slot(s)",
            o.peer_version,
            o.mtu,
            o.layout.cycle,
            o.layout.line,
            o.layout.slots()
        );
        println!(" local address:  {}", o.keys.0);
        println!(" remote address: {}", o.keys.1);
        println!("{}", perftest::RESULT_HEADER);
        println!("{}", o.report.row());
        println!("checked: {}", o.checked);
        Ok(())
    })
}
