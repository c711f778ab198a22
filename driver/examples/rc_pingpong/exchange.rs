//! The out-of-band exchange of rdma-core's `ibv_rc_pingpong`, byte for byte, so either end can
//! be that program: one TCP connection (port 18515 by default) over which each side sends its
//! LID, QP number, first PSN and GID as one fixed-size text message.
//!
//! The message is the text `LLLL:QQQQQQ:PPPPPP:GGGG…` (LID as 4 hex digits, QPN and PSN as 6,
//! the GID as 32: its 16 bytes in order, lower-case) followed by a NUL, 52 bytes in all, and
//! both sides always send and expect exactly that many. The client connects, sends its
//! message, reads the server's, then sends the five bytes `done\0`; the server reads the
//! client's message, connects its QP to the client first, then sends its own and waits for
//! the client's `done`. Reading numbers, `ibv_rc_pingpong` parses hex fields up to the
//! colons, so a peer's longer numbers would still parse; this side accepts the same.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::Ipv6Addr;

/// Bytes of one address message: 4 + 1 + 6 + 1 + 6 + 1 + 32 characters and the NUL.
pub const MESSAGE_LEN: usize = 52;
/// The client's final word, NUL included.
pub const DONE: &[u8; 5] = b"done\0";
/// ibv_rc_pingpong's default TCP port.
pub const DEFAULT_PORT: u16 = 18515;

/// One side's address, as exchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dest {
    /// The port's LID; 0 on RoCE.
    pub lid: u16,
    /// The QP number (24 bits).
    pub qpn: u32,
    /// The first PSN the side sends (24 bits).
    pub psn: u32,
    /// The GID of the side's `-g` index; all zero when none was given.
    pub gid: [u8; 16],
}

impl Dest {
    /// The 52-byte message.
    pub fn to_wire(self) -> [u8; MESSAGE_LEN] {
        let gid: String = self.gid.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "{:04x}:{:06x}:{:06x}:{gid}",
            self.lid,
            self.qpn & 0xff_ffff,
            self.psn & 0xff_ffff
        );
        let mut msg = [0u8; MESSAGE_LEN];
        // Exactly 51 characters: the fields are masked to their widths.
        msg[..text.len()].copy_from_slice(text.as_bytes());
        msg
    }

    /// Parses a message: three hex numbers and a 32-digit GID separated by colons, the text
    /// ending at the first NUL.
    pub fn from_wire(msg: &[u8]) -> Result<Dest, String> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = std::str::from_utf8(&msg[..end]).map_err(|_| "not text".to_string())?;
        let mut parts = text.splitn(4, ':');
        let mut number = |what: &str| -> Result<u32, String> {
            let s = parts.next().ok_or(format!("no {what} in {text:?}"))?;
            u32::from_str_radix(s, 16).map_err(|_| format!("bad {what} {s:?} in {text:?}"))
        };
        let lid = number("LID")?;
        let qpn = number("QPN")?;
        let psn = number("PSN")?;
        let g = parts.next().ok_or(format!("no GID in {text:?}"))?;
        if g.len() != 32 || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("bad GID {g:?} in {text:?}"));
        }
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            // 32 hex digits checked above.
            *b = u8::from_str_radix(&g[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(Dest {
            lid: u16::try_from(lid).map_err(|_| format!("LID {lid:#x} too large"))?,
            qpn: qpn & 0xff_ffff,
            psn: psn & 0xff_ffff,
            gid,
        })
    }
}

/// The line ibv_rc_pingpong prints for an address, after its label.
impl fmt::Display for Dest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
            self.lid,
            self.qpn,
            self.psn,
            Ipv6Addr::from(self.gid)
        )
    }
}

fn read_message(s: &mut impl Read) -> io::Result<Dest> {
    let mut msg = [0u8; MESSAGE_LEN];
    s.read_exact(&mut msg)?;
    Dest::from_wire(&msg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The client's half over a connected stream: send ours, read theirs, say done.
pub fn client_exchange(s: &mut (impl Read + Write), mine: &Dest) -> io::Result<Dest> {
    s.write_all(&mine.to_wire())?;
    let theirs = read_message(s)?;
    s.write_all(DONE)?;
    s.flush()?;
    Ok(theirs)
}

/// The server's half over an accepted stream: read theirs, let `connect` bring our QP up to
/// them (before they may send), send ours, and wait for their `done`.
pub fn server_exchange<E>(
    s: &mut (impl Read + Write),
    mine: &Dest,
    connect: impl FnOnce(&Dest) -> Result<(), E>,
) -> Result<Dest, ExchangeError<E>> {
    let theirs = read_message(s)?;
    connect(&theirs).map_err(ExchangeError::Connect)?;
    s.write_all(&mine.to_wire())?;
    let mut done = [0u8; DONE.len()];
    s.read_exact(&mut done)?;
    if &done != DONE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("expected \"done\", got {done:?}"),
        )
        .into());
    }
    Ok(theirs)
}

/// A failed server exchange: the socket, or the QP connection in between.
#[derive(Debug)]
pub enum ExchangeError<E> {
    /// Reading or writing the socket.
    Io(io::Error),
    /// Connecting the QP to the client.
    Connect(E),
}

impl<E> From<io::Error> for ExchangeError<E> {
    fn from(e: io::Error) -> Self {
        ExchangeError::Io(e)
    }
}

impl<E: fmt::Display> fmt::Display for ExchangeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExchangeError::Io(e) => write!(f, "address exchange: {e}"),
            ExchangeError::Connect(e) => write!(f, "connecting to the client's QP: {e}"),
        }
    }
}
