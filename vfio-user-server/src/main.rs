//! `mlx5-vfio-user`: serves the device model as a ConnectX-5 function over vfio-user.
//!
//! ```text
//! mlx5-vfio-user --socket /run/mlx5.sock [--control /run/mlx5.ctl] [--trace commands.jsonl]
//! mlx5-vfio-user --summarize commands.jsonl    # what a trace holds, failures listed
//! ```

use clap::Parser;
use log::{error, info, warn};
use mlx5_sim::{CommandObserver, CommandTrace};
use mlx5_vfio_user::backend::SharedModel;
use mlx5_vfio_user::control;
use mlx5_vfio_user::model::Profile;
use mlx5_vfio_user::port::Port;
use mlx5_vfio_user::session::{self, SessionHooks, Shared};
use mlx5_vfio_user::trace::summary::Summary;
use mlx5_vfio_user::trace::{TraceWriter, TracedCommand};
use std::fs::File;
use std::io::BufReader;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Presents the mlx5-sim device model to a QEMU guest as a ConnectX-5 PCI function.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The vfio-user socket to create (QEMU's vfio-user-pci `socket` path).
    #[arg(long, required_unless_present = "summarize")]
    socket: Option<PathBuf>,
    /// Do not serve: read a trace written by --trace and print its summary (commands per
    /// type, then every command that failed, BAD_OP ones marked as not implemented).
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["socket", "control", "trace", "once", "tap", "pcap"])]
    summarize: Option<PathBuf>,
    /// A control socket: one command per line (status, request-pages N, health-fatal S,
    /// tx-fault N, loopback on|off, quit).
    #[arg(long)]
    control: Option<PathBuf>,
    /// Write every command the guest issues to this file, one JSON line each.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// The device each session runs: `probe-only` (the port in InfiniBand mode: mlx5_core
    /// probes without starting its Ethernet driver) or `ethernet` (an Ethernet port: mlx5e
    /// makes a netdev; cable it with --tap).
    #[arg(long, value_enum, default_value_t = Profile::ProbeOnly)]
    profile: Profile,
    /// Cable the function's Ethernet port to a new TAP interface of this name, in the
    /// server's network namespace (run the server in one with `ip netns exec`); `%d` in the
    /// name is replaced by the kernel's first free number.
    #[arg(long, value_name = "NAME")]
    tap: Option<String>,
    /// Give the TAP interface this IPv4 address and bring it up (IPv6 off on it).
    #[arg(long, value_name = "ADDR/PREFIX", requires = "tap")]
    tap_addr: Option<mlx5_vfio_user::port::Cidr>,
    /// Loop the function's port back on itself, as a loopback plug would: every frame it
    /// sends arrives on its receive side (a user-space driver's traffic test needs no peer).
    #[arg(long)]
    loopback: bool,
    /// Capture every frame on the function's port to this pcap file (session N > 1: the
    /// name with -N before the extension).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// Serve one client, then exit (tests).
    #[arg(long)]
    once: bool,
    /// Measurements only, never for a guest: serve the protocol crate on the socket directly,
    /// without the validating relay (to measure the relay's cost, and to show the hazards it
    /// removes). Hidden from --help.
    #[arg(long, hide = true)]
    no_relay: bool,
}

/// Writes every command of every session to the trace, as the model serves it (the model's
/// command observer hands over the whole input and output, so every field is decoded).
struct Tracer {
    out: Mutex<TraceWriter>,
}

impl Tracer {
    fn record(&self, t: &CommandTrace) {
        let c = TracedCommand {
            opcode: t.opcode,
            op_mod: t.op_mod,
            delivery: t.delivery,
            status: t.status,
            syndrome: t.syndrome,
            input: Some(t.input.clone()),
            output: Some(t.output.clone()),
        };
        let mut w = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = w.record(&c) {
            error!("trace: {e}");
        }
    }

    fn note(&self, what: &str) {
        let mut w = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.note(what);
    }
}

/// Installs the tracer as each session's command observer.
struct TraceHooks(Arc<Tracer>);

impl SessionHooks for TraceHooks {
    fn start(&self, session: u64, model: &SharedModel) {
        self.0.note(&format!("session {session}: fresh device"));
        let t = self.0.clone();
        let observer: CommandObserver = Arc::new(move |c: &CommandTrace| t.record(c));
        model
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .device()
            .set_command_observer(Some(observer));
    }

    fn end(&self, session: u64, model: &SharedModel) {
        model
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .device()
            .set_command_observer(None);
        self.0.note(&format!("session {session}: over"));
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    if let Err(e) = run(args) {
        error!("{e}");
        std::process::exit(1);
    }
}

fn summarize(path: &Path) -> Result<(), String> {
    let f = File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let summary =
        Summary::read(BufReader::new(f)).map_err(|e| format!("reading {}: {e}", path.display()))?;
    print!("{summary}");
    Ok(())
}

fn run(args: Args) -> Result<(), String> {
    let socket = match (&args.summarize, &args.socket) {
        (Some(trace), _) => return summarize(trace),
        (None, Some(socket)) => socket.clone(),
        (None, None) => return Err("--socket PATH is needed (see --help)".into()),
    };
    let bound = if args.no_relay {
        warn!("--no-relay: client messages reach the protocol crate unchecked");
        session::bind_unprotected(&socket).map_err(|e| e.to_string())
    } else {
        session::bind(&socket).map_err(|e| e.to_string())
    };
    let endpoint = bound.map_err(|e| format!("binding {}: {e}", socket.display()))?;
    info!(
        "serving a ConnectX-5 function (15b3:1017, profile {:?}) on {}",
        args.profile,
        socket.display()
    );
    let tap = match &args.tap {
        Some(name) => {
            let tap = Port::create_tap(name, args.tap_addr)
                .map_err(|e| format!("TAP interface {name}: {e}"))?;
            info!("port cabled to TAP interface {}", tap.name());
            Some(tap)
        }
        None => None,
    };
    let shared = Arc::new(Shared {
        profile: args.profile,
        port: Port::new(tap, args.pcap.clone()),
        loopback: args.loopback.into(),
        ..Shared::default()
    });
    // What an exit leaves behind: both sockets and the relay's private directory. Both ways
    // out (`quit` on the control channel, SIGINT/SIGTERM/SIGHUP) remove them by hand, as
    // `exit` skips destructors.
    let leftovers = {
        let (sock, ctl) = (socket.clone(), args.control.clone());
        let private = endpoint.private_dir().map(|p| p.to_path_buf());
        move || {
            let _ = std::fs::remove_file(&sock);
            if let Some(ctl) = &ctl {
                let _ = std::fs::remove_file(ctl);
            }
            if let Some(p) = &private {
                let _ = std::fs::remove_dir_all(p);
            }
        }
    };
    let on_signal = leftovers.clone();
    ctrlc::set_handler(move || {
        info!("stopping on a signal");
        on_signal();
        std::process::exit(0);
    })
    .map_err(|e| format!("installing the signal handler: {e}"))?;
    if let Some(path) = &args.control {
        let _ = std::fs::remove_file(path);
        let listener =
            UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
        control::spawn(
            listener,
            shared.clone(),
            Arc::new(move || {
                info!("quit asked on the control channel");
                leftovers();
                std::process::exit(0);
            }),
        );
        info!("control channel on {}", path.display());
    }
    let hooks: Box<dyn SessionHooks> = match &args.trace {
        Some(path) => {
            let f = File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            Box::new(TraceHooks(Arc::new(Tracer {
                out: Mutex::new(TraceWriter::new(Box::new(f))),
            })))
        }
        None => Box::new(session::NoHooks),
    };
    loop {
        session::serve_one(&endpoint, &shared, hooks.as_ref());
        if args.once {
            return Ok(());
        }
    }
}
