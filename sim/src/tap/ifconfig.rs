//! Interface settings of the calling thread's network namespace, through the classic socket
//! ioctls (no `ip` binary needed): an IPv4 address, the up flag, and the kernel's packet
//! counters of an interface. Call these inside [`NetNs::run`](super::NetNs::run) to act on a
//! namespace's interfaces.
//!
//! The ioctls are declared with nix's macros (typed, errors as `Errno`); calling one stays
//! `unsafe` because the kernel reads and writes the `ifreq` through a raw pointer, so every
//! call goes through `if_ioctl`, the one place that does it.

use nix::net::if_::InterfaceFlags;
use nix::sys::socket::{AddressFamily, SockFlag, SockType};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};

pub(crate) use ioctls::tunsetiff;
use ioctls::{siocsifaddr, siocsifflags, siocsifnetmask};

/// The ioctls, typed by nix's macros (which make them `pub`: this module keeps them inside
/// the crate).
mod ioctls {
    nix::ioctl_readwrite_bad!(
        /// `TUNSETIFF` on an open `/dev/net/tun`: makes it the TAP (or TUN) device the
        /// `ifreq` names and writes the name the kernel chose back.
        tunsetiff,
        libc::TUNSETIFF,
        libc::ifreq
    );
    nix::ioctl_write_ptr_bad!(
        /// `SIOCSIFADDR`: the interface's IPv4 address, from `ifru_addr`.
        siocsifaddr,
        libc::SIOCSIFADDR,
        libc::ifreq
    );
    nix::ioctl_write_ptr_bad!(
        /// `SIOCSIFNETMASK`: its netmask, from `ifru_netmask`.
        siocsifnetmask,
        libc::SIOCSIFNETMASK,
        libc::ifreq
    );
    nix::ioctl_write_ptr_bad!(
        /// `SIOCSIFFLAGS`: its flags, from `ifru_flags`.
        siocsifflags,
        libc::SIOCSIFFLAGS,
        libc::ifreq
    );
}

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
    // zeroes is a valid value, and unlike a union literal it leaves no byte uninitialised.
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

/// An interface ioctl that reads one `ifreq` (`siocsifaddr` and its kind).
type IfIoctl = unsafe fn(RawFd, *const libc::ifreq) -> nix::Result<libc::c_int>;

/// Issues `ioctl` with `req` on a fresh datagram socket of the calling thread's namespace.
fn if_ioctl(what: &str, name: &str, ioctl: IfIoctl, req: &libc::ifreq) -> io::Result<()> {
    let sock = nix::sys::socket::socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: every `IfIoctl` is one of the SIOCSIF* requests declared above, which read one
    // `ifreq` and nothing else; `req` is a whole, initialised `ifreq` borrowed for the call,
    // and `sock` is an open socket.
    unsafe { ioctl(sock.as_raw_fd(), req) }
        .map(drop)
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("{what} of {name}: {e}")))
}

/// A `sockaddr` holding an IPv4 address (port 0), built field by field: `sa_data` holds the
/// port and then the address, both in network order, as `sockaddr_in` lays them out.
fn sockaddr_v4(addr: Ipv4Addr) -> libc::sockaddr {
    let mut sa = libc::sockaddr {
        sa_family: libc::AF_INET as libc::sa_family_t,
        sa_data: [0; 14],
    };
    for (d, b) in sa.sa_data[2..6].iter_mut().zip(addr.octets()) {
        *d = b as libc::c_char;
    }
    sa
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
    if_ioctl("setting the address", name, siocsifaddr, &req)?;
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    let mut req = request(name)?;
    req.ifr_ifru.ifru_netmask = sockaddr_v4(Ipv4Addr::from(mask));
    if_ioctl("setting the netmask", name, siocsifnetmask, &req)
}

/// Sets interface `name` up (its other flags as they were).
pub fn set_up(name: &str) -> io::Result<()> {
    let mut req = request(name)?;
    let flags = flags(name)? | InterfaceFlags::IFF_UP;
    // The kernel's flags word is 16 bits wide in an `ifreq`.
    req.ifr_ifru.ifru_flags = flags.bits() as libc::c_short;
    if_ioctl("setting the flags", name, siocsifflags, &req)
}

/// Interface `name`'s flags, from the kernel's list of interfaces (`getifaddrs`, which
/// lists every interface, with an address or without).
pub fn flags(name: &str) -> io::Result<InterfaceFlags> {
    let found = nix::ifaddrs::getifaddrs()
        .map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("listing interfaces: {e}"),
            )
        })?
        .find(|i| i.interface_name == name)
        .map(|i| i.flags);
    found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name} in this network namespace"),
        )
    })
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
