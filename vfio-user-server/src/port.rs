//! The function's Ethernet port, cabled to a Linux TAP interface in the server's network
//! namespace (`--tap`), so the guest's `mlx5e` exchanges real frames with the host's network
//! stack, and captured to a pcap file (`--pcap`) as it crosses the cable. Each session's fresh
//! device gets the same interface (its addresses and counters in the kernel stay): the port
//! is plugged when a session starts and released when it ends. The capture is the model's own
//! ([`mlx5_sim::Device::capture`]): every frame its port sends or receives, once; session 1
//! writes the file named, session N the same name with `-N` before the extension.

use log::{info, warn};
use mlx5_sim::tap::{ifconfig, Tap, TapPort};
use mlx5_sim::Device;
use serde_json::{json, Value};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// An IPv4 address with its prefix length, as `10.77.0.1/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The address.
    pub addr: Ipv4Addr,
    /// The prefix length, 0..=32.
    pub prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (a, p) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?}: an IPv4 address with a prefix, as 10.77.0.1/24"))?;
        let addr = a.parse().map_err(|e| format!("{a:?}: {e}"))?;
        let prefix = p
            .parse::<u8>()
            .ok()
            .filter(|&p| p <= 32)
            .ok_or_else(|| format!("{p:?}: a prefix length 0..32"))?;
        Ok(Cidr { addr, prefix })
    }
}

enum Slot {
    /// No interface (no `--tap`).
    None,
    /// The interface, no device plugged in.
    Free(Tap),
    /// Cabled to the current session's device.
    Plugged(TapPort),
}

/// The port's cable and capture, shared by every session.
pub struct Port {
    slot: Mutex<Slot>,
    name: Option<String>,
    pcap: Option<PathBuf>,
}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port")
            .field("tap", &self.name)
            .field("pcap", &self.pcap)
            .finish()
    }
}

impl Default for Port {
    fn default() -> Self {
        Port::new(None, None)
    }
}

/// The capture file of session `n`: `path` itself for the first, `stem-n.ext` after.
pub fn capture_path(path: &Path, n: u64) -> PathBuf {
    if n <= 1 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let name = match (stem, path.extension()) {
        (Some(s), Some(e)) => format!("{s}-{n}.{}", e.to_string_lossy()),
        (Some(s), None) => format!("{s}-{n}"),
        (None, _) => format!("capture-{n}.pcap"),
    };
    path.with_file_name(name)
}

impl Port {
    /// A port on `tap` (if any), captured to `pcap` (if given).
    pub fn new(tap: Option<Tap>, pcap: Option<PathBuf>) -> Port {
        Port {
            name: tap.as_ref().map(|t| t.name().to_string()),
            slot: Mutex::new(tap.map_or(Slot::None, Slot::Free)),
            pcap,
        }
    }

    /// Creates TAP interface `name` in this process's network namespace; with `addr`, gives
    /// it that IPv4 address, turns IPv6 off on it (no autoconfiguration traffic beside what a
    /// test sends) and brings it up.
    pub fn create_tap(name: &str, addr: Option<Cidr>) -> std::io::Result<Tap> {
        let tap = Tap::create(name)?;
        if let Some(c) = addr {
            ifconfig::disable_ipv6(tap.name())?;
            ifconfig::set_ipv4(tap.name(), c.addr, c.prefix)?;
            ifconfig::set_up(tap.name())?;
        }
        Ok(tap)
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Session `n` starts with `dev`: the capture starts and the interface is cabled to it.
    pub fn plug(&self, n: u64, dev: &Arc<Device>) {
        if let Some(p) = &self.pcap {
            let path = capture_path(p, n);
            // Unbuffered: each frame reaches the file as it crosses, so a server that is
            // killed leaves a whole capture behind.
            match std::fs::File::create(&path).and_then(|f| dev.capture(f)) {
                Ok(()) => info!("session {n}: capturing the port to {}", path.display()),
                Err(e) => warn!("session {n}: no capture to {}: {e}", path.display()),
            }
        }
        let mut slot = self.lock();
        match std::mem::replace(&mut *slot, Slot::None) {
            Slot::Free(tap) => match tap.attach(dev) {
                Ok(port) => {
                    info!("session {n}: port cabled to TAP interface {}", port.name());
                    *slot = Slot::Plugged(port);
                }
                Err(e) => warn!("session {n}: the TAP interface could not be attached: {e}"),
            },
            other => *slot = other,
        }
    }

    /// Session `n` is over: the interface is released for the next device, the capture ends.
    pub fn unplug(&self, n: u64, dev: &Arc<Device>) {
        let mut slot = self.lock();
        if let Slot::Plugged(port) = std::mem::replace(&mut *slot, Slot::None) {
            let c = port.counters();
            info!(
                "session {n}: port released ({} frames to the kernel, {} from it, {} refused)",
                c.to_kernel, c.from_kernel, c.write_errors
            );
            *slot = Slot::Free(port.release());
        }
        drop(slot);
        if self.pcap.is_some() {
            match dev.stop_capture() {
                Ok(frames) => info!("session {n}: capture closed, {frames} frames"),
                Err(e) => warn!("session {n}: the capture failed: {e}"),
            }
        }
    }

    /// The cable's state for the control channel's `status`.
    pub fn status(&self) -> Value {
        let slot = self.lock();
        match &*slot {
            Slot::None => Value::Null,
            Slot::Free(t) => json!({ "name": t.name(), "plugged": false }),
            Slot::Plugged(p) => {
                let c = p.counters();
                json!({
                    "name": p.name(), "plugged": true, "to_kernel": c.to_kernel,
                    "from_kernel": c.from_kernel, "write_errors": c.write_errors,
                    "failure": p.failure(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_files_per_session() {
        let p = Path::new("/x/port.pcap");
        assert_eq!(capture_path(p, 1), Path::new("/x/port.pcap"));
        assert_eq!(capture_path(p, 2), Path::new("/x/port-2.pcap"));
        assert_eq!(capture_path(Path::new("cap"), 3), Path::new("cap-3"));
    }

    #[test]
    fn cidr_parsing() {
        let c: Cidr = "10.77.0.1/24".parse().unwrap();
        assert_eq!((c.addr, c.prefix), (Ipv4Addr::new(10, 77, 0, 1), 24));
        assert!("10.77.0.1".parse::<Cidr>().is_err());
        assert!("10.77.0.1/33".parse::<Cidr>().is_err());
        assert!("10.77.0/8".parse::<Cidr>().is_err());
    }
}
