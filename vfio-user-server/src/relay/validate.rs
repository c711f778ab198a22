//! The per-command rules: which client messages the protocol crate may see.
//!
//! `vfio_user` 0.1.7's `Server::run` trusts the client's framing. It reads each command's
//! fixed part with `read_exact` regardless of the header's `message_size`, sizes buffers from
//! client values (`vec![0; count]` for REGION_READ/WRITE, `message_size - 20` for VERSION),
//! unwraps the VERSION capabilities as a NUL-terminated C string, and on any command it
//! rejects early (unknown commands, NoReply where it wants to answer, a REGION_WRITE to a
//! region it does not have) it answers without reading the rest of the message, so the
//! stream falls out of step. [`check`] admits only messages the crate handles in step and
//! within bounds; everything else the relay answers itself.
//!
//! This module is pure (bytes in, verdict out) so that it is tested without sockets.

use std::fmt;

/// The vfio-user header's length.
pub const HEADER: usize = 16;

/// The largest REGION_READ/WRITE payload: what the crate's VERSION reply advertises as
/// `max_data_xfer_size` (its default, 1 MiB). A client that honours the reply never goes past.
pub const MAX_XFER: u32 = 1 << 20;

/// The longest VERSION capabilities string we pass on, NUL included. QEMU's is well under
/// 200 bytes; the crate parses it with serde, so it must stay small.
pub const MAX_VERSION_JSON: usize = 4096;

/// The most descriptors one message may carry: the crate receives at most 16 with a header.
pub const MAX_FDS: usize = 16;

/// The largest message the relay reads at all: header, REGION_WRITE's fixed part, the largest
/// payload. Anything longer cannot be legitimate, and reading it would let the client choose
/// how much memory the relay holds; the relay drops the connection instead.
pub const MAX_MESSAGE: u32 = (HEADER + 16) as u32 + MAX_XFER;

/// Message type: a command (the low nibble of `flags`).
pub const TYPE_COMMAND: u32 = 0;
/// Message type: a reply.
pub const TYPE_REPLY: u32 = 1;
/// The type's bits in `flags`.
pub const TYPE_MASK: u32 = 0xf;
/// `flags`: the sender wants no reply.
pub const FLAG_NO_REPLY: u32 = 1 << 4;
/// `flags`: the reply reports an error (`error_no`).
pub const FLAG_ERROR: u32 = 1 << 5;
/// SET_IRQS `flags`: VFIO_IRQ_SET_DATA_BOOL.
pub const IRQ_DATA_BOOL: u32 = 1 << 1;

/// Command numbers (vfio-user protocol).
pub mod cmd {
    /// VERSION: version and capabilities (JSON), both ways.
    pub const VERSION: u16 = 1;
    /// DMA_MAP: guest memory, usually with its fd.
    pub const DMA_MAP: u16 = 2;
    /// DMA_UNMAP.
    pub const DMA_UNMAP: u16 = 3;
    /// DEVICE_GET_INFO.
    pub const DEVICE_GET_INFO: u16 = 4;
    /// DEVICE_GET_REGION_INFO.
    pub const GET_REGION_INFO: u16 = 5;
    /// DEVICE_GET_REGION_IO_FDS (the crate does not implement it).
    pub const GET_REGION_IO_FDS: u16 = 6;
    /// DEVICE_GET_IRQ_INFO.
    pub const GET_IRQ_INFO: u16 = 7;
    /// DEVICE_SET_IRQS: eventfds follow as descriptors.
    pub const SET_IRQS: u16 = 8;
    /// REGION_READ.
    pub const REGION_READ: u16 = 9;
    /// REGION_WRITE: the data follows the fixed part.
    pub const REGION_WRITE: u16 = 10;
    /// DMA_READ (server to client only; the crate does not implement it).
    pub const DMA_READ: u16 = 11;
    /// DMA_WRITE (likewise).
    pub const DMA_WRITE: u16 = 12;
    /// DEVICE_RESET: header only.
    pub const DEVICE_RESET: u16 = 13;
    /// DIRTY_PAGES (the crate does not implement it).
    pub const USER_DIRTY_PAGES: u16 = 14;
}

/// A vfio-user message header, decoded (little-endian on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Matches a reply to its command.
    pub message_id: u16,
    /// The command number.
    pub command: u16,
    /// The whole message's length, header included.
    pub message_size: u32,
    /// Type (low nibble), NoReply, Error.
    pub flags: u32,
    /// An errno, in error replies.
    pub error_no: u32,
}

impl Header {
    /// Decodes the 16 header bytes.
    pub fn parse(b: &[u8; HEADER]) -> Header {
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Header {
            message_id: u16_at(0),
            command: u16_at(2),
            message_size: u32_at(4),
            flags: u32_at(8),
            error_no: u32_at(12),
        }
    }

    /// Encodes the header.
    pub fn to_bytes(self) -> [u8; HEADER] {
        let mut b = [0u8; HEADER];
        b[0..2].copy_from_slice(&self.message_id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&self.message_size.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.error_no.to_le_bytes());
        b
    }

    /// The error reply the relay sends for this command.
    pub fn error_reply(self, errno: i32) -> Header {
        Header {
            message_id: self.message_id,
            command: self.command,
            message_size: HEADER as u32,
            flags: TYPE_REPLY | FLAG_ERROR,
            error_no: errno as u32,
        }
    }
}

/// What the relay knows of the device: its regions' sizes, the bounds above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Each region's size, by index (a size of 0: the region is absent).
    pub regions: Vec<u64>,
    /// The largest REGION_READ/WRITE payload.
    pub max_xfer: u32,
    /// The most descriptors in one message.
    pub max_fds: usize,
    /// The longest VERSION capabilities string, NUL included.
    pub max_version_json: usize,
}

impl Limits {
    /// The bounds above for regions of these sizes.
    pub fn new(regions: Vec<u64>) -> Limits {
        Limits {
            regions,
            max_xfer: MAX_XFER,
            max_fds: MAX_FDS,
            max_version_json: MAX_VERSION_JSON,
        }
    }
}

/// Why a message was refused (logged, and the reason for its errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A reply (or an unknown type) where a command is expected.
    NotACommand,
    /// Flag bits a command does not carry (Error, or unknown ones).
    BadFlags,
    /// NoReply on a command the crate must answer (it would answer with an error, unread).
    NoReplyRefused,
    /// The body is not the command's fixed size.
    BadSize,
    /// VERSION capabilities: too long, not NUL-terminated, a NUL inside, not UTF-8.
    BadVersionString,
    /// A region index the device does not have.
    NoSuchRegion,
    /// REGION_READ/WRITE payload larger than the advertised maximum.
    TooLarge,
    /// REGION_READ/WRITE past the region's end.
    OutOfRange,
    /// More descriptors than the command takes.
    BadFds,
    /// A command the crate does not implement (or no such command).
    Unsupported,
    /// SET_IRQS with DATA_BOOL: the crate refuses it before the backend, with errno 0, which
    /// would leave the relay unable to tell it from a backend refusal (see [`super::Refusals`]).
    IrqDataBool,
}

impl Reason {
    /// The errno of the error reply.
    pub fn errno(self) -> i32 {
        match self {
            Reason::Unsupported => libc::ENOSYS,
            _ => libc::EINVAL,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::NotACommand => "not a command (reply or unknown type)",
            Reason::BadFlags => "flags a command does not carry",
            Reason::NoReplyRefused => "NoReply on a command that must be answered",
            Reason::BadSize => "message size does not fit the command",
            Reason::BadVersionString => "capabilities not a bounded NUL-terminated UTF-8 string",
            Reason::NoSuchRegion => "no such region",
            Reason::TooLarge => "transfer larger than the advertised maximum",
            Reason::OutOfRange => "access past the region's end",
            Reason::BadFds => "descriptors the command does not take",
            Reason::Unsupported => "command not supported",
            Reason::IrqDataBool => "SET_IRQS with DATA_BOOL (not supported)",
        })
    }
}

/// The relay's decision on one whole message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Pass it to the crate as it is.
    Forward,
    /// Answer it with an error; the crate never sees it.
    Reject(Reason),
}

/// A command's fixed body length (after the header), as the crate's `#[repr(C)]` structs
/// have it, or `None` if the crate does not implement the command.
pub fn fixed_body(command: u16) -> Option<usize> {
    Some(match command {
        cmd::VERSION => 4,          // major, minor (u16 each); the JSON follows
        cmd::DMA_MAP => 32,         // argsz, flags, offset, address, size
        cmd::DMA_UNMAP => 24,       // argsz, flags, address, size
        cmd::DEVICE_GET_INFO => 16, // argsz, flags, num_regions, num_irqs
        cmd::GET_REGION_INFO => 32, // vfio_region_info
        cmd::GET_IRQ_INFO => 16,    // argsz, flags, index, count
        cmd::SET_IRQS => 20,        // argsz, flags, index, start, count
        cmd::REGION_READ | cmd::REGION_WRITE => 16, // offset, region, count
        cmd::DEVICE_RESET => 0,
        _ => return None,
    })
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    let lo = u64::from(u32_at(b, i)?);
    let hi = u64::from(u32_at(b, i + 4)?);
    Some(lo | hi << 32)
}

/// Decides on one whole message: `header`, the `body` after it (exactly
/// `message_size - 16` bytes, which the framing has already read), and how many descriptors
/// came with it (`usize::MAX` if more than could be received).
///
/// Never panics, allocates nothing; every rule is a bound the crate does not check itself.
pub fn check(header: &Header, body: &[u8], nfds: usize, limits: &Limits) -> Verdict {
    use Reason::*;
    let reject = Verdict::Reject;
    if header.flags & TYPE_MASK != TYPE_COMMAND {
        return reject(NotACommand);
    }
    if header.flags & !(TYPE_MASK | FLAG_NO_REPLY) != 0 {
        return reject(BadFlags);
    }
    let Some(fixed) = fixed_body(header.command) else {
        return reject(Unsupported);
    };
    let no_reply = header.flags & FLAG_NO_REPLY != 0;
    // The crate refuses NoReply on these before reading the body: the stream would desync.
    let must_reply = matches!(
        header.command,
        cmd::VERSION
            | cmd::DEVICE_GET_INFO
            | cmd::GET_REGION_INFO
            | cmd::GET_IRQ_INFO
            | cmd::REGION_READ
    );
    if no_reply && must_reply {
        return reject(NoReplyRefused);
    }
    let variable = matches!(header.command, cmd::VERSION | cmd::REGION_WRITE);
    if body.len() < fixed || (!variable && body.len() != fixed) {
        return reject(BadSize);
    }
    let fds_allowed = match header.command {
        cmd::DMA_MAP => 1,
        cmd::SET_IRQS => {
            // count is the last field; at most one eventfd per vector set.
            let count = u32_at(body, 16).map_or(0, |c| c as usize);
            count.min(limits.max_fds)
        }
        _ => 0,
    };
    if nfds > fds_allowed {
        return reject(BadFds);
    }
    match header.command {
        cmd::SET_IRQS if u32_at(body, 4).is_some_and(|f| f & IRQ_DATA_BOOL != 0) => {
            return reject(IrqDataBool);
        }
        cmd::VERSION => {
            let json = &body[fixed..];
            let ok = !json.is_empty()
                && json.len() <= limits.max_version_json
                && json.iter().position(|&b| b == 0) == Some(json.len() - 1)
                && std::str::from_utf8(&json[..json.len() - 1]).is_ok();
            if !ok {
                return reject(BadVersionString);
            }
        }
        cmd::REGION_READ | cmd::REGION_WRITE => {
            let (Some(offset), Some(region), Some(count)) =
                (u64_at(body, 0), u32_at(body, 8), u32_at(body, 12))
            else {
                return reject(BadSize);
            };
            let Some(&size) = limits.regions.get(region as usize) else {
                return reject(NoSuchRegion);
            };
            if count > limits.max_xfer {
                return reject(TooLarge);
            }
            match offset.checked_add(u64::from(count)) {
                Some(end) if end <= size => {}
                _ => return reject(OutOfRange),
            }
            if header.command == cmd::REGION_WRITE && body.len() - fixed != count as usize {
                return reject(BadSize);
            }
        }
        _ => {}
    }
    Verdict::Forward
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
