//! A byte-checked UDP transfer with go-back-N flow control: the sender keeps at most a window
//! of datagrams unacknowledged, the receiver takes them only in order and acknowledges
//! cumulatively, and a silence makes the sender resend from the first unacknowledged one. So
//! the whole stream arrives even through a receiver slower than the sender (a guest under
//! emulation), and every datagram either side sends is counted: the traffic counters of the
//! path can then be compared with exactly what was sent.
//!
//! Each datagram starts with a 24-byte header: magic `MXF1`, kind (1 data, 2 ack, 3 end,
//! 4 end-ack), 3 reserved bytes, then three big-endian numbers: sequence (u32), a value (u32:
//! the payload length of data, the cumulative count of an ack, the datagram count of the end)
//! and an offset (u64: the payload's stream offset, or the stream's length in the end). The
//! end-ack carries the receiver's result as JSON.

use crate::pattern::{self, Checker};
use serde_json::{json, Value};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 4] = b"MXF1";
const HEADER: usize = 24;
const DATA: u8 = 1;
const ACK: u8 = 2;
const END: u8 = 3;
const END_ACK: u8 = 4;

/// How a transfer is cut and paced.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Payload bytes per datagram (the stream's chunks).
    pub chunk: usize,
    /// Datagrams in flight before the sender waits for an ack.
    pub window: u32,
}

struct Header {
    kind: u8,
    seq: u32,
    value: u32,
    offset: u64,
}

fn header(h: &Header, out: &mut [u8]) {
    out[..4].copy_from_slice(MAGIC);
    out[4] = h.kind;
    out[5..8].fill(0);
    out[8..12].copy_from_slice(&h.seq.to_be_bytes());
    out[12..16].copy_from_slice(&h.value.to_be_bytes());
    out[16..24].copy_from_slice(&h.offset.to_be_bytes());
}

fn parse(d: &[u8]) -> Option<Header> {
    if d.len() < HEADER || &d[..4] != MAGIC {
        return None;
    }
    let u32_at = |i: usize| u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
    let mut off = [0u8; 8];
    off.copy_from_slice(&d[16..24]);
    Some(Header {
        kind: d[4],
        seq: u32_at(8),
        value: u32_at(12),
        offset: u64::from_be_bytes(off),
    })
}

/// Acknowledges to `to` every datagram before `expected` (cumulative).
fn send_ack(sock: &UdpSocket, to: SocketAddr, expected: u32) -> io::Result<()> {
    let mut ack = [0u8; HEADER];
    let h = Header {
        kind: ACK,
        seq: 0,
        value: expected,
        offset: 0,
    };
    header(&h, &mut ack);
    sock.send_to(&ack, to).map(drop)
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Sends `bytes` of the stream of `seed` to `to`; returns the sender's and the receiver's
/// reports once the receiver has confirmed the end, or an error after `give_up` of silence.
pub fn send(
    to: SocketAddr,
    bytes: u64,
    seed: u64,
    shape: Shape,
    give_up: Duration,
) -> io::Result<Value> {
    let bind: SocketAddr = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .unwrap_or(to);
    let sock = UdpSocket::bind(bind)?;
    sock.connect(to)?;
    let chunk = shape.chunk.clamp(1, 65_000);
    let total = bytes.div_ceil(chunk as u64);
    let total = u32::try_from(total).map_err(|_| io::Error::other("too many datagrams"))?;
    let crc = pattern::crc_of(seed, bytes);
    let start = Instant::now();
    let (mut base, mut next) = (0u32, 0u32);
    let (mut sent, mut resent, mut acks, mut timeouts) = (0u64, 0u64, 0u64, 0u64);
    let mut dgram = vec![0u8; HEADER + chunk];
    let mut buf = vec![0u8; 65_536];
    let mut last_progress = Instant::now();
    sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    while base < total {
        while next < total && next - base < shape.window {
            let offset = u64::from(next) * chunk as u64;
            let len = (bytes - offset).min(chunk as u64) as usize;
            header(
                &Header {
                    kind: DATA,
                    seq: next,
                    value: len as u32,
                    offset,
                },
                &mut dgram,
            );
            pattern::fill(seed, offset, &mut dgram[HEADER..HEADER + len]);
            sock.send(&dgram[..HEADER + len])?;
            sent += 1;
            next += 1;
        }
        match sock.recv(&mut buf) {
            Ok(n) => {
                if let Some(h) = parse(&buf[..n]).filter(|h| h.kind == ACK) {
                    acks += 1;
                    if h.value > base && h.value <= next {
                        base = h.value;
                        last_progress = Instant::now();
                    }
                }
            }
            Err(e) if would_block(&e) => {
                // Silence: go back to the first datagram not acknowledged.
                timeouts += 1;
                resent += u64::from(next - base);
                next = base;
                if last_progress.elapsed() > give_up {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no progress for {give_up:?} at datagram {base} of {total}"),
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    // The end, until the receiver answers with its result.
    let mut end = [0u8; HEADER];
    header(
        &Header {
            kind: END,
            seq: total,
            value: total,
            offset: bytes,
        },
        &mut end,
    );
    let mut ends = 0u64;
    let receiver = loop {
        if last_progress.elapsed() > give_up {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the receiver never confirmed the end",
            ));
        }
        sock.send(&end)?;
        ends += 1;
        match sock.recv(&mut buf) {
            Ok(n) => match parse(&buf[..n]) {
                Some(h) if h.kind == END_ACK => {
                    break serde_json::from_slice::<Value>(&buf[HEADER..n]).unwrap_or(Value::Null);
                }
                Some(h) if h.kind == ACK => acks += 1,
                _ => {}
            },
            Err(e) if would_block(&e) => {}
            Err(e) => return Err(e),
        }
    };
    acks += 1; // the end-ack
    Ok(json!({
        "mode": "udp-send", "to": to.to_string(), "bytes": bytes, "seed": seed,
        "chunk": chunk, "window": shape.window, "crc32": format!("{crc:08x}"),
        "datagrams_sent": sent + ends, "data_datagrams": sent, "resent": resent,
        "end_datagrams": ends, "timeouts": timeouts, "datagrams_received": acks,
        "secs": secs, "mb_per_s": bytes as f64 / 1e6 / secs.max(1e-9),
    }))
    .map(|v| crate::flatten_peer(v, &receiver))
}

/// A bound receiver, ready for one transfer.
#[derive(Debug)]
pub struct Receiver {
    sock: UdpSocket,
    seed: u64,
    window: u32,
}

impl Receiver {
    /// Binds `at` (so a sender may start as soon as this returns).
    pub fn bind(at: SocketAddr, seed: u64, window: u32) -> io::Result<Receiver> {
        let sock = UdpSocket::bind(at)?;
        Ok(Receiver {
            sock,
            seed,
            window: window.max(2),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Receives one stream (from the first sender heard), checking every byte; returns the
    /// report once the end has been confirmed, or an error after `give_up` of silence.
    pub fn run(self, give_up: Duration) -> io::Result<Value> {
        let sock = self.sock;
        sock.set_read_timeout(Some(Duration::from_millis(50)))?;
        let mut check = Checker::new(self.seed);
        let mut buf = vec![0u8; 65_536];
        let (mut expected, mut since_ack) = (0u32, 0u32);
        let (mut received, mut dup, mut ahead, mut acks) = (0u64, 0u64, 0u64, 0u64);
        let mut peer: Option<SocketAddr> = None;
        let mut started: Option<Instant> = None;
        let mut heard = Instant::now();
        loop {
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if would_block(&e) => {
                    if let (Some(p), true) = (peer, since_ack > 0) {
                        send_ack(&sock, p, expected)?;
                        acks += 1;
                        since_ack = 0;
                    }
                    if heard.elapsed() > give_up {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "nothing heard for {give_up:?} after {} bytes",
                                check.bytes()
                            ),
                        ));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(h) = parse(&buf[..n]) else { continue };
            if *peer.get_or_insert(from) != from {
                continue;
            }
            heard = Instant::now();
            received += 1;
            started.get_or_insert_with(Instant::now);
            match h.kind {
                DATA if h.seq == expected
                    && n - HEADER == h.value as usize
                    && h.offset == check.bytes() =>
                {
                    check.take(&buf[HEADER..n]);
                    expected += 1;
                    since_ack += 1;
                    if since_ack >= self.window / 2 {
                        send_ack(&sock, from, expected)?;
                        acks += 1;
                        since_ack = 0;
                    }
                }
                DATA => {
                    // Out of order (a gap before it) or a duplicate: the sender learns where
                    // the receiver stands at once.
                    if h.seq < expected {
                        dup += 1
                    } else {
                        ahead += 1
                    }
                    send_ack(&sock, from, expected)?;
                    acks += 1;
                    since_ack = 0;
                }
                END if h.value == expected => {
                    let secs = started.map_or(0.0, |s| s.elapsed().as_secs_f64());
                    let bytes = check.bytes();
                    let ok = check.mismatch().is_none() && bytes == h.offset;
                    let mut report = json!({
                        "mode": "udp-recv", "from": from.to_string(), "ok": ok, "bytes": bytes,
                        "expected_bytes": h.offset, "crc32": format!("{:08x}", check.crc()),
                        "first_mismatch": check.mismatch(), "secs": secs,
                        "mb_per_s": bytes as f64 / 1e6 / secs.max(1e-9),
                    });
                    // Answer this end and any repeat of it (the answer may be lost) for a
                    // while, then report; the counts include every answer sent.
                    let mut answer = vec![0u8; HEADER];
                    header(
                        &Header {
                            kind: END_ACK,
                            seq: h.seq,
                            value: expected,
                            offset: bytes,
                        },
                        &mut answer,
                    );
                    answer.extend_from_slice(report.to_string().as_bytes());
                    sock.send_to(&answer, from)?;
                    acks += 1;
                    let linger = Instant::now();
                    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
                    while linger.elapsed() < Duration::from_millis(1500) {
                        match sock.recv_from(&mut buf) {
                            Ok((n, f)) if f == from => {
                                received += 1;
                                if parse(&buf[..n]).is_some_and(|h| h.kind == END) {
                                    sock.send_to(&answer, from)?;
                                    acks += 1;
                                } else if parse(&buf[..n]).is_some_and(|h| h.kind == DATA) {
                                    dup += 1;
                                }
                            }
                            Ok(_) => {}
                            Err(e) if would_block(&e) => {}
                            Err(e) => return Err(e),
                        }
                    }
                    if let Some(o) = report.as_object_mut() {
                        o.insert("datagrams_received".into(), json!(received));
                        o.insert("duplicates".into(), json!(dup));
                        o.insert("out_of_order".into(), json!(ahead));
                        o.insert("datagrams_sent".into(), json!(acks));
                    }
                    return Ok(report);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_over_loopback_arrives_whole() {
        let r = Receiver::bind("127.0.0.1:0".parse().unwrap(), 9, 16).unwrap();
        let at = r.local_addr().unwrap();
        let t = std::thread::spawn(move || r.run(Duration::from_secs(10)).unwrap());
        let shape = Shape {
            chunk: 1000,
            window: 16,
        };
        let s = send(at, 123_457, 9, shape, Duration::from_secs(10)).unwrap();
        let r = t.join().unwrap();
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["bytes"], 123_457);
        assert_eq!(s["crc32"], r["crc32"]);
        assert_eq!(s["peer_crc32"], r["crc32"]);
        // Both ends count what crossed: the sender's datagrams are the receiver's.
        assert_eq!(s["datagrams_sent"], r["datagrams_received"]);
    }

    #[test]
    fn a_wrong_seed_is_caught() {
        let r = Receiver::bind("127.0.0.1:0".parse().unwrap(), 1, 8).unwrap();
        let at = r.local_addr().unwrap();
        let t = std::thread::spawn(move || r.run(Duration::from_secs(10)).unwrap());
        let shape = Shape {
            chunk: 500,
            window: 8,
        };
        send(at, 5000, 2, shape, Duration::from_secs(10)).unwrap();
        let r = t.join().unwrap();
        assert_eq!(r["ok"], false);
        assert_eq!(r["first_mismatch"], 0);
    }
}
