//! ARP for the model's IPv4 address on the driver's raw Ethernet queues: answers the requests
//! for our address (so the peer's kernel can send RoCE v2 frames to us) and resolves the
//! peer's MAC from the IPv4 address in its GID. smoltcp's host (`mlx5_driver::net::Host`)
//! answers ARP too but keeps its neighbour cache to itself; this is all the example needs.

use mlx5_driver::backend::Backend;
use mlx5_driver::eth::{EthQueues, Packet, Pool};
use mlx5_prm::rt::Bytes as _;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const ETHERTYPE_ARP: u16 = 0x0806;
const REQUEST: u16 = 1;
const REPLY: u16 = 2;
/// Ethernet header and the IPv4-over-Ethernet ARP body.
const ARP_LEN: usize = 14 + 28;
/// The shortest Ethernet frame without FCS.
const MIN_FRAME: usize = 60;

/// One ARP packet's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket {
    /// 1 request, 2 reply.
    pub op: u16,
    /// Sender MAC and IPv4 address.
    pub sha: [u8; 6],
    /// Sender IPv4 address.
    pub spa: Ipv4Addr,
    /// Target MAC (zero in a request).
    pub tha: [u8; 6],
    /// Target IPv4 address.
    pub tpa: Ipv4Addr,
}

impl ArpPacket {
    /// Parses an Ethernet frame holding an IPv4-over-Ethernet ARP packet.
    pub fn parse(f: &[u8]) -> Option<ArpPacket> {
        if f.len() < ARP_LEN || u16::from_be_bytes([f[12], f[13]]) != ETHERTYPE_ARP {
            return None;
        }
        let a = &f[14..ARP_LEN];
        // Hardware type Ethernet, protocol IPv4, lengths 6 and 4.
        if a[..6] != [0, 1, 8, 0, 6, 4] {
            return None;
        }
        let ip = |b: &[u8]| Ipv4Addr::new(b[0], b[1], b[2], b[3]);
        Some(ArpPacket {
            op: u16::from_be_bytes([a[6], a[7]]),
            sha: a[8..14].try_into().ok()?,
            spa: ip(&a[14..18]),
            tha: a[18..24].try_into().ok()?,
            tpa: ip(&a[24..28]),
        })
    }

    /// The frame carrying this packet to `dst`, padded to the minimum frame size.
    pub fn frame(&self, dst: [u8; 6]) -> Vec<u8> {
        let mut f = Vec::with_capacity(MIN_FRAME);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&self.sha);
        f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4]);
        f.extend_from_slice(&self.op.to_be_bytes());
        f.extend_from_slice(&self.sha);
        f.extend_from_slice(&self.spa.octets());
        f.extend_from_slice(&self.tha);
        f.extend_from_slice(&self.tpa.octets());
        f.resize(MIN_FRAME, 0);
        f
    }
}

/// The ARP side of the port.
pub struct Arp<'p, B: Backend> {
    eth: EthQueues<'p, B>,
    pool: &'p Pool<'p, B>,
    mac: [u8; 6],
    ip: Ipv4Addr,
    rx: Vec<Packet<'p>>,
    /// Requests answered.
    pub answered: u64,
}

impl<'p, B: Backend> Arp<'p, B> {
    /// ARP for `ip` at `mac` on `eth` (whose steering must pass `mac` and broadcast).
    pub fn new(eth: EthQueues<'p, B>, pool: &'p Pool<'p, B>, mac: [u8; 6], ip: Ipv4Addr) -> Self {
        Arp {
            eth,
            pool,
            mac,
            ip,
            rx: Vec::new(),
            answered: 0,
        }
    }

    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        let mut p = self.pool.alloc().ok_or("no free packet buffer")?;
        p.write(frame).map_err(|e| e.to_string())?;
        let mut v = vec![p];
        self.eth.tx_batch(&mut v).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Handles what arrived: answers requests for our address and returns the senders seen
    /// (every ARP packet teaches its sender's MAC).
    pub fn poll(&mut self) -> Result<Vec<(Ipv4Addr, [u8; 6])>, String> {
        self.rx.clear();
        self.eth
            .rx_batch(&mut self.rx, 32)
            .map_err(|e| format!("receiving: {e}"))?;
        let mut learned = Vec::new();
        let packets: Vec<ArpPacket> = self
            .rx
            .drain(..)
            .filter_map(|p| {
                let mut f = vec![0u8; p.len().min(MIN_FRAME)];
                p.data().read_bytes(0, &mut f);
                ArpPacket::parse(&f)
            })
            .collect();
        for a in packets {
            learned.push((a.spa, a.sha));
            if a.op == REQUEST && a.tpa == self.ip {
                let reply = ArpPacket {
                    op: REPLY,
                    sha: self.mac,
                    spa: self.ip,
                    tha: a.sha,
                    tpa: a.spa,
                };
                self.send(&reply.frame(a.sha))?;
                self.answered += 1;
            }
        }
        Ok(learned)
    }

    /// Asks for `ip`'s MAC (a broadcast request every 200 ms) until an ARP packet from `ip`
    /// arrives, for at most `timeout`.
    pub fn resolve(&mut self, ip: Ipv4Addr, timeout: Duration) -> Result<[u8; 6], String> {
        let end = Instant::now() + timeout;
        let mut next = Instant::now();
        while Instant::now() < end {
            if Instant::now() >= next {
                let req = ArpPacket {
                    op: REQUEST,
                    sha: self.mac,
                    spa: self.ip,
                    tha: [0; 6],
                    tpa: ip,
                };
                self.send(&req.frame([0xff; 6]))?;
                next = Instant::now() + Duration::from_millis(200);
            }
            if let Some((_, mac)) = self.poll()?.into_iter().find(|(from, _)| *from == ip) {
                return Ok(mac);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Err(format!("no ARP answer from {ip} within {timeout:?}"))
    }

    /// The queues back, for teardown.
    pub fn into_queues(self) -> EthQueues<'p, B> {
        self.eth
    }
}
