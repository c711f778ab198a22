//! One perftest bandwidth session from either end: the exchange of [`crate::perftest`] around
//! the RDMA of [`crate::bw`], in perftest's order. Kept apart from the command line so the
//! tests run it between two model devices.

use crate::bw::{Kind, Prepared};
use crate::layout::{Layout, Payload};
use crate::perftest::{self, Key, Oob, Report, Role};
use mlx5_driver::backend::Backend;
use mlx5_driver::roce::RocePath;
use mlx5_driver::Hca;
use mlx5_prm::QpMtu;
use std::io::{Read, Write};
use std::time::Duration;

/// Finds the MAC behind a peer's GID.
pub type Resolve<'a> = &'a mut dyn FnMut(&[u8; 16]) -> Result<[u8; 6], String>;

/// What to run.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The test.
    pub kind: Kind,
    /// Bytes per operation (8 for atomics).
    pub size: usize,
    /// Operations.
    pub iters: u64,
    /// Path MTU asked for, in bytes (the smaller of the two sides' is used).
    pub mtu: u32,
    /// Our GID index (sent in the key message, and the QP's source address).
    pub gid_index: u8,
    /// The pattern both sides fill their buffers with.
    pub payload: Payload,
    /// Requests in flight (the client's).
    pub depth: usize,
    /// Give up when nothing completes for this long.
    pub timeout: Duration,
    /// Our first PSN.
    pub psn: u32,
}

/// How a session went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The peer's version text.
    pub peer_version: String,
    /// Where the messages went.
    pub layout: Layout,
    /// The path MTU used, in bytes.
    pub mtu: u32,
    /// Our key message and the peer's.
    pub keys: (Key, Key),
    /// The client's result (ours, or the one the perftest client sent).
    pub report: Report,
    /// What this side checked, in words.
    pub checked: String,
}

fn qp_mtu(bytes: u32) -> QpMtu {
    match bytes {
        256 => QpMtu::Mtu256,
        512 => QpMtu::Mtu512,
        1024 => QpMtu::Mtu1k,
        2048 => QpMtu::Mtu2k,
        _ => QpMtu::Mtu4k,
    }
}

/// Runs the session over `stream` as `role`. `gid` is our GID (of `setup.gid_index`);
/// `resolve` finds the MAC behind the peer's GID; `idle` runs while the client's CQ is empty.
pub fn run<B: Backend, S: Read + Write>(
    hca: &Hca<B>,
    stream: S,
    role: Role,
    setup: &Setup,
    gid: [u8; 16],
    resolve: Resolve<'_>,
    idle: &mut dyn FnMut(),
) -> Result<Outcome, String> {
    let io = |what: &'static str| move |e: std::io::Error| format!("{what}: {e}");
    let size = if setup.kind.atomic() { 8 } else { setup.size };
    let mut oob = Oob::new(stream, role);
    let peer_version = oob.versions().map_err(io("version exchange"))?;
    let (cycle, line) = oob
        .sys_data(perftest::PAGE_SIZE, perftest::CACHE_LINE)
        .map_err(io("system data exchange"))?;
    let ours = perftest::mtu_number(setup.mtu).ok_or(format!("MTU {} unknown", setup.mtu))?;
    let mtu = 128u32 << oob.mtu(ours).map_err(io("MTU exchange"))?;
    let layout = Layout {
        size,
        cycle: cycle as usize,
        line: line as usize,
    };
    let server = role == Role::Server;
    let side = Prepared::new(hca, setup.kind, layout, &setup.payload, server, setup.depth)?;
    let mine = side.key(setup.psn, gid);
    let theirs = oob.keys(&mine).map_err(io("key exchange"))?;
    log::info!("local  address: {mine}");
    log::info!("remote address: {theirs}");
    let mac = resolve(&theirs.gid)?;
    let path = RocePath::new(theirs.gid, mac, setup.gid_index);
    let mut ready = side.connect(&theirs, &path, setup.psn, qp_mtu(mtu))?;
    // Two more swaps of the same keys: after the connection, and after RTR.
    for _ in 0..2 {
        let again = oob.keys(&mine).map_err(io("key exchange"))?;
        if again != theirs {
            return Err(format!("the peer's key changed: {theirs} then {again}"));
        }
    }
    let (report, checked) = match role {
        Role::Client => {
            let run = ready.run_client(&theirs, setup.iters, setup.timeout, idle)?;
            oob.keys(&mine).map_err(io("end of run"))?;
            oob.reports(&run.report).map_err(io("report exchange"))?;
            oob.keys(&mine).map_err(io("closing exchange"))?;
            (run.report, run.checked)
        }
        Role::Server => {
            // perftest's server waits here for the client to finish.
            oob.keys(&mine).map_err(io("waiting for the client"))?;
            let zero = Report {
                size: 0,
                iters: 0,
                bw_peak: 0.0,
                bw_avg: 0.0,
                msg_rate: 0.0,
            };
            let report = oob.reports(&zero).map_err(io("report exchange"))?;
            oob.keys(&mine).map_err(io("closing exchange"))?;
            if report.size != size as u64 || report.iters != setup.iters {
                return Err(format!(
                    "the client ran {} operations of {} bytes; this side expects {} of {size}",
                    report.iters, report.size, setup.iters
                ));
            }
            let checked = ready.check_server(setup.iters)?;
            (report, checked)
        }
    };
    Ok(Outcome {
        peer_version,
        layout,
        mtu,
        keys: (mine, theirs),
        report,
        checked,
    })
}
