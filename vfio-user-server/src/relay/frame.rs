//! Whole vfio-user messages on a Unix stream socket, with their descriptors.
//!
//! The relay reads a message completely (header, then exactly `message_size - 16` bytes)
//! before deciding anything, so a bad message can be answered and skipped without the stream
//! falling out of step. Descriptors travel as `SCM_RIGHTS` ancillary data attached to some of
//! the message's bytes; every `recvmsg` of the message collects them, up to [`MAX_FDS`]
//! (more are closed and the message is marked, so that it is refused).
//!
//! A forwarded message is written with one `sendmsg` carrying all its descriptors, so that
//! the crate, which reads the 16-byte header with a single `recvmsg`, finds the header and
//! the descriptors together.

use super::validate::{Header, HEADER, MAX_FDS};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// One message as read.
#[derive(Debug)]
pub struct Frame {
    /// Its header, decoded.
    pub header: Header,
    /// The whole message, header included (`message_size` bytes).
    pub bytes: Vec<u8>,
    /// The descriptors that came with it.
    pub fds: Vec<OwnedFd>,
    /// More descriptors came than [`MAX_FDS`]; the extra ones are closed.
    pub fds_truncated: bool,
}

impl Frame {
    /// The body after the header.
    pub fn body(&self) -> &[u8] {
        &self.bytes[HEADER..]
    }

    /// How many descriptors came, for the rules (`usize::MAX`: more than we could take).
    pub fn nfds(&self) -> usize {
        if self.fds_truncated {
            usize::MAX
        } else {
            self.fds.len()
        }
    }
}

/// Why no message could be read; each ends the connection.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The peer closed the connection between messages.
    #[error("closed")]
    Closed,
    /// The peer closed the connection inside a message.
    #[error("closed {got} bytes into a message of {want}")]
    Truncated {
        /// Bytes read of the message.
        got: usize,
        /// Its declared size (16 while still in the header).
        want: usize,
    },
    /// `message_size` outside what a message can be: it cannot be skipped safely.
    #[error("message size {0} outside 16..={1}")]
    BadSize(u32, u32),
    /// The socket failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// `recvmsg` into `buf`, appending received descriptors to `fds` (at most [`MAX_FDS`]
/// kept; beyond that they are closed and `truncated` set). Returns the bytes read (0: EOF).
fn recv_some(
    fd: RawFd,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
    truncated: &mut bool,
) -> io::Result<usize> {
    // Room for MAX_FDS descriptors, u64-aligned as cmsghdr needs.
    const SPACE: usize = 128;
    let mut cbuf = [0u64; SPACE / 8];
    // SAFETY: CMSG_SPACE is a pure size computation.
    let need = unsafe { libc::CMSG_SPACE((MAX_FDS * size_of::<RawFd>()) as u32) } as usize;
    debug_assert!(need <= SPACE);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: a zeroed msghdr is valid; we point it at our iovec and control buffer,
        // which outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = need.min(SPACE) as _;
        // SAFETY: msg describes valid buffers of the stated lengths.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            *truncated = true;
        }
        // SAFETY: walking the control messages the kernel wrote, with the libc macros, inside
        // msg_controllen; each SCM_RIGHTS payload is an array of descriptors now ours.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<RawFd>();
                    let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..len / size_of::<RawFd>() {
                        let owned = OwnedFd::from_raw_fd(data.add(i).read_unaligned());
                        if fds.len() < MAX_FDS {
                            fds.push(owned);
                        } else {
                            *truncated = true; // dropped: closed
                        }
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        return Ok(n as usize);
    }
}

/// Fills `buf` completely; `Ok(false)` if the peer closed before the first byte.
fn fill(
    fd: RawFd,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
    truncated: &mut bool,
    done_before: usize,
    want: usize,
) -> Result<bool, ReadError> {
    let mut got = 0;
    while got < buf.len() {
        let n = recv_some(fd, &mut buf[got..], fds, truncated)?;
        if n == 0 {
            if got == 0 && done_before == 0 {
                return Ok(false);
            }
            return Err(ReadError::Truncated {
                got: done_before + got,
                want,
            });
        }
        got += n;
    }
    Ok(true)
}

/// Reads one whole message of at most `max` bytes. The body is allocated only once the
/// header has declared a size within bounds.
pub fn read_frame(sock: &UnixStream, max: u32) -> Result<Frame, ReadError> {
    let fd = sock.as_raw_fd();
    let mut fds = Vec::new();
    let mut truncated = false;
    let mut head = [0u8; HEADER];
    if !fill(fd, &mut head, &mut fds, &mut truncated, 0, HEADER)? {
        return Err(ReadError::Closed);
    }
    let header = Header::parse(&head);
    let size = header.message_size;
    if (size as usize) < HEADER || size > max {
        return Err(ReadError::BadSize(size, max));
    }
    let mut bytes = vec![0u8; size as usize];
    bytes[..HEADER].copy_from_slice(&head);
    fill(
        fd,
        &mut bytes[HEADER..],
        &mut fds,
        &mut truncated,
        HEADER,
        size as usize,
    )?;
    Ok(Frame {
        header,
        bytes,
        fds,
        fds_truncated: truncated,
    })
}

/// Writes `bytes` whole, the descriptors with the first `sendmsg`. `MSG_NOSIGNAL`: a peer
/// that went away is an error here, never a signal.
pub fn write_frame(sock: &UnixStream, bytes: &[u8], fds: &[OwnedFd]) -> io::Result<()> {
    let fd = sock.as_raw_fd();
    let mut cbuf = [0u64; 16];
    let mut sent = 0;
    let mut first = true;
    while sent < bytes.len() {
        let rest = &bytes[sent..];
        let mut iov = libc::iovec {
            iov_base: rest.as_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        };
        // SAFETY: a zeroed msghdr is valid; filled with our iovec and, on the first call
        // with descriptors, a control buffer holding one SCM_RIGHTS message (at most
        // MAX_FDS descriptors: CMSG_SPACE of that fits the 128-byte buffer).
        let n = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if first && !fds.is_empty() {
                let n = fds.len().min(MAX_FDS);
                let payload = (n * size_of::<RawFd>()) as u32;
                msg.msg_control = cbuf.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(payload) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(payload) as _;
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                for (i, f) in fds.iter().take(n).enumerate() {
                    data.add(i).write_unaligned(f.as_raw_fd());
                }
            }
            libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        first = false;
        sent += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(command: u16, body: &[u8]) -> Vec<u8> {
        let h = Header {
            message_id: 7,
            command,
            message_size: (HEADER + body.len()) as u32,
            ..Header::default()
        };
        let mut m = h.to_bytes().to_vec();
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn frames_and_descriptors_round_trip() {
        let (a, b) = UnixStream::pair().unwrap();
        let f1 = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let f2 = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        write_frame(&a, &message(8, &[1; 20]), &[f1, f2]).unwrap();
        write_frame(&a, &message(13, &[]), &[]).unwrap();
        let m = read_frame(&b, 64).unwrap();
        assert_eq!((m.header.command, m.bytes.len(), m.nfds()), (8, 36, 2));
        let m = read_frame(&b, 64).unwrap();
        assert_eq!((m.header.command, m.bytes.len(), m.nfds()), (13, 16, 0));
        drop(a);
        assert!(matches!(read_frame(&b, 64), Err(ReadError::Closed)));
    }

    #[test]
    fn sizes_outside_bounds_and_truncation_end_the_stream() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut m = message(9, &[0; 16]);
        m[4..8].copy_from_slice(&100u32.to_le_bytes());
        write_frame(&a, &m, &[]).unwrap();
        assert!(matches!(
            read_frame(&b, 64),
            Err(ReadError::BadSize(100, 64))
        ));
        let (a, b) = UnixStream::pair().unwrap();
        write_frame(&a, &message(9, &[0; 16])[..20], &[]).unwrap();
        drop(a);
        assert!(matches!(
            read_frame(&b, 64),
            Err(ReadError::Truncated { got: 20, want: 32 })
        ));
    }

    #[test]
    fn too_many_descriptors_are_closed_and_marked() {
        let (a, b) = UnixStream::pair().unwrap();
        let many: Vec<OwnedFd> = (0..MAX_FDS)
            .map(|_| OwnedFd::from(std::fs::File::open("/dev/null").unwrap()))
            .collect();
        let m = message(8, &[0; 20]);
        write_frame(&a, &m[..20], &many).unwrap();
        let more: Vec<OwnedFd> = (0..2)
            .map(|_| OwnedFd::from(std::fs::File::open("/dev/null").unwrap()))
            .collect();
        // The rest of the body, with more descriptors: past MAX_FDS in one message.
        write_frame(&a, &m[20..], &more).unwrap();
        let m = read_frame(&b, 64).unwrap();
        assert_eq!(m.fds.len(), MAX_FDS);
        assert_eq!(m.nfds(), usize::MAX);
    }
}
