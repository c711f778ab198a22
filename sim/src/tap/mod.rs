//! The model's port on a Linux TAP device: frames the device's SQs transmit are written to
//! the TAP device, where the kernel's network stack receives them, and frames the kernel sends
//! through the TAP device arrive at the model's port ([`Device::receive_frame`]) and are
//! steered through its flow tables to an RQ. The other end is thus a network stack no one here
//! wrote. Linux only; creating a TAP device needs CAP_NET_ADMIN.
//!
//! [`NetNs`] gives the TAP device a private network namespace, and [`ifconfig`] sets its
//! address, so tests and demos never touch the host's network.
//!
//! ```no_run
//! use mlx5_sim::tap::{ifconfig, NetNs, Tap};
//! use mlx5_sim::{Config, Device};
//!
//! let ns = NetNs::new()?;
//! let tap = ns.run(|| -> std::io::Result<Tap> {
//!     let tap = Tap::create("mlx5sim0")?;
//!     ifconfig::set_ipv4(tap.name(), "10.77.0.1".parse().unwrap(), 24)?;
//!     ifconfig::set_up(tap.name())?;
//!     Ok(tap)
//! })??;
//! let dev = Device::new(Config::default());
//! let port = tap.attach(&dev)?; // the device's port is now cabled to the kernel
//! // ... bring the driver up, send and receive ...
//! let counts = port.close();
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod ifconfig;
mod netns;

pub use netns::NetNs;

use crate::{Device, Link};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Largest frame read from the TAP device (a TAP device's MTU can be raised to 64 KiB).
const MAX_FRAME: usize = 65_536 + 14;

/// True when this machine can make TAP devices at all (the `tun` driver's character device
/// exists); whether this process may is another question, answered by [`Tap::create`].
pub fn available() -> bool {
    std::path::Path::new("/dev/net/tun").exists()
}

/// A TAP interface, created in the calling thread's network namespace; it exists while this
/// handle (its only descriptor) is open.
#[derive(Debug)]
pub struct Tap {
    file: Arc<File>,
    name: String,
}

impl Tap {
    /// Creates TAP interface `name` (a `%d` in it is replaced by the kernel with the first
    /// free number), without packet information headers: reads and writes are whole Ethernet
    /// frames.
    pub fn create(name: &str) -> io::Result<Tap> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| io::Error::new(e.kind(), format!("opening /dev/net/tun: {e}")))?;
        let mut req = ifconfig::request(name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads one `ifreq` (the name and flags) and writes the name the
        // kernel chose back into it; `req` is a whole, initialised `ifreq` that outlives the
        // call, and `file` is an open /dev/net/tun.
        if let Err(e) = unsafe { ifconfig::tunsetiff(file.as_raw_fd(), &mut req) } {
            return Err(io::Error::new(
                io::Error::from(e).kind(),
                format!("creating TAP device {name} (needs root or CAP_NET_ADMIN): {e}"),
            ));
        }
        Ok(Tap {
            name: ifconfig::name_of(&req),
            file: Arc::new(file),
        })
    }

    /// The interface's name, as the kernel chose it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Cables `device`'s port to this TAP device: the device's transmitted frames go to the
    /// kernel (replacing a link or [`Wire`](crate::Wire) attached before), and a thread
    /// delivers the kernel's frames to the device until the returned port is closed (or
    /// released, which keeps the interface for the next device: [`TapPort::release`]).
    pub fn attach(self, device: &Arc<Device>) -> io::Result<TapPort> {
        let (stop_rx, stop_tx) = pipe()?;
        let shared = Arc::new(Shared {
            name: self.name,
            file: self.file,
            to_kernel: AtomicU64::new(0),
            from_kernel: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            failure: Mutex::new(None),
        });
        let (reader, dev) = (shared.clone(), device.clone());
        let thread = std::thread::Builder::new()
            .name(format!("tap {}", shared.name))
            .spawn(move || reader.pump(&dev, &stop_rx))?;
        let link: Arc<dyn Link> = Arc::new(TapLink(shared.clone()));
        device.attach_link(link.clone());
        Ok(TapPort {
            shared,
            link,
            device: device.clone(),
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }
}

/// A pipe (read end, write end) that wakes the reader thread when closed.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// What the link (driver side) and the reader thread share.
struct Shared {
    name: String,
    file: Arc<File>,
    to_kernel: AtomicU64,
    from_kernel: AtomicU64,
    write_errors: AtomicU64,
    /// Why the reader thread stopped early, if it did.
    failure: Mutex<Option<io::Error>>,
}

impl Shared {
    /// The reader thread: frames from the kernel to the device, until `stop` is closed.
    fn pump(&self, device: &Device, stop: &OwnedFd) {
        let mut frame = vec![0u8; MAX_FRAME];
        loop {
            let mut fds = [
                PollFd::new(self.file.as_fd(), PollFlags::POLLIN),
                PollFd::new(stop.as_fd(), PollFlags::POLLIN),
            ];
            match nix::poll::poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return self.fail(e.into()),
            }
            let events = |fd: &PollFd<'_>| fd.revents().unwrap_or(PollFlags::empty());
            if !events(&fds[1]).is_empty() {
                return;
            }
            let tap = events(&fds[0]);
            if !tap.contains(PollFlags::POLLIN) {
                if !tap.is_empty() {
                    return self.fail(io::Error::other(format!(
                        "TAP device {} reported poll events {tap:?}",
                        self.name
                    )));
                }
                continue;
            }
            match (&*self.file).read(&mut frame) {
                Ok(len) => {
                    self.from_kernel.fetch_add(1, Ordering::Relaxed);
                    device.receive_frame(&frame[..len]);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => return self.fail(e),
            }
        }
    }

    fn fail(&self, e: io::Error) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
    }
}

/// The device's side of the cable: each transmitted frame is one write to the TAP device.
struct TapLink(Arc<Shared>);

impl Link for TapLink {
    fn transmit(&self, frame: &[u8]) {
        // A write that fails (the interface is down, say) loses the frame, as a cable whose
        // far end is unplugged would; it is counted.
        match (&*self.0.file).write(frame) {
            Ok(n) if n == frame.len() => self.0.to_kernel.fetch_add(1, Ordering::Relaxed),
            _ => self.0.write_errors.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// Frames that crossed a [`TapPort`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapCounters {
    /// Frames the device transmitted that the kernel took.
    pub to_kernel: u64,
    /// Frames the kernel sent that reached the device's port (steered or dropped there).
    pub from_kernel: u64,
    /// Frames the device transmitted that the TAP device refused (interface down).
    pub write_errors: u64,
}

/// A device's port cabled to a TAP device (see [`Tap::attach`]). Closing it (or dropping it)
/// stops the reader thread, unplugs the device (unless another link replaced this one
/// meanwhile) and deletes the TAP interface.
pub struct TapPort {
    shared: Arc<Shared>,
    link: Arc<dyn Link>,
    device: Arc<Device>,
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TapPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapPort")
            .field("name", &self.shared.name)
            .field("counters", &self.counters())
            .finish()
    }
}

impl TapPort {
    /// The TAP interface's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Frames that crossed so far.
    pub fn counters(&self) -> TapCounters {
        let s = &self.shared;
        TapCounters {
            to_kernel: s.to_kernel.load(Ordering::Relaxed),
            from_kernel: s.from_kernel.load(Ordering::Relaxed),
            write_errors: s.write_errors.load(Ordering::Relaxed),
        }
    }

    /// Why the reader thread stopped delivering frames, if it did (the TAP device failed).
    pub fn failure(&self) -> Option<String> {
        let f = self
            .shared
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        f.as_ref()
            .map(|e| format!("TAP device {}: {e}", self.shared.name))
    }

    /// Unplugs the port; returns the final counters.
    pub fn close(mut self) -> TapCounters {
        self.shutdown();
        self.counters()
    }

    /// Unplugs the port but keeps the TAP interface (its addresses, routes and counters in
    /// the kernel stay), to be attached to another device: a server that gives each client
    /// a fresh device keeps one interface for all of them.
    pub fn release(mut self) -> Tap {
        self.shutdown();
        Tap {
            file: self.shared.file.clone(),
            name: self.shared.name.clone(),
        }
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            self.device.detach_this_link(&self.link);
            drop(stop);
            if let Some(t) = self.thread.take() {
                // The thread only returns; a panic in the model would already be reported.
                let _ = t.join();
            }
        }
    }
}

impl Drop for TapPort {
    fn drop(&mut self) {
        self.shutdown();
    }
}
