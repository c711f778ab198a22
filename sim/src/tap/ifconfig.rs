//! Interface settings of the calling thread's network namespace, through the classic socket
//! ioctls (no `ip` binary needed): an IPv4 address, the up flag, and the kernel's packet
//! counters of an interface. Call these inside [`NetNs::run`](super::NetNs::run) to act on a
//! namespace's interfaces.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The kernel's counters of one interface (from `/proc/thread-self/net/dev`): what the kernel
/// received on it and what it sent through it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IfCounters {
    /// Frames the kernel received on the interface (for a TAP device: written to it).
    pub rx_packets: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames the kernel sent through the interface (for a TAP device: readable from it).
    pub tx_packets: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
}

/// An `ifreq` naming `name`.
pub(crate) fn request(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "interface name {name:?}: 1 to {} bytes, no NUL",
                libc::IFNAMSIZ - 1
            ),
        ));
    }
    // SAFETY: ifreq is plain old data (a name and a union of integers and addresses); all
    // zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(req)
}

/// The name the kernel wrote back into an `ifreq`.
pub(crate) fn name_of(req: &libc::ifreq) -> String {
    req.ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect()
}

/// A datagram socket to issue interface ioctls on.
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket has no memory arguments; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl(what: &str, name: &str, request: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
    let sock = control_socket()?;
    // SAFETY: the SIOC* requests used here read or write one `ifreq`, which `req` points to.
    if unsafe { libc::ioctl(sock.as_raw_fd(), request as _, req as *mut libc::ifreq) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what} of {name}: {e}")));
    }
    Ok(())
}

fn sockaddr_v4(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size on Linux, and the kernel reads a
    // sockaddr with family AF_INET as a sockaddr_in.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Gives interface `name` the IPv4 address `addr` with a `prefix`-bit network (the kernel
/// adds the route to that network).
pub fn set_ipv4(name: &str, addr: Ipv4Addr, prefix: u8) -> io::Result<()> {
    if prefix > 32 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("prefix /{prefix} is longer than 32 bits"),
        ));
    }
    let mut req = request(name)?;
    req.ifr_ifru.ifru_addr = sockaddr_v4(addr);
    ioctl("setting the address", name, libc::SIOCSIFADDR, &mut req)?;
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    let mut req = request(name)?;
    req.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::from(mask));
    ioctl("setting the netmask", name, libc::SIOCSIFNETMASK, &mut req)
}

/// Sets interface `name` up.
pub fn set_up(name: &str) -> io::Result<()> {
    let mut req = request(name)?;
    ioctl("reading the flags", name, libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    ioctl("setting the flags", name, libc::SIOCSIFFLAGS, &mut req)
}

/// Turns IPv6 off on interface `name`, so the kernel sends nothing on it unasked (no router
/// solicitations, no duplicate address detection). Does nothing on a kernel without IPv6.
pub fn disable_ipv6(name: &str) -> io::Result<()> {
    request(name)?;
    let path = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    match std::fs::write(&path, "1") {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r.map_err(|e| io::Error::new(e.kind(), format!("writing {path}: {e}"))),
    }
}

/// The kernel's counters of interface `name`.
pub fn counters(name: &str) -> io::Result<IfCounters> {
    let table = std::fs::read_to_string("/proc/thread-self/net/dev")?;
    parse_counters(&table, name).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name} in this network namespace"),
        )
    })
}

/// Finds `name`'s line in the text of `/proc/net/dev` (two header lines, then
/// `name: rx_bytes rx_packets errs drop fifo frame compressed multicast tx_bytes tx_packets
/// ...`).
fn parse_counters(table: &str, name: &str) -> Option<IfCounters> {
    table.lines().skip(2).find_map(|line| {
        let (ifname, rest) = line.split_once(':')?;
        if ifname.trim() != name {
            return None;
        }
        let v: Vec<u64> = rest
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        Some(IfCounters {
            rx_bytes: *v.first()?,
            rx_packets: *v.get(1)?,
            tx_bytes: *v.get(8)?,
            tx_packets: *v.get(9)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_from_proc_net_dev() {
        let table = "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
             lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n  \
             tap0:     420       5    0    0    0     0          0         0      812       9    0    0    0     0       0          0\n";
        assert_eq!(
            parse_counters(table, "tap0"),
            Some(IfCounters {
                rx_bytes: 420,
                rx_packets: 5,
                tx_bytes: 812,
                tx_packets: 9
            })
        );
        assert_eq!(parse_counters(table, "tap1"), None);
        assert_eq!(parse_counters("", "tap0"), None);
        assert_eq!(parse_counters("a\nb\ntap0: 1 2 x\n", "tap0"), None);
    }

    #[test]
    fn bad_names_are_refused() {
        for name in ["", "a\0b", "sixteen-bytes-xx"] {
            assert_eq!(
                request(name).unwrap_err().kind(),
                io::ErrorKind::InvalidInput
            );
        }
        assert_eq!(name_of(&request("tap7").unwrap()), "tap7");
    }
}
