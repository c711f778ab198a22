//! ICMP echo over a raw socket (root only: the harness's agent runs as root in its network
//! namespace, where no `ping` program need be installed): one request at a time, each answered
//! or timed out before the next.

use serde_json::{json, Value};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

/// The Internet checksum of `data` (RFC 1071).
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request with identifier `id`, sequence `seq` and 56 bytes of payload.
fn request(id: u16, seq: u16) -> Vec<u8> {
    let mut p = vec![8u8, 0, 0, 0];
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend((0..56u8).map(|i| i.wrapping_mul(7)));
    let c = checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// The (identifier, sequence) of an echo reply in IPv4 packet `p`, checksum checked.
fn reply(p: &[u8]) -> Option<(u16, u16)> {
    let ihl = usize::from(*p.first()? & 0x0f) * 4;
    let icmp = p.get(ihl..)?;
    if icmp.len() < 8 || icmp[0] != 0 || icmp[1] != 0 || checksum(icmp) != 0 {
        return None;
    }
    Some((
        u16::from_be_bytes([icmp[4], icmp[5]]),
        u16::from_be_bytes([icmp[6], icmp[7]]),
    ))
}

/// Sends `count` echo requests to `to`, `interval` apart at least, each waiting up to `wait`
/// for its reply.
pub fn ping(to: Ipv4Addr, count: u16, interval: Duration, wait: Duration) -> io::Result<Value> {
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))?;
    let dest = SocketAddrV4::new(to, 0).into();
    let id = (std::process::id() & 0xffff) as u16;
    let (mut received, mut rtts) = (0u32, Vec::new());
    let mut buf = [0u8; 2048];
    for seq in 0..count {
        let sent_at = Instant::now();
        sock.send_to(&request(id, seq), &dest)?;
        loop {
            let left = wait.saturating_sub(sent_at.elapsed());
            if left.is_zero() {
                break;
            }
            sock.set_read_timeout(Some(left))?;
            // `Read` on the socket: an initialised buffer, no `MaybeUninit` to vouch for.
            match (&sock).read(&mut buf) {
                Ok(n) => {
                    if reply(&buf[..n]) == Some((id, seq)) {
                        received += 1;
                        rtts.push(sent_at.elapsed().as_secs_f64() * 1e3);
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        std::thread::sleep(interval.saturating_sub(sent_at.elapsed()));
    }
    let avg = if rtts.is_empty() {
        0.0
    } else {
        rtts.iter().sum::<f64>() / rtts.len() as f64
    };
    let max = rtts.iter().cloned().fold(0.0, f64::max);
    Ok(json!({
        "mode": "ping", "to": to.to_string(), "sent": count, "received": received,
        "loss_percent": 100.0 * f64::from(u32::from(count) - received) / f64::from(count.max(1)),
        "rtt_avg_ms": avg, "rtt_max_ms": max,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_a_valid_checksum() {
        let r = request(0x1234, 7);
        assert_eq!(checksum(&r), 0);
        assert_eq!(&r[4..8], &[0x12, 0x34, 0, 7]);
    }

    #[test]
    fn a_reply_is_recognised_and_a_bad_one_is_not() {
        let mut icmp = request(9, 3);
        icmp[0] = 0;
        icmp[2..4].fill(0);
        let c = checksum(&icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let mut ip = vec![0x45u8];
        ip.extend_from_slice(&[0; 19]);
        ip.extend_from_slice(&icmp);
        assert_eq!(reply(&ip), Some((9, 3)));
        let last = ip.len() - 1;
        ip[last] ^= 1;
        assert_eq!(reply(&ip), None);
        assert_eq!(reply(&[0x4f]), None);
    }

    /// The loopback interface answers: three requests, three replies. A raw socket needs
    /// root (CAP_NET_RAW); without it the error is the socket's, not a panic.
    #[test]
    fn the_loopback_interface_answers() {
        let r = ping(
            Ipv4Addr::LOCALHOST,
            3,
            Duration::from_millis(1),
            Duration::from_secs(2),
        );
        match r {
            Ok(v) => {
                assert_eq!(
                    (v["sent"].as_u64(), v["received"].as_u64()),
                    (Some(3), Some(3)),
                    "{v}"
                );
                assert_eq!(v["loss_percent"].as_f64(), Some(0.0), "{v}");
            }
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
        }
    }
}
