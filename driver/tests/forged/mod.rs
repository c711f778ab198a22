//! One run of the driver against a device whose writes are forged (shared by
//! `tests/forged_device.rs` and the `forged_device` fuzz target): bring-up, page requests and
//! a port change, raw Ethernet loopback, an RC SEND and RDMA WRITE between two QPs, and
//! teardown, each step going on only where the last one worked. Every error must be a typed
//! error that names what failed; afterwards nothing may be left mapped outside the backend's
//! quarantine, and every page the device still holds must be in it.
//!
//! [`run`] returns what went wrong as a list of findings (empty: the driver coped); a panic
//! is a finding of its own, caught by the test or the fuzzer.

use mlx5_driver::backend::forge::{ForgeBackend, Plan, Sites};
use mlx5_driver::backend::sim::{SimBackend, SimDma};
use mlx5_driver::backend::{Backend, DmaAlloc};
use mlx5_driver::counters::QCounter;
use mlx5_driver::cq::{Completion, Cq};
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::mr::{Access, Region};
use mlx5_driver::qp::*;
use mlx5_driver::roce::RoceAddress;
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::{QpMtu, QpPmState};
use mlx5_sim::{Config, Device};
use std::time::Duration;

#[path = "../common/qp_params.rs"]
mod qp_params;

/// Most firmware pages the driver lends in a run (16 MiB): a forged page count must stop
/// here. 32 times what the model asks for at bring-up (128 pages), so only the run's request
/// of 2^20 pages or a forged count reaches it. It was 16,384 pages (64 MiB): the model's
/// zeroing and freeing of those took three quarters of an execution under the address
/// sanitizer (76 executions a second over the corpus, 316 with this limit), for 2 more
/// edges of the container code that holds them.
pub const MAX_PAGES: usize = 4096;

type Forge = ForgeBackend<SimBackend>;

/// What a run saw.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Broken rules, in words.
    pub findings: Vec<String>,
    /// Errors the driver returned (all typed and checked), with their step.
    pub errors: Vec<String>,
    /// Frames received and RC completions seen (how far the traffic got).
    pub received: usize,
    /// RC completions.
    pub completions: usize,
    /// Queue counters read that were not zero.
    pub counters: usize,
    /// Device accesses to unmapped memory (the model's count): a device lied about a
    /// failure and wrote memory the driver had freed. Reported, not a finding: a device can
    /// always make the driver free memory by reporting a failure it did not have.
    pub dma_faults: u64,
    /// Forgeries made.
    pub forged: u64,
    /// The last forgeries, for messages.
    pub recent: Vec<String>,
    /// New CQEs and EQEs the forge saw.
    pub entries: u64,
}

impl Outcome {
    /// Checks one error the driver returned: it must say what failed in the device's words.
    fn error(&mut self, step: &str, e: &Error) {
        self.errors.push(format!("{step}: {e}"));
        if let Some(why) = untyped(e) {
            self.findings.push(format!("{step}: {why}: {e}"));
        }
    }

    fn check<T>(&mut self, step: &str, r: mlx5_driver::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(step, &e);
                None
            }
        }
    }
}

/// Why `e` is not a good report of a device's failure, if it is not.
fn untyped(e: &Error) -> Option<String> {
    match e {
        Error::Command {
            command, status, ..
        } if command.is_empty() || *status == 0 => Some("command error without a status".into()),
        Error::Delivery { status, .. } if *status == 0 => {
            Some("delivery error without a status".into())
        }
        Error::Register { source, .. } => untyped(source),
        Error::Teardown { first, .. } => match **first {
            Error::Teardown { .. } => Some("nested teardown error".into()),
            ref inner => untyped(inner),
        },
        // Sizes come from the generated layouts: a device value must not reach them.
        Error::Layout(_) => Some("a layout error (a device value reached a size)".into()),
        _ => None,
    }
}

/// The HCA's settings for a run: no deadline to wait for, and a page limit. The model runs
/// inline: a command is done when its doorbell write returns (its completion EQE written
/// too), and firmware is ready as soon as the device exists; an entry still owned by the
/// device afterwards (a forged ownership bit), or a forged "initializing", never changes. So
/// the driver's first look decides, through the same timeout paths as a real deadline; a
/// deadline of 10 ms had every such run poll, and scan the rings, for 10 ms.
fn config() -> HcaConfig {
    HcaConfig {
        cmd_timeout: Duration::ZERO,
        fw_ready_timeout: Duration::ZERO,
        max_firmware_pages: MAX_PAGES,
        ..HcaConfig::default()
    }
}

/// Decodes a fuzz input: the first byte chooses the sites (its low five bits; 0: all), the
/// rest are the decisions.
pub fn decode(data: &[u8]) -> (Sites, Vec<u8>) {
    match data.split_first() {
        Some((&s, rest)) if s & 31 != 0 => (Sites(s & 31), rest.to_vec()),
        Some((_, rest)) => (Sites::ALL, rest.to_vec()),
        None => (Sites::ALL, Vec::new()),
    }
}

/// Runs the driver with forgeries from `decisions` at `sites`.
pub fn run(decisions: Vec<u8>, sites: Sites) -> Outcome {
    run_planned(decisions, sites, Vec::new())
}

/// [`run`], with forgeries asked for by name as well.
pub fn run_planned(decisions: Vec<u8>, sites: Sites, plans: Vec<Plan>) -> Outcome {
    run_swept(decisions, sites, plans, None)
}

/// [`run_planned`], the forge comparing whole rings every `sweep`-th look (`None`: its
/// default).
pub fn run_swept(
    decisions: Vec<u8>,
    sites: Sites,
    plans: Vec<Plan>,
    sweep: Option<u32>,
) -> Outcome {
    let (sim, dev) = SimBackend::new(Config::default());
    let dma = sim.dma().clone();
    let mut out = Outcome::default();
    let forge = ForgeBackend::new(sim, decisions, sites);
    if let Some(n) = sweep {
        forge.sweep_every(n);
    }
    for p in plans {
        forge.plan(p);
    }
    let journal = forge.journal();
    if let Some(hca) = out.check("bring-up", Hca::bring_up(forge, &config())) {
        traffic(&hca, &dev, &mut out);
        // A create that timed out (forged ownership) made an object the driver never
        // learnt of: TEARDOWN_HCA must still leave none.
        if out.check("teardown", hca.teardown()).is_some() {
            let objects = dev.objects();
            if objects.total() != 0 {
                out.findings.push(format!(
                    "teardown succeeded with objects left on the device: {objects:?}"
                ));
            }
        }
    }
    let (recent, total) = journal.forged();
    out.forged = total;
    out.entries = journal.entries_seen();
    out.recent = recent
        .iter()
        .map(|f| format!("{}: {}", f.site, f.what))
        .collect();
    leftovers(&dev, dma, &mut out);
    out
}

/// Page requests, a port change, Ethernet and RC traffic.
fn traffic(hca: &Hca<Forge>, dev: &Device, out: &mut Outcome) {
    for n in [8, -4, 1 << 20, i32::MIN + 1] {
        dev.request_pages(n);
        hca.backend().settle();
        let _ = out.check("page request", hca.poll_events());
    }
    dev.raise_port_change(1, true);
    hca.backend().settle();
    let _ = out.check("port change", hca.poll_events());
    ethernet(hca, dev, out);
    rc(hca, out);
    queries(hca, out);
    let _ = out.check("events", hca.poll_events());
}

fn ethernet(hca: &Hca<Forge>, dev: &Device, out: &mut Outcome) {
    const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa];
    let Some(pool) = out.check("pool", Pool::new(hca, 64, 2048)) else {
        return;
    };
    let config = EthConfig {
        log_sq_size: 4,
        log_rq_size: 5,
        signal_every: 4,
        inline_l2: false,
        macs: vec![MAC],
    };
    let Some(mut eth) = out.check("eth queues", EthQueues::create(&pool, &config)) else {
        return;
    };
    dev.loopback(true);
    let mut pkts = Vec::new();
    pool.alloc_batch(&mut pkts, 8);
    for (i, p) in pkts.iter_mut().enumerate() {
        let mut f = vec![0u8; 60 + i];
        f[..6].copy_from_slice(&MAC);
        f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
        if let Err(e) = p.write(&f) {
            out.error("frame", &e);
        }
    }
    for _ in 0..4 {
        if pkts.is_empty() {
            break;
        }
        if out.check("tx", eth.tx_batch(&mut pkts)).is_none() {
            break;
        }
    }
    let mut got = Vec::new();
    for _ in 0..16 {
        match eth.rx_batch(&mut got, 32) {
            Ok(0) => {
                dev.tick();
                hca.backend().settle();
            }
            Ok(_) => {}
            Err(e) => {
                out.error("rx", &e);
                break;
            }
        }
    }
    out.received = got.len();
    drop(got);
    drop(pkts);
    let _ = out.check("eth destroy", eth.destroy());
}

fn rc(hca: &Hca<Forge>, out: &mut Outcome) {
    let Some(cq) = out.check("cq", Cq::create(hca, 5)) else {
        return;
    };
    let geometry = QpConfig {
        log_sq_size: 4,
        log_rq_size: 4,
        log_rq_stride: 1,
    };
    let Some(a) = out.check("qp a", Qp::create(hca, &cq, &cq, &geometry)) else {
        return;
    };
    let Some(b) = out.check("qp b", Qp::create(hca, &cq, &cq, &geometry)) else {
        return;
    };
    let (qa, qb) = (a.qpn(), b.qpn());
    let Some(mut a) = to_rts(a, qb, out) else {
        return;
    };
    let Some(mut b) = to_rts(b, qa, out) else {
        return;
    };
    let all = Access {
        local_write: true,
        remote_read: true,
        remote_write: true,
        remote_atomic: true,
    };
    let (Some(rx), Some(tx), Some(target)) = (
        out.check("mr", Region::register(hca, 4096, all)),
        out.check("mr", Region::register(hca, 4096, all)),
        out.check("mr", Region::register(hca, 4096, all)),
    ) else {
        return;
    };
    let (addr, rkey) = (target.addr(), target.rkey());
    if let Err((e, _)) = b.post_recv(1, rx) {
        out.error("post recv", &e);
    }
    let send = |op, region| SendRequest {
        id: 2,
        op,
        region,
        len: Some(64),
        signaled: true,
        inline: None,
    };
    if let Err(r) = a.post_send(send(SendOp::Send, Some(tx))) {
        out.error("post send", &r.0);
    }
    let write = SendOp::Write(RemoteAddr { addr, rkey });
    if let Some(src) = out.check("mr", Region::register(hca, 4096, all)) {
        if let Err(r) = a.post_send(send(write, Some(src))) {
            out.error("post write", &r.0);
        }
    }
    let mut done: Vec<Completion> = Vec::new();
    let mut cq = cq;
    for _ in 0..16 {
        cq.poll(16, &mut done);
    }
    out.completions = done.len();
    for c in done {
        let qp = if c.qpn == a.qpn() { &mut a } else { &mut b };
        let _ = out.check("complete", qp.complete(c));
    }
    let _ = out.check("qp state", a.query_state());
    let _ = out.check("qp destroy", a.destroy());
    let _ = out.check("qp destroy", b.destroy());
    drop(target);
    let _ = out.check("cq destroy", cq.destroy());
}

/// Outputs the driver decodes field by field: a GID table entry and a queue counter set.
fn queries(hca: &Hca<Forge>, out: &mut Outcome) {
    let ip = std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    let address = RoceAddress::v2(ip, [2, 0, 0, 0, 0, 1]);
    if out
        .check("gid", hca.set_roce_address(0, &address))
        .is_some()
    {
        let _ = out.check("gid query", hca.query_roce_address(0));
        let _ = out.check("gid clear", hca.clear_roce_address(0));
    }
    if let Some(counter) = out.check("q counter", QCounter::alloc(hca)) {
        if let Some(counts) = out.check("q counter query", counter.query(false)) {
            out.counters = counts.nonzero().count();
        }
    }
    // Registers: forged images must decode to values or typed errors, never a panic.
    let port = hca.port(1);
    let _ = out.check("port state", port.state());
    let _ = out.check("port link", port.link());
    let _ = out.check("port mtu", port.mtu());
    let _ = out.check("port fec", port.fec());
    let _ = out.check("link down reason", port.link_down_reason());
    let _ = out.check(
        "port counters",
        port.counters(
            mlx5_driver::port::CounterGroup::PhysicalLayerStatistical,
            false,
        ),
    );
    let _ = out.check("bit error rate", port.bit_error_rate());
    match port.module(&mlx5_driver::module::DecodeOptions::default()) {
        Ok(m) => {
            let _ = m.to_string();
        }
        Err(mlx5_driver::module::ModuleError::Read { source, .. }) => {
            out.error("module", &source);
        }
        Err(_) => {}
    }
}

/// Takes a QP to RTS, connected to `peer`.
fn to_rts<'h>(qp: Qp<'h, Forge, Rst>, peer: u32, out: &mut Outcome) -> Option<Qp<'h, Forge, Rts>> {
    let (init, rtr, rts) = qp_params::params(peer);
    let qp = out.check("rst2init", qp.rst2init(init).map_err(|(e, _)| e))?;
    let qp = out.check("init2rtr", qp.init2rtr(rtr).map_err(|(e, _)| e))?;
    out.check("rtr2rts", qp.rtr2rts(rts).map_err(|(e, _)| e))
}

/// After teardown: what is still mapped must be exactly the quarantine, and cover every page
/// the device holds; with the last allocator handle gone, nothing is mapped.
fn leftovers(dev: &Device, dma: SimDma, out: &mut Outcome) {
    out.dma_faults = dev.dma_faults();
    let q = dma.quarantined();
    if dev.dma().regions() != q.buffers {
        out.findings.push(format!(
            "{} DMA regions mapped, {} quarantined: memory left outside the quarantine",
            dev.dma().regions(),
            q.buffers
        ));
    }
    if dev.pages_held() > q.buffers {
        out.findings.push(format!(
            "the device holds {} pages, only {} buffers quarantined",
            dev.pages_held(),
            q.buffers
        ));
    }
    drop(dma);
    if dev.dma().regions() != 0 {
        out.findings.push(format!(
            "{} DMA regions still mapped after the backend went",
            dev.dma().regions()
        ));
    }
}
