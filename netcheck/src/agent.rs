//! The host side of the guest's traffic milestones: a line server on a Unix socket (QEMU
//! connects the guest's serial port `ttyS2` to it), run by the harness inside the network
//! namespace that holds the model's TAP interface. The guest asks, one line per command, and
//! gets one line back, `LENGTH JSON` (`again` repeats the last answer: see `serve`):
//!
//! | command | does |
//! |---|---|
//! | `ping ADDR COUNT` | ICMP echo to the guest, COUNT requests |
//! | `udp-recv PORT SEED` / `tcp-recv PORT SEED` | starts a receiver on PORT; answers once it listens |
//! | `wait PORT` | the result of the receiver started on PORT, once it has finished |
//! | `udp-send ADDR:PORT BYTES SEED` / `tcp-send …` | sends to the guest; answers with the result |
//! | `stats` | the TAP interface's MAC and counters (`/sys/class/net/IF/statistics`) |
//! | `again` | the last answer once more (a reader that lost bytes of it asks) |
//! | `neigh ADDR MAC` | a permanent neighbour entry on the TAP interface (`ip neigh replace`), so no ARP crosses while counters are compared |
//!
//! Errors are answered as `{"ok":false,"error":…}`; the agent goes on.

use crate::{tcp, udp, GIVE_UP};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

type Job = JoinHandle<io::Result<Value>>;

fn err(msg: impl std::fmt::Display) -> Value {
    json!({ "ok": false, "error": msg.to_string() })
}

/// The counters of interface `iface`.
pub fn iface_stats(iface: &str) -> Value {
    let names = [
        "rx_packets",
        "tx_packets",
        "rx_bytes",
        "tx_bytes",
        "rx_dropped",
        "tx_dropped",
        "rx_errors",
        "tx_errors",
    ];
    let mut v = serde_json::Map::new();
    v.insert("ok".into(), json!(true));
    v.insert("iface".into(), json!(iface));
    let mac = std::fs::read_to_string(format!("/sys/class/net/{iface}/address"));
    v.insert(
        "mac".into(),
        json!(mac.map(|m| m.trim().to_string()).unwrap_or_default()),
    );
    for n in names {
        let path = format!("/sys/class/net/{iface}/statistics/{n}");
        match std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            Some(x) => v.insert(n.into(), json!(x)),
            None => return err(format!("cannot read {path}")),
        };
    }
    Value::Object(v)
}

struct Agent {
    iface: Option<String>,
    window: u32,
    chunk: usize,
    jobs: BTreeMap<u16, Job>,
}

fn parse_num<T: std::str::FromStr>(w: Option<&str>, what: &str) -> Result<T, Value> {
    w.and_then(|s| s.parse().ok())
        .ok_or_else(|| err(format!("{what} missing or not a number")))
}

fn to_value(r: io::Result<Value>) -> Value {
    match r {
        Ok(mut v) => {
            if let Some(o) = v.as_object_mut() {
                o.entry("ok").or_insert(json!(true));
            }
            v
        }
        Err(e) => err(e),
    }
}

impl Agent {
    fn command(&mut self, line: &str) -> Value {
        let mut w = line.split_whitespace();
        let result = match w.next() {
            Some("ping") => self.ping(&mut w),
            Some(k @ ("udp-recv" | "tcp-recv")) => self.start(k, &mut w),
            Some("wait") => self.wait(&mut w),
            Some(k @ ("udp-send" | "tcp-send")) => self.send(k, &mut w),
            Some("neigh") => self.neigh(&mut w),
            Some("stats") => Ok(match &self.iface {
                Some(i) => iface_stats(i),
                None => err("no --iface given"),
            }),
            Some(other) => Err(err(format!("unknown command {other:?}"))),
            None => Err(err("empty command")),
        };
        result.unwrap_or_else(|e| e)
    }

    fn neigh<'a>(&mut self, w: &mut impl Iterator<Item = &'a str>) -> Result<Value, Value> {
        let iface = self.iface.clone().ok_or_else(|| err("no --iface given"))?;
        let addr: std::net::IpAddr = parse_num(w.next(), "address")?;
        let mac = w
            .next()
            .filter(|m| m.len() == 17 && m.split(':').all(|b| u8::from_str_radix(b, 16).is_ok()))
            .ok_or_else(|| err("MAC missing or not aa:bb:cc:dd:ee:ff"))?;
        let out = std::process::Command::new("ip")
            .args([
                "neigh",
                "replace",
                &addr.to_string(),
                "lladdr",
                mac,
                "dev",
                &iface,
            ])
            .args(["nud", "permanent"])
            .output()
            .map_err(|e| err(format!("running ip: {e}")))?;
        if !out.status.success() {
            return Err(err(String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(json!({ "ok": true, "neigh": addr.to_string(), "mac": mac }))
    }

    fn ping<'a>(&mut self, w: &mut impl Iterator<Item = &'a str>) -> Result<Value, Value> {
        let to = parse_num(w.next(), "address")?;
        let count = parse_num(w.next(), "count")?;
        let r = crate::ping::ping(to, count, Duration::from_millis(10), Duration::from_secs(2));
        Ok(to_value(r))
    }

    fn start<'a>(
        &mut self,
        kind: &str,
        w: &mut impl Iterator<Item = &'a str>,
    ) -> Result<Value, Value> {
        let port: u16 = parse_num(w.next(), "port")?;
        let seed: u64 = parse_num(w.next(), "seed")?;
        if self.jobs.contains_key(&port) {
            return Err(err(format!("a receiver on port {port} is already running")));
        }
        let at: SocketAddr = SocketAddr::from(([0, 0, 0, 0], port));
        let job: Job = if kind == "udp-recv" {
            let r = udp::Receiver::bind(at, seed, self.window).map_err(err)?;
            std::thread::spawn(move || r.run(GIVE_UP))
        } else {
            let r = tcp::Receiver::bind(at, seed).map_err(err)?;
            std::thread::spawn(move || r.run(GIVE_UP))
        };
        self.jobs.insert(port, job);
        Ok(json!({ "ok": true, "listening": port, "mode": kind }))
    }

    fn wait<'a>(&mut self, w: &mut impl Iterator<Item = &'a str>) -> Result<Value, Value> {
        let port: u16 = parse_num(w.next(), "port")?;
        let job = self
            .jobs
            .remove(&port)
            .ok_or_else(|| err(format!("no receiver on port {port}")))?;
        Ok(match job.join() {
            Ok(r) => to_value(r),
            Err(_) => err("the receiver thread panicked"),
        })
    }

    fn send<'a>(
        &mut self,
        kind: &str,
        w: &mut impl Iterator<Item = &'a str>,
    ) -> Result<Value, Value> {
        let to: SocketAddr = parse_num(w.next(), "address:port")?;
        let bytes: u64 = parse_num(w.next(), "bytes")?;
        let seed: u64 = parse_num(w.next(), "seed")?;
        let r = if kind == "udp-send" {
            let shape = udp::Shape {
                chunk: self.chunk,
                window: self.window,
            };
            udp::send(to, bytes, seed, shape, GIVE_UP)
        } else {
            tcp::send(to, bytes, seed, GIVE_UP)
        };
        Ok(to_value(r))
    }
}

/// Serves one connection. Each answer goes out as `LENGTH JSON` (the JSON's length in bytes
/// first), so a reader on a serial line can tell a whole answer from one that lost bytes on
/// the way (seen under load in a TCG guest) and ask for it `again`, which repeats the last
/// answer without running anything.
fn serve(agent: &mut Agent, stream: UnixStream) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut last = String::new();
    for line in BufReader::new(stream).lines() {
        let line = line?;
        let line = line.trim_matches(|c: char| c.is_whitespace() || c.is_control());
        if line.is_empty() {
            continue;
        }
        if line == "again" {
            eprintln!("agent: again");
        } else {
            last = agent.command(line).to_string();
            eprintln!("agent: {line} => {last}");
        }
        writeln!(out, "{} {last}", last.len())?;
    }
    Ok(())
}

/// Serves connections on `path` one after another, for ever.
pub fn run(path: &Path, iface: Option<String>, chunk: usize, window: u32) -> io::Result<()> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    let mut agent = Agent {
        iface,
        window,
        chunk,
        jobs: BTreeMap::new(),
    };
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                if let Err(e) = serve(&mut agent, s) {
                    eprintln!("agent: connection ended: {e}");
                }
            }
            Err(e) => eprintln!("agent: accept: {e}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_commands_are_answered_not_fatal() {
        let mut a = Agent {
            iface: None,
            window: 8,
            chunk: 100,
            jobs: BTreeMap::new(),
        };
        assert_eq!(a.command("frobnicate")["ok"], false);
        assert_eq!(a.command("ping")["ok"], false);
        assert_eq!(a.command("wait 5")["ok"], false);
        assert_eq!(a.command("stats")["ok"], false);
        assert_eq!(a.command("udp-send 1.2.3.4:5 x 1")["ok"], false);
    }

    #[test]
    fn a_started_receiver_is_waited_for() {
        let mut a = Agent {
            iface: None,
            window: 8,
            chunk: 700,
            jobs: BTreeMap::new(),
        };
        let port = {
            // A free port: bind and release.
            let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap().port()
        };
        assert_eq!(a.command(&format!("udp-recv {port} 3"))["ok"], true);
        let sent = a.command(&format!("udp-send 127.0.0.1:{port} 20000 3"));
        assert_eq!(sent["ok"], true, "{sent}");
        let got = a.command(&format!("wait {port}"));
        assert_eq!(got["ok"], true, "{got}");
        assert_eq!(got["bytes"], 20000);
        assert_eq!(got["crc32"], sent["crc32"]);
    }
}
