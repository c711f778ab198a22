//! A byte-checked TCP transfer: the sender writes the stream of a seed and closes its
//! direction; the receiver checks every byte as it arrives and answers with its result (one
//! JSON line), which the sender reports with its own.

use crate::pattern::{self, Checker};
use serde_json::{json, Value};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Sends `bytes` of the stream of `seed` to `to`.
pub fn send(to: SocketAddr, bytes: u64, seed: u64, give_up: Duration) -> io::Result<Value> {
    let mut s = TcpStream::connect_timeout(&to, give_up)?;
    s.set_write_timeout(Some(give_up))?;
    s.set_read_timeout(Some(give_up))?;
    let start = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    let mut crc = crc32fast::Hasher::new();
    let mut at = 0u64;
    while at < bytes {
        let n = (bytes - at).min(buf.len() as u64) as usize;
        pattern::fill(seed, at, &mut buf[..n]);
        crc.update(&buf[..n]);
        s.write_all(&buf[..n])?;
        at += n as u64;
    }
    s.shutdown(Shutdown::Write)?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line)?;
    let secs = start.elapsed().as_secs_f64();
    let receiver: Value = serde_json::from_str(line.trim()).unwrap_or(Value::Null);
    Ok(json!({
        "mode": "tcp-send", "to": to.to_string(), "bytes": bytes, "seed": seed,
        "crc32": format!("{:08x}", crc.finalize()), "secs": secs,
        "mb_per_s": bytes as f64 / 1e6 / secs.max(1e-9),
    }))
    .map(|v| crate::flatten_peer(v, &receiver))
}

/// A listening receiver, ready for one connection.
#[derive(Debug)]
pub struct Receiver {
    listener: TcpListener,
    seed: u64,
}

impl Receiver {
    /// Listens on `at` (so a sender may connect as soon as this returns).
    pub fn bind(at: SocketAddr, seed: u64) -> io::Result<Receiver> {
        Ok(Receiver {
            listener: TcpListener::bind(at)?,
            seed,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Takes one connection, checks the stream to its end, answers and reports.
    pub fn run(self, give_up: Duration) -> io::Result<Value> {
        self.listener.set_nonblocking(true)?;
        let waited = Instant::now();
        let (mut s, from) = loop {
            match self.listener.accept() {
                Ok(x) => break x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && waited.elapsed() < give_up => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        };
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(give_up))?;
        let start = Instant::now();
        let mut check = Checker::new(self.seed);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => check.take(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let bytes = check.bytes();
        let report = json!({
            "mode": "tcp-recv", "from": from.to_string(), "ok": check.mismatch().is_none(),
            "bytes": bytes, "crc32": format!("{:08x}", check.crc()),
            "first_mismatch": check.mismatch(), "secs": secs,
            "mb_per_s": bytes as f64 / 1e6 / secs.max(1e-9),
        });
        s.write_all(format!("{report}\n").as_bytes())?;
        let _ = s.shutdown(Shutdown::Both);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_over_loopback_arrives_whole() {
        let r = Receiver::bind("127.0.0.1:0".parse().unwrap(), 5).unwrap();
        let at = r.local_addr().unwrap();
        let t = std::thread::spawn(move || r.run(Duration::from_secs(10)).unwrap());
        let s = send(at, 1_000_003, 5, Duration::from_secs(10)).unwrap();
        let r = t.join().unwrap();
        assert_eq!(r["ok"], true);
        assert_eq!(r["bytes"], 1_000_003);
        assert_eq!(s["crc32"], r["crc32"]);
        assert_eq!(s["peer_crc32"], r["crc32"]);
    }
}
