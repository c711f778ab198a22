//! The out-of-band TCP connection the RoCE examples share (rc_pingpong's and perftest's
//! exchanges both run over one): accepting one client or connecting to a server, and a stream
//! whose blocking reads keep doing the port's other work (answering ARP) while they wait.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};

/// Listens on `port` (IPv6 and IPv4 where the system allows, else IPv4) and accepts one
/// client, as ibv_rc_pingpong's server does, running `idle` while it waits.
pub fn accept_one(port: u16, idle: &mut dyn FnMut()) -> io::Result<TcpStream> {
    let listener =
        TcpListener::bind(("::", port)).or_else(|_| TcpListener::bind(("0.0.0.0", port)))?;
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                idle();
                std::thread::sleep(POLL);
            }
            Err(e) => return Err(e),
        }
    }
}

/// How often a waiting exchange runs its idle work.
const POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// A stream whose reads run `idle` while no data is there: the example answers ARP during
/// the exchange, as the peer's kernel may ask for the model's MAC then (ibv_rc_pingpong's
/// server connects its QP, and so resolves our address, before it answers).
pub struct Serviced<'a> {
    stream: TcpStream,
    idle: &'a mut dyn FnMut(),
}

impl<'a> Serviced<'a> {
    /// Wraps `stream`.
    pub fn new(stream: TcpStream, idle: &'a mut dyn FnMut()) -> io::Result<Serviced<'a>> {
        stream.set_read_timeout(Some(POLL))?;
        Ok(Serviced { stream, idle })
    }
}

impl Read for Serviced<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.stream.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    (self.idle)()
                }
                r => return r,
            }
        }
    }
}

impl Write for Serviced<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// Connects to `server`:`port`, trying each address the name resolves to.
pub fn connect_to(server: &str, port: u16) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{server} has no address"));
    for addr in (server, port).to_socket_addrs()? {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(io::Error::new(
        last.kind(),
        format!("couldn't connect to {server}:{port}: {last}"),
    ))
}
