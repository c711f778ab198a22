//! `mlx5-vfio-user`: serves the device model as a ConnectX-5 function over vfio-user.
//!
//! ```text
//! mlx5-vfio-user --socket /run/mlx5.sock [--control /run/mlx5.ctl] [--trace commands.jsonl]
//! ```

use clap::Parser;
use log::{error, info};
use mlx5_vfio_user::backend::SharedModel;
use mlx5_vfio_user::control;
use mlx5_vfio_user::session::{self, SessionHooks, Shared};
use mlx5_vfio_user::trace::{TraceWriter, TracedCommand};
use std::fs::File;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Presents the mlx5-sim device model to a QEMU guest as a ConnectX-5 PCI function.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The vfio-user socket to create (QEMU's vfio-user-pci `socket` path).
    #[arg(long)]
    socket: PathBuf,
    /// A control socket: one command per line (status, request-pages N, health-fatal S, quit).
    #[arg(long)]
    control: Option<PathBuf>,
    /// Write every command the guest issues to this file, one JSON line each.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Serve one client, then exit (tests).
    #[arg(long)]
    once: bool,
}

/// Writes the commands of each session to the trace as the model records them (the model
/// keeps the log; a thread copies what is new every 100 ms, and the end of a session copies
/// the rest). The model's records carry opcode, op_mod, status and syndrome; the fields of
/// the input and output are decoded when the model hands the bytes over too.
struct Tracer {
    state: Mutex<TraceState>,
}

struct TraceState {
    out: TraceWriter,
    session: u64,
    written: usize,
}

impl Tracer {
    /// Copies the records of `model` (session `session`) not yet written.
    fn copy(&self, session: u64, model: &SharedModel) {
        let records = model
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .device()
            .commands();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.session != session {
            st.session = session;
            st.written = 0;
        }
        let from = st.written.min(records.len());
        for r in &records[from..] {
            let c = TracedCommand {
                opcode: r.opcode,
                op_mod: r.op_mod,
                status: r.status,
                syndrome: r.syndrome,
                input: None,
                output: None,
            };
            if let Err(e) = st.out.record(&c) {
                error!("trace: {e}");
                break;
            }
        }
        st.written = records.len();
    }
}

impl SessionHooks for Tracer {
    fn start(&self, session: u64, _model: &SharedModel) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let _ = st.out.note(&format!("session {session}: fresh device"));
    }

    fn end(&self, session: u64, model: &SharedModel) {
        self.copy(session, model);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let _ = st.out.note(&format!("session {session}: over"));
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

fn run(args: Args) -> Result<(), String> {
    let server = session::bind(&args.socket)
        .map_err(|e| format!("binding {}: {e}", args.socket.display()))?;
    info!(
        "serving a ConnectX-5 function (15b3:1017) on {}",
        args.socket.display()
    );
    let shared = Arc::new(Shared::default());
    if let Some(path) = &args.control {
        let _ = std::fs::remove_file(path);
        let listener =
            UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
        let (sock, ctl) = (args.socket.clone(), path.clone());
        control::spawn(
            listener,
            shared.clone(),
            Arc::new(move || {
                info!("quit asked on the control channel");
                let _ = std::fs::remove_file(&sock);
                let _ = std::fs::remove_file(&ctl);
                std::process::exit(0);
            }),
        );
        info!("control channel on {}", path.display());
    }
    let tracer = match &args.trace {
        Some(path) => {
            let f = File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            let tracer = Arc::new(Tracer {
                state: Mutex::new(TraceState {
                    out: TraceWriter::new(Box::new(f)),
                    session: 0,
                    written: 0,
                }),
            });
            let (t, sh) = (tracer.clone(), shared.clone());
            std::thread::spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if let Some(cur) = sh.current() {
                    t.copy(cur.session, &cur.model);
                }
            });
            Some(tracer)
        }
        None => None,
    };
    let hooks: &dyn SessionHooks = match &tracer {
        Some(t) => t.as_ref(),
        None => &session::NoHooks,
    };
    loop {
        session::serve_one(&server, &shared, hooks);
        if args.once {
            return Ok(());
        }
    }
}
