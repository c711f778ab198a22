//! perftest's out-of-band exchange (release 25.01.0, tag `25.01.0-0.80`, program version
//! "6.24"), as `ib_write_bw`, `ib_read_bw` and `ib_atomic_bw` run it over TCP (port 18515)
//! without RDMA-CM, one RC QP, half duplex, a fixed iteration count. Every step is a swap of
//! one fixed-size message: the client writes its own and then reads the server's, the server
//! reads first and then writes. The steps, in order:
//!
//! 1. versions: 16 bytes, the version text NUL-padded; perftest refuses a peer below "5.70",
//!    and from 5.70 on every step below is the same;
//! 2. system data: the page size ("cycle buffer") and the cache line size, each a 4-byte
//!    big-endian integer, in two swaps; both sides go on with the larger of each;
//! 3. MTU: 2 bytes, the `ibv_mtu` number (1 for 256 … 5 for 4096) as one decimal digit and a
//!    NUL; both use the smaller;
//! 4. keys, three times (before the QPs connect, after, and once more after RTR): the 108-byte
//!    [`Key`] message;
//! 5. the run (the client's RDMA; the server's buffer is passive);
//! 6. keys once more (the server waits here for the client to finish);
//! 7. the client's result ([`Report`]): size, iterations, peak and average bandwidth and
//!    message rate, five 8-byte big-endian swaps (the server prints the client's row);
//! 8. keys a last time, and the connection closes.
//!
//! Options that change this sequence (`-b` bidirectional, `-a` all sizes, `-D` duration,
//! `-q` more than one QP, `-R` RDMA-CM, `--report-per-port`, `-l` post lists) are not
//! spoken here; the example refuses its own equivalents and a perftest peer started with them
//! fails the exchange.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::Ipv6Addr;

/// perftest's TCP port.
pub const DEFAULT_PORT: u16 = 18515;
/// The version this side announces: perftest 25.01's.
pub const VERSION: &str = "6.24";
/// The oldest peer version perftest (and so this side) talks to.
pub const MIN_VERSION: f64 = 5.70;
/// Bytes of the version message.
pub const VERSION_LEN: usize = 16;
/// Bytes of a key message with a GID (always used on RoCE).
pub const KEY_LEN: usize = 108;
/// perftest's page-size default and cache line default (what it assumes when it cannot ask).
pub const PAGE_SIZE: u32 = 4096;
/// See [`PAGE_SIZE`].
pub const CACHE_LINE: u32 = 64;

/// Which end of the TCP connection this side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Connected to the peer: writes first.
    Client,
    /// Accepted the peer: reads first.
    Server,
}

/// One side's QP as perftest sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The port's LID (0 on RoCE).
    pub lid: u16,
    /// RDMA reads and atomics this side accepts at once (the peer's requester uses it).
    pub out_reads: u16,
    /// QP number.
    pub qpn: u32,
    /// First PSN this side sends.
    pub psn: u32,
    /// Remote key of the buffer.
    pub rkey: u32,
    /// Address of the buffer's target half (where the peer's RDMA goes).
    pub vaddr: u64,
    /// The GID of the side's GID index.
    pub gid: [u8; 16],
    /// SRQ number (XRC/DC only; 0 here).
    pub srqn: u32,
}

impl Key {
    /// The 108-byte message: `LLLL:OOOO:QQQQQQ:PPPPPP:RRRRRRRR:VVVVVVVVVVVVVVVV:` in lower-case
    /// hex, then the 16 GID bytes each as two hex digits and a colon, then the SRQ number as 8
    /// digits and a colon, then a NUL (107 characters and the NUL).
    pub fn to_wire(self) -> [u8; KEY_LEN] {
        let mut text = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads,
            self.qpn & 0xff_ffff,
            self.psn & 0xff_ffff,
            self.rkey,
            self.vaddr
        );
        for b in self.gid {
            text.push_str(&format!("{b:02x}:"));
        }
        text.push_str(&format!("{:08x}:", self.srqn));
        let mut msg = [0u8; KEY_LEN];
        // Exactly 107 characters: every field has its full width.
        msg[..text.len()].copy_from_slice(text.as_bytes());
        msg
    }

    /// Parses a key message: 23 colon-terminated hex fields (LID, outstanding reads, QPN, PSN,
    /// rkey, address, 16 GID bytes, SRQ number), the text ending at the first NUL. perftest's
    /// reader takes each field up to its colon whatever its width; so does this one, but a
    /// field too large for its type is refused rather than cut.
    pub fn from_wire(msg: &[u8]) -> Result<Key, String> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = std::str::from_utf8(&msg[..end]).map_err(|_| "key message is not text")?;
        let fields: Vec<&str> = text.split(':').collect();
        // 23 fields, each followed by a colon: the split leaves an empty 24th.
        if fields.len() != 24 || !fields[23].is_empty() {
            return Err(format!("key message {text:?} has not 23 fields"));
        }
        let num = |i: usize, what: &str, max: u64| -> Result<u64, String> {
            let s = fields[i];
            u64::from_str_radix(s, 16)
                .ok()
                .filter(|v| *v <= max && !s.is_empty())
                .ok_or(format!("bad {what} {s:?} in key message {text:?}"))
        };
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = num(6 + i, "GID byte", 0xff)? as u8;
        }
        Ok(Key {
            lid: num(0, "LID", 0xffff)? as u16,
            out_reads: num(1, "outstanding reads", 0xffff)? as u16,
            qpn: num(2, "QPN", 0xff_ffff)? as u32,
            psn: num(3, "PSN", 0xff_ffff)? as u32,
            rkey: num(4, "rkey", 0xffff_ffff)? as u32,
            vaddr: num(5, "address", u64::MAX)?,
            gid,
            srqn: num(22, "SRQ number", 0xffff_ffff)? as u32,
        })
    }
}

/// The address line perftest prints for a QP (hex as C's `%#x` spells it: no `0x` for 0).
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let alt = |v: u64, w: usize| {
            if v == 0 {
                format!("{:0w$}", 0, w = w)
            } else {
                format!("{v:#0w$x}", w = w)
            }
        };
        write!(
            f,
            "LID {} QPN {} PSN {} OUT {} RKey {} VAddr {} GID {}",
            alt(self.lid.into(), 4),
            alt(self.qpn.into(), 6),
            alt(self.psn.into(), 6),
            alt(self.out_reads.into(), 4),
            alt(self.rkey.into(), 8),
            alt(self.vaddr, 16),
            Ipv6Addr::from(self.gid)
        )
    }
}

/// The client's result, as perftest swaps it at the end (its `bw_report_data`'s first five
/// members; bandwidth in the client's unit, MiB/s unless it ran with `--report_gbits`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Bytes per operation.
    pub size: u64,
    /// Operations.
    pub iters: u64,
    /// Peak bandwidth.
    pub bw_peak: f64,
    /// Average bandwidth.
    pub bw_avg: f64,
    /// Million operations per second.
    pub msg_rate: f64,
}

impl Report {
    /// perftest's result row: size, iterations, peak, average, rate, in its column widths.
    pub fn row(&self) -> String {
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t     {:<7.6}",
            self.size, self.iters, self.bw_peak, self.bw_avg, self.msg_rate
        )
    }
}

/// perftest's header of the result rows (MiB/s).
pub const RESULT_HEADER: &str =
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";

/// The exchange over one stream.
pub struct Oob<S> {
    stream: S,
    role: Role,
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl<S: Read + Write> Oob<S> {
    /// The exchange over `stream`, from `role`'s end.
    pub fn new(stream: S, role: Role) -> Self {
        Oob { stream, role }
    }

    /// One swap: ours out, theirs (the same length) in, in the role's order.
    pub fn swap(&mut self, mine: &[u8]) -> io::Result<Vec<u8>> {
        let mut theirs = vec![0u8; mine.len()];
        match self.role {
            Role::Client => {
                self.stream.write_all(mine)?;
                self.stream.flush()?;
                self.stream.read_exact(&mut theirs)?;
            }
            Role::Server => {
                self.stream.read_exact(&mut theirs)?;
                self.stream.write_all(mine)?;
                self.stream.flush()?;
            }
        }
        Ok(theirs)
    }

    /// Step 1: announces [`VERSION`] and returns the peer's, refused below [`MIN_VERSION`].
    pub fn versions(&mut self) -> io::Result<String> {
        let mut mine = [0u8; VERSION_LEN];
        mine[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
        let theirs = self.swap(&mine)?;
        let end = theirs.iter().position(|&b| b == 0).unwrap_or(VERSION_LEN);
        let text = String::from_utf8_lossy(&theirs[..end]).into_owned();
        match leading_number(&text) {
            Some(v) if v >= MIN_VERSION => Ok(text),
            _ => Err(bad(format!(
                "peer version {text:?}: perftest's exchange needs {MIN_VERSION:.2} or later"
            ))),
        }
    }

    /// Step 2: swaps page and cache line sizes, returning the larger of each.
    pub fn sys_data(&mut self, cycle_buffer: u32, cache_line: u32) -> io::Result<(u32, u32)> {
        let mut out = [0u32; 2];
        for (o, mine) in out.iter_mut().zip([cycle_buffer, cache_line]) {
            let theirs = self.swap(&mine.to_be_bytes())?;
            let v = u32::from_be_bytes([theirs[0], theirs[1], theirs[2], theirs[3]]);
            if v > 1 << 24 {
                return Err(bad(format!(
                    "peer's page or cache line size {v} is not usable"
                )));
            }
            *o = mine.max(v);
        }
        Ok((out[0], out[1]))
    }

    /// Step 3: swaps the `ibv_mtu` numbers (1..=5), returning the smaller; an unknown number
    /// from the peer leaves ours, as perftest does.
    pub fn mtu(&mut self, mine: u8) -> io::Result<u8> {
        let theirs = self.swap(&[b'0' + mine, 0])?;
        let t = theirs[0].wrapping_sub(b'0');
        Ok(if (1..=5).contains(&t) && theirs[1] == 0 {
            t.min(mine)
        } else {
            mine
        })
    }

    /// Steps 4, 6 and 8: swaps key messages.
    pub fn keys(&mut self, mine: &Key) -> io::Result<Key> {
        let theirs = self.swap(&mine.to_wire())?;
        Key::from_wire(&theirs).map_err(bad)
    }

    /// Step 7: swaps results; each field is its own 8-byte big-endian swap (the floating
    /// point ones as the bytes of the IEEE double).
    pub fn reports(&mut self, mine: &Report) -> io::Result<Report> {
        let mut theirs = [0u64; 5];
        let fields = [
            mine.size,
            mine.iters,
            mine.bw_peak.to_bits(),
            mine.bw_avg.to_bits(),
            mine.msg_rate.to_bits(),
        ];
        for (t, f) in theirs.iter_mut().zip(fields) {
            let b = self.swap(&f.to_be_bytes())?;
            *t = u64::from_be_bytes(b.try_into().map_err(|_| bad("short report".into()))?);
        }
        Ok(Report {
            size: theirs[0],
            iters: theirs[1],
            bw_peak: f64::from_bits(theirs[2]),
            bw_avg: f64::from_bits(theirs[3]),
            msg_rate: f64::from_bits(theirs[4]),
        })
    }
}

/// The number a version text starts with, as C's `atof` reads it ("6.24" → 6.24).
fn leading_number(text: &str) -> Option<f64> {
    let end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (c == '.' && !text[..i].contains('.'))))
        .map_or(text.len(), |(i, _)| i);
    text[..end].parse().ok()
}

/// The `ibv_mtu` number of a path MTU in bytes (256 → 1 … 4096 → 5).
pub fn mtu_number(bytes: u32) -> Option<u8> {
    [256, 512, 1024, 2048, 4096]
        .iter()
        .position(|&m| m == bytes)
        .map(|i| i as u8 + 1)
}
