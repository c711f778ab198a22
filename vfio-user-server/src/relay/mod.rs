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
//! Posted messages (NoReply: QEMU's posted writes) must get no reply at all, even when they
//! are refused: QEMU takes a reply it is not waiting for as a protocol error. The crate
//! answers a refusal whatever the flag says, so the relay clears NoReply on what it forwards
//! (the crate then answers every forwarded message, exactly once, in order) and keeps the
//! list of what it forwarded (`InFlight`); the crate→client thread pairs each reply with
//! the oldest entry and drops the replies to posted messages, refusals and acceptances alike.
//! Accepted posted messages still take effect; only their replies go.
//!
//! The crate's error reply for a refusal by the backend carries errno 0. The backend hands
//! each refusal's errno to [`Refusals`], in order, and the crate→client thread puts it back
//! into the reply (ENOSPC for a DMA_MAP over the limits, EINVAL for a descriptor that is not
//! an eventfd, ...).
//!
//! Either side closing ends both directions: the client leaving shuts the crate's input
//! (its `run` sees EOF and returns), the crate leaving shuts the client's socket, and
//! [`Pipes::finish`] shuts both sockets and joins both threads.

pub mod frame;
pub mod validate;

use crate::stats::Stats;
use frame::{read_frame, write_frame, ReadError};
use log::{debug, warn};
use std::collections::VecDeque;
use std::io;
use std::net::Shutdown;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use validate::{Limits, Verdict, FLAG_ERROR, FLAG_NO_REPLY, HEADER, MAX_MESSAGE};
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

/// The errnos of the backend's refusals, oldest first, with the command each refused.
///
/// The crate turns every error the backend returns into one error reply with errno 0, and
/// refuses nothing else with errno 0 among the commands that reach the backend (its other
/// checks carry EINVAL, or are the relay's own rules). So, in the order the crate answers,
/// each such reply takes the oldest errno of its command.
#[derive(Debug, Default)]
pub struct Refusals(Mutex<VecDeque<(u16, i32)>>);

impl Refusals {
    /// The backend refused a `command` with `errno`.
    pub fn push(&self, command: u16, errno: i32) {
        self.lock().push_back((command, errno));
    }

    /// The errno for the crate's next errno-0 error reply to `command`, if the backend gave
    /// one (the queue is left alone if its oldest entry is for another command).
    fn take(&self, command: u16) -> Option<i32> {
        let mut q = self.lock();
        match q.front() {
            Some(&(c, errno)) if c == command => {
                q.pop_front();
                Some(errno)
            }
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u16, i32)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One message forwarded to the crate, still owed its reply.
#[derive(Debug, Clone, Copy)]
struct Sent {
    id: u16,
    command: u16,
    /// The client asked for no reply: the crate's is dropped.
    posted: bool,
}

/// What the crate was sent and has not answered yet, oldest first. The crate reads one
/// message at a time and answers it before the next, so its replies come in this order.
/// It grows only as far as the sockets between the relay and the crate buffer: the
/// upstream thread blocks when the crate stops reading.
#[derive(Debug, Default)]
struct InFlight(Mutex<VecDeque<Sent>>);

impl InFlight {
    fn push(&self, s: Sent) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(s);
    }

    /// Takes the entry this reply answers: the oldest one, as the crate answers in order;
    /// should the reply name another message, the oldest entry with its id and command
    /// (entries older than that one are kept: a reply out of order must not make the relay
    /// drop, or pass on, another message's answer). None if nothing sent matches.
    fn take(&self, id: u16, command: u16) -> Option<Sent> {
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = q.iter().position(|s| s.id == id && s.command == command)?;
        q.remove(at)
    }
}

/// Commands whose refusals may come from the backend (the others never reach it).
fn reaches_backend(command: u16) -> bool {
    use validate::cmd::*;
    matches!(
        command,
        DMA_MAP | DMA_UNMAP | SET_IRQS | REGION_READ | REGION_WRITE | DEVICE_RESET
    )
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
    /// caller then runs the crate's `run`, which accepts this connection, with a backend
    /// that hands its refusals' errnos to `refusals`.
    pub fn start(
        &self,
        client: UnixStream,
        stats: Arc<Stats>,
        session: u64,
        refusals: Arc<Refusals>,
    ) -> io::Result<Pipes> {
        let inner = UnixStream::connect(&self.inner)?;
        let out = Arc::new(Mutex::new(client.try_clone()?));
        let in_flight = Arc::new(InFlight::default());
        let up = Upstream {
            client: client.try_clone()?,
            inner: inner.try_clone()?,
            out: out.clone(),
            limits: self.limits.clone(),
            in_flight: in_flight.clone(),
            stats,
            session,
        };
        let down = Downstream {
            inner: inner.try_clone()?,
            client: client.try_clone()?,
            out,
            in_flight,
            refusals,
            session,
        };
        let t1 = std::thread::Builder::new()
            .name(format!("relay-up-{session}"))
            .spawn(move || up.run())?;
        let t2 = std::thread::Builder::new()
            .name(format!("relay-down-{session}"))
            .spawn(move || down.run());
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
    in_flight: Arc<InFlight>,
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
            let mut frame = match read_frame(&self.client, MAX_MESSAGE) {
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
                    let posted = h.flags & FLAG_NO_REPLY != 0;
                    if posted {
                        // The crate answers it then, refusal or not; the downstream thread
                        // drops that answer (see the module's notes).
                        frame.bytes[8..12]
                            .copy_from_slice(&(h.flags & !FLAG_NO_REPLY).to_le_bytes());
                    }
                    // Listed before it is sent, so that its reply always finds it.
                    self.in_flight.push(Sent {
                        id: h.message_id,
                        command: h.command,
                        posted,
                    });
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
                    if h.flags & FLAG_NO_REPLY != 0 {
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

/// The crate→client direction: whole replies, under the shared lock, each paired with the
/// message it answers: errno put back into backend refusals, replies to posted messages
/// dropped.
struct Downstream {
    inner: UnixStream,
    client: UnixStream,
    out: Arc<Mutex<UnixStream>>,
    in_flight: Arc<InFlight>,
    refusals: Arc<Refusals>,
    session: u64,
}

impl Downstream {
    fn run(self) {
        let n = self.session;
        loop {
            let mut frame = match read_frame(&self.inner, MAX_MESSAGE) {
                Ok(f) => f,
                Err(ReadError::Closed) => break,
                Err(e) => {
                    warn!("session {n}: the protocol server's reply: {e}");
                    break;
                }
            };
            let mut h = frame.header;
            if h.flags & FLAG_ERROR != 0 && h.error_no == 0 && reaches_backend(h.command) {
                if let Some(errno) = self.refusals.take(h.command) {
                    h.error_no = errno as u32;
                    frame.bytes[..HEADER].copy_from_slice(&h.to_bytes());
                }
            }
            match self.in_flight.take(h.message_id, h.command) {
                Some(sent) => {
                    if sent.posted {
                        if h.flags & FLAG_ERROR != 0 {
                            debug!(
                                "session {n}: posted {} (id {}) refused (errno {}); no reply",
                                name(h.command),
                                h.message_id,
                                h.error_no
                            );
                        }
                        continue;
                    }
                }
                None => warn!(
                    "session {n}: a reply (id {}, command {}) to nothing sent; passed on",
                    h.message_id, h.command
                ),
            }
            let w = self.out.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = write_frame(&w, &frame.bytes, &frame.fds) {
                debug!("session {n}: the client's socket: {e}");
                break;
            }
        }
        // Nobody reads the crate's replies any more: make its writes fail rather than block,
        // and end the client's connection (the upstream thread wakes with EOF).
        let _ = self.inner.shutdown(Shutdown::Both);
        let _ = self.client.shutdown(Shutdown::Both);
    }
}
