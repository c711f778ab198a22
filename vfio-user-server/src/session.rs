//! Serving clients one after another, each with a fresh device model: a client that
//! disconnects, crashes or sends garbage ends only its own session, and the next client gets
//! a device at power-on. Malformed messages are answered by the relay ([`crate::relay`])
//! before the crate sees them; the crate's loop returning an error, or panicking, is still
//! caught here.

use crate::backend::{Function, SharedModel, CONFIG_REGION_SIZE, MSIX_VECTORS};
use crate::model::{Model, Profile};
use crate::msix::Msix;
use crate::relay::{BindError, Refusals, Relay};
use crate::stats::Stats;
use log::{error, info, warn};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use vfio_bindings::bindings::vfio::{
    vfio_region_info, VFIO_IRQ_INFO_EVENTFD, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_ERR_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
    VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS, VFIO_PCI_REQ_IRQ_INDEX, VFIO_REGION_INFO_FLAG_READ,
    VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_user::{IrqInfo, Server, ServerRegion};

/// What the control channel sees of the session being served.
#[derive(Debug, Clone)]
pub struct Current {
    /// The session's number, from 1.
    pub session: u64,
    /// Its device model.
    pub model: SharedModel,
    /// Its MSI-X vectors.
    pub msix: Arc<Msix>,
}

/// Everything shared between the session loop and the control channel.
#[derive(Debug, Default)]
pub struct Shared {
    /// The session being served (or waiting for its client).
    pub current: Mutex<Option<Current>>,
    /// Server-wide counts.
    pub stats: Arc<Stats>,
    /// The profile each session's fresh device runs.
    pub profile: Profile,
    /// The Ethernet port's TAP cable and capture, handed from session to session.
    pub port: crate::port::Port,
    /// The port is looped back on itself (a loopback plug): what the function sends, it
    /// receives. Set at start (`--loopback`) and by the control channel (`loopback on|off`).
    pub loopback: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// The current session, if any.
    pub fn current(&self) -> Option<Current> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, c: Option<Current>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = c;
    }
}

fn region(index: u32, size: u64) -> ServerRegion {
    let flags = if size > 0 {
        VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE
    } else {
        0
    };
    ServerRegion {
        region_info: vfio_region_info {
            argsz: std::mem::size_of::<vfio_region_info>() as u32,
            flags,
            index,
            cap_offset: 0,
            size,
            offset: 0,
        },
        sparse_areas: Vec::new(),
        mmap_fd: None,
    }
}

/// The regions the function has: BAR 0 and configuration space; the others are empty.
pub fn regions(bar0_size: u64) -> Vec<ServerRegion> {
    (0..VFIO_PCI_NUM_REGIONS)
        .map(|i| match i {
            VFIO_PCI_BAR0_REGION_INDEX => region(i, bar0_size),
            VFIO_PCI_CONFIG_REGION_INDEX => region(i, CONFIG_REGION_SIZE),
            _ => region(i, 0),
        })
        .collect()
}

/// The interrupt indices: MSI-X vectors, and one error and one request interrupt.
pub fn irqs() -> Vec<IrqInfo> {
    (0..VFIO_PCI_NUM_IRQS)
        .map(|index| {
            let count = match index {
                VFIO_PCI_MSIX_IRQ_INDEX => u32::from(MSIX_VECTORS),
                VFIO_PCI_ERR_IRQ_INDEX | VFIO_PCI_REQ_IRQ_INDEX => 1,
                _ => 0,
            };
            IrqInfo {
                index,
                flags: if count > 0 { VFIO_IRQ_INFO_EVENTFD } else { 0 },
                count,
            }
        })
        .collect()
}

/// Where clients come in: through the validating relay, or (measurements only) straight to
/// the crate's socket.
pub enum Endpoint {
    /// The public socket is the relay's; the crate's server is behind it (see [`crate::relay`]).
    Relayed(Relay),
    /// The crate's server on the public socket, unprotected: only for measuring what the
    /// relay costs and for showing the hazards it removes. Never for a guest.
    Direct(Server),
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Relayed(r) => f.debug_tuple("Relayed").field(r).finish(),
            Endpoint::Direct(_) => f.write_str("Direct"),
        }
    }
}

impl Endpoint {
    /// The private directory the relay keeps the crate's socket in, if any.
    pub fn private_dir(&self) -> Option<&Path> {
        match self {
            Endpoint::Relayed(r) => Some(r.private_dir()),
            Endpoint::Direct(_) => None,
        }
    }
}

fn bar0_size() -> u64 {
    crate::pci::ConfigSpace::new(Model::new().bar_size(), MSIX_VECTORS).bar0_size()
}

/// Binds the vfio-user socket at `path` (which must not exist), the relay in front of the
/// protocol crate's server.
pub fn bind(path: &Path) -> Result<Endpoint, BindError> {
    Relay::bind(path, true, irqs(), regions(bar0_size())).map(Endpoint::Relayed)
}

/// Binds the crate's server itself at `path`, without the relay: measurements only.
pub fn bind_unprotected(path: &Path) -> Result<Endpoint, vfio_user::Error> {
    Server::new(path, true, irqs(), regions(bar0_size())).map(Endpoint::Direct)
}

/// What the caller does with each session's model (the trace).
pub trait SessionHooks {
    /// A session's fresh model, before its client connects.
    fn start(&self, _session: u64, _model: &SharedModel) {}
    /// The session is over (the model is still there, its guest memory gone).
    fn end(&self, _session: u64, _model: &SharedModel) {}
}

/// No hooks.
#[derive(Debug, Default)]
pub struct NoHooks;
impl SessionHooks for NoHooks {}

/// Serves one client with a fresh device; returns when it is gone.
pub fn serve_one(endpoint: &Endpoint, shared: &Shared, hooks: &dyn SessionHooks) {
    let n = shared.stats.sessions.fetch_add(1, Ordering::Relaxed) + 1;
    let model: SharedModel = Arc::new(Mutex::new(Model::with_profile(shared.profile)));
    let device = model
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .device()
        .clone();
    hooks.start(n, &model);
    shared.port.plug(n, &device);
    device.loopback(shared.loopback.load(Ordering::Relaxed));
    let msix = Arc::new(Msix::new(MSIX_VECTORS));
    shared.set(Some(Current {
        session: n,
        model: model.clone(),
        msix: msix.clone(),
    }));
    let mut function = Function::new(model.clone(), msix.clone(), shared.stats.clone());
    info!("session {n}: fresh device model, waiting for a client");
    let (server, pipes) = match endpoint {
        Endpoint::Direct(server) => (server, None),
        Endpoint::Relayed(relay) => {
            // The backend tells the relay each refusal's errno, for the crate's error replies.
            let refusals = Arc::new(Refusals::default());
            let started = relay
                .accept()
                .and_then(|client| relay.start(client, shared.stats.clone(), n, refusals.clone()));
            match started {
                Ok(p) => {
                    function.report_refusals(refusals);
                    (relay.server(), Some(p))
                }
                Err(e) => {
                    warn!("session {n}: no connection: {e}");
                    function.shutdown();
                    shared.port.unplug(n, &device);
                    hooks.end(n, &model);
                    // Accept errors (descriptor exhaustion) may repeat: do not spin.
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    return;
                }
            }
        }
    };
    // The relay keeps malformed messages from the crate; catching its panics stays as the
    // second line of defence.
    let result = catch_unwind(AssertUnwindSafe(|| server.run(&mut function)));
    if let Some(p) = pipes {
        p.finish();
    }
    match result {
        Ok(Ok(())) => info!("session {n}: client disconnected"),
        Ok(Err(e)) => warn!("session {n}: ended on an error: {e}"),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            error!("session {n}: the protocol loop panicked ({what}); the server goes on");
        }
    }
    function.shutdown();
    shared.port.unplug(n, &device);
    hooks.end(n, &model);
    info!("session {n}: over; the next client gets a fresh device");
}
