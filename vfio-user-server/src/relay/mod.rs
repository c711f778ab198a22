//! The validating relay between the client's socket and the protocol crate.
//!
//! `vfio_user::Server::run` implements the protocol, but trusts the client's framing (see
//! [`validate`]): a short VERSION panics it, a large REGION_READ count allocates gigabytes,
//! and a message whose size disagrees with its command leaves it reading the next message
//! from the middle of this one. The relay keeps the crate as the protocol implementation and
//! puts a framing and validation step in front of it:
//!
//! ```text
//!  client (QEMU)            relay                                  crate
//!  --socket  ──accept──▶  client→crate: read whole message,   ──▶  private socket
//!                          validate::check, forward with fds        (0700 directory)
//!            ◀── lock ──   crate→client: copy whole replies   ◀──  Server::run
//!                          (error replies for refused messages
//!                           written under the same lock)
//! ```
//!
//! Per session the relay accepts the client on the public socket, connects to the crate's
//! private socket (the crate's `run` accepts that connection), and runs two threads:
//!
//! - client→crate reads one whole message at a time ([`frame::read_frame`]), checks it
//!   ([`validate::check`]) and forwards it whole with its descriptors, or answers it with an
//!   error reply itself (EINVAL, ENOSYS for commands the crate does not implement; none if
//!   the message asked for no reply) and drops it: the crate never sees it, the stream stays in step. A message whose size cannot be
//!   legitimate, or a connection closed mid-message, ends the session.
//! - crate→client copies the crate's replies whole. Both threads write the client socket
//!   under one lock, each a whole message at a time, so a relay error reply never lands
//!   inside one of the crate's replies. Replies may then leave in a different order than the
//!   commands came; vfio-user replies carry the command's message id and QEMU's proxy matches
//!   each reply against its pending requests by id, so that is within the protocol.
//!
//! Either side closing ends both directions: the client leaving shuts the crate's input
//! (its `run` sees EOF and returns), the crate leaving shuts the client's socket, and
//! [`Pipes::finish`] shuts both sockets and joins both threads.

pub mod frame;
pub mod validate;

use crate::stats::Stats;
use frame::{read_frame, write_frame, ReadError};
use log::{debug, warn};
use std::io;
use std::net::Shutdown;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use validate::{Limits, Verdict, MAX_MESSAGE};
use vfio_user::{IrqInfo, Server, ServerRegion};

/// A directory only this user can enter, removed (with what is in it) when dropped.
#[derive(Debug)]
struct PrivateDir(PathBuf);

impl PrivateDir {
    /// Creates a fresh one under the temporary directory. `mkdir` fails on an existing name,
    /// so a directory someone else prepared is never used.
    fn create() -> io::Result<PrivateDir> {
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = None;
        for attempt in 0..16u32 {
            let p = base.join(format!(
                "mlx5-vfio-user.{}.{nanos:x}.{attempt}",
                std::process::id()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(PrivateDir(p)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no private directory")))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The public socket, the crate's server on its private socket, and the rules.
pub struct Relay {
    listener: UnixListener,
    // Declared before `dir`: dropped first, the crate removes its socket, then the directory.
    server: Server,
    inner: PathBuf,
    dir: PrivateDir,
    limits: Arc<Limits>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("inner", &self.inner)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Why the relay could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The public socket path is taken.
    #[error("{0} exists")]
    Exists(PathBuf),
    /// A socket or directory operation failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The crate refused its private socket.
    #[error("the protocol server: {0}")]
    Server(#[from] vfio_user::Error),
}

impl Relay {
    /// Binds the public socket at `public` (which must not exist) and the crate's server, with
    /// these interrupts and regions, on a socket in a fresh private directory.
    pub fn bind(
        public: &Path,
        resettable: bool,
        irqs: Vec<IrqInfo>,
        regions: Vec<ServerRegion>,
    ) -> Result<Relay, BindError> {
        if public.exists() {
            return Err(BindError::Exists(public.to_path_buf()));
        }
        let limits = Arc::new(Limits::new(
            regions.iter().map(|r| r.region_info.size).collect(),
        ));
        let dir = PrivateDir::create()?;
        let inner = dir.0.join("crate.sock");
        let server = Server::new(&inner, resettable, irqs, regions)?;
        let listener = UnixListener::bind(public)?;
        Ok(Relay {
            listener,
            server,
            inner,
            dir,
            limits,
        })
    }

    /// The crate's server (its `run` serves the connection [`Relay::start`] makes).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The private directory (to remove on an exit that skips destructors).
    pub fn private_dir(&self) -> &Path {
        &self.dir.0
    }

    /// The rules the relay applies.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Waits for the next client on the public socket.
    pub fn accept(&self) -> io::Result<UnixStream> {
        self.listener.accept().map(|(s, _)| s)
    }

    /// Connects to the crate's socket and starts relaying between it and `client`. The
    /// caller then runs the crate's `run`, which accepts this connection.
    pub fn start(&self, client: UnixStream, stats: Arc<Stats>, session: u64) -> io::Result<Pipes> {
        let inner = UnixStream::connect(&self.inner)?;
        let out = Arc::new(Mutex::new(client.try_clone()?));
        let up = Upstream {
            client: client.try_clone()?,
            inner: inner.try_clone()?,
            out: out.clone(),
            limits: self.limits.clone(),
            stats,
            session,
        };
        let down_inner = inner.try_clone()?;
        let down_client = client.try_clone()?;
        let t1 = std::thread::Builder::new()
            .name(format!("relay-up-{session}"))
            .spawn(move || up.run())?;
        let t2 = std::thread::Builder::new()
            .name(format!("relay-down-{session}"))
            .spawn(move || downstream(down_inner, down_client, out, session));
        let t2 = match t2 {
            Ok(t) => t,
            Err(e) => {
                let _ = client.shutdown(Shutdown::Both);
                let _ = inner.shutdown(Shutdown::Both);
                let _ = t1.join();
                return Err(e);
            }
        };
        Ok(Pipes {
            client,
            inner,
            threads: vec![t1, t2],
        })
    }
}

/// One session's relay threads and sockets.
#[derive(Debug)]
pub struct Pipes {
    client: UnixStream,
    inner: UnixStream,
    threads: Vec<JoinHandle<()>>,
}

impl Pipes {
    /// Ends the session's relaying: shuts both sockets (waking either thread from a blocked
    /// read or write) and joins the threads.
    pub fn finish(self) {
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.inner.shutdown(Shutdown::Both);
        for t in self.threads {
            if t.join().is_err() {
                warn!("a relay thread panicked");
            }
        }
    }
}

/// The client→crate direction.
struct Upstream {
    client: UnixStream,
    inner: UnixStream,
    out: Arc<Mutex<UnixStream>>,
    limits: Arc<Limits>,
    stats: Arc<Stats>,
    session: u64,
}

/// A command's name for the log.
fn name(command: u16) -> &'static str {
    use validate::cmd::*;
    match command {
        VERSION => "VERSION",
        DMA_MAP => "DMA_MAP",
        DMA_UNMAP => "DMA_UNMAP",
        DEVICE_GET_INFO => "DEVICE_GET_INFO",
        GET_REGION_INFO => "DEVICE_GET_REGION_INFO",
        GET_REGION_IO_FDS => "DEVICE_GET_REGION_IO_FDS",
        GET_IRQ_INFO => "DEVICE_GET_IRQ_INFO",
        SET_IRQS => "DEVICE_SET_IRQS",
        REGION_READ => "REGION_READ",
        REGION_WRITE => "REGION_WRITE",
        DMA_READ => "DMA_READ",
        DMA_WRITE => "DMA_WRITE",
        DEVICE_RESET => "DEVICE_RESET",
        USER_DIRTY_PAGES => "DIRTY_PAGES",
        _ => "unknown",
    }
}

impl Upstream {
    fn run(self) {
        let n = self.session;
        loop {
            let frame = match read_frame(&self.client, MAX_MESSAGE) {
                Ok(f) => f,
                Err(ReadError::Closed) => break,
                Err(e) => {
                    self.stats.relay_closed.fetch_add(1, Ordering::Relaxed);
                    warn!("session {n}: closing the connection: {e}");
                    break;
                }
            };
            let h = frame.header;
            match validate::check(&h, frame.body(), frame.nfds(), &self.limits) {
                Verdict::Forward => {
                    if let Err(e) = write_frame(&self.inner, &frame.bytes, &frame.fds) {
                        debug!("session {n}: the protocol server's socket: {e}");
                        break;
                    }
                }
                Verdict::Reject(reason) => {
                    self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                    let nfds = frame.fds.len();
                    warn!(
                        "session {n}: refused {} (command {}, id {}, {} bytes, {nfds} fds): {reason}",
                        name(h.command),
                        h.command,
                        h.message_id,
                        h.message_size,
                    );
                    // A sender that asked for no reply (QEMU's posted writes) gets none: an
                    // unexpected reply is a protocol error on its side.
                    if h.flags & validate::FLAG_NO_REPLY != 0 {
                        continue;
                    }
                    let reply = h.error_reply(reason.errno()).to_bytes();
                    let out = self.out.lock().unwrap_or_else(|e| e.into_inner());
                    if write_frame(&out, &reply, &[]).is_err() {
                        break;
                    }
                }
            }
            // The frame's descriptors close here: forwarded ones the crate holds its own
            // copies of, refused ones are gone.
        }
        // The crate sees EOF and its `run` returns once it has answered what it got.
        let _ = self.inner.shutdown(Shutdown::Write);
    }
}

/// The crate→client direction: whole replies, under the shared lock.
fn downstream(inner: UnixStream, client: UnixStream, out: Arc<Mutex<UnixStream>>, n: u64) {
    loop {
        let frame = match read_frame(&inner, MAX_MESSAGE) {
            Ok(f) => f,
            Err(ReadError::Closed) => break,
            Err(e) => {
                warn!("session {n}: the protocol server's reply: {e}");
                break;
            }
        };
        let w = out.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = write_frame(&w, &frame.bytes, &frame.fds) {
            debug!("session {n}: the client's socket: {e}");
            break;
        }
    }
    // Nobody reads the crate's replies any more: make its writes fail rather than block, and
    // end the client's connection (the upstream thread wakes with EOF).
    let _ = inner.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
}
