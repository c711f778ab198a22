//! The Ethernet queues under a real TCP/IP stack: [`Port`] is a [smoltcp] device over
//! [`EthQueues`], and [`Host`] an IPv4 host on it that answers ARP and ICMP echo for its
//! address, pings others and exchanges UDP datagrams. This is what the `ping` example and the
//! TAP integration test run against the Linux kernel's stack.
//!
//! Frames are copied between the packet buffers and the stack (the stack wants `&[u8]`, and
//! memory the device writes is never borrowed as a slice), one doorbell per frame sent: this
//! is for talking to peers, not for line rate; [`EthQueues::tx_batch`] and
//! [`EthQueues::rx_batch`] are the fast path.

use crate::backend::Backend;
use crate::eth::{EthQueues, Packet};
use crate::Error;
use mlx5_prm::rt::Bytes as _;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::{icmp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, HardwareAddress, Icmpv4Packet, Icmpv4Repr, IpAddress, IpCidr, IpEndpoint,
    Ipv4Address,
};
use std::time::Duration;

/// Largest Ethernet frame (without FCS) the port offers the stack: a 1500-byte IP MTU.
const ETHERNET_MTU: usize = 1514;
/// Received packets taken from the RQ at a time.
const RX_BATCH: usize = 32;

/// [`EthQueues`] as a smoltcp [`phy::Device`]. Errors of the queues cannot travel through
/// smoltcp's tokens; the first is kept for [`Port::take_error`] (and logged), and the frame
/// concerned is dropped.
pub struct Port<'p, B: Backend> {
    eth: EthQueues<'p, B>,
    /// Received packets not yet given to the stack, last to be given first.
    pending: Vec<Packet<'p>>,
    rx_frame: Vec<u8>,
    tx_frame: Vec<u8>,
    error: Option<Error>,
}

impl<'p, B: Backend> Port<'p, B> {
    /// Wraps `eth`.
    pub fn new(eth: EthQueues<'p, B>) -> Self {
        Port {
            eth,
            pending: Vec::with_capacity(RX_BATCH),
            rx_frame: Vec::new(),
            tx_frame: Vec::new(),
            error: None,
        }
    }

    /// The queues (for their counters, say).
    pub fn queues(&self) -> &EthQueues<'p, B> {
        &self.eth
    }

    /// The first error the queues reported since the last call.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// Unwraps the queues (to destroy them); received packets not yet taken go back to the
    /// pool.
    pub fn into_queues(self) -> EthQueues<'p, B> {
        // The packets not yet taken return to the pool as they drop.
        self.eth
    }

    /// A free buffer for a frame to send, reaping send completions if the pool is empty.
    fn has_tx_buffer(&mut self) -> bool {
        if self.eth.pool().free_buffers() == 0 {
            if let Err(e) = self.eth.tx_batch(&mut Vec::new()) {
                keep(&mut self.error, e);
            }
        }
        self.eth.pool().free_buffers() > 0
    }
}

/// Keeps the first error (logging every one).
fn keep(error: &mut Option<Error>, e: Error) {
    log::warn!("net: {e}");
    error.get_or_insert(e);
}

/// A received frame, copied out of its packet buffer.
pub struct RxToken<'a> {
    frame: &'a [u8],
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.frame)
    }
}

/// Room to build one frame, which is then sent with its own doorbell.
pub struct TxToken<'a, 'p, B: Backend> {
    eth: &'a mut EthQueues<'p, B>,
    frame: &'a mut Vec<u8>,
    error: &'a mut Option<Error>,
}

impl<B: Backend> phy::TxToken for TxToken<'_, '_, B> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        self.frame.clear();
        self.frame.resize(len, 0);
        let r = f(self.frame);
        let Some(mut p) = self.eth.pool().alloc() else {
            let e = Error::QueueFull {
                queue: "packet pool",
                capacity: self.eth.pool().buffers(),
            };
            keep(self.error, e);
            return r;
        };
        if let Err(e) = p.write(self.frame) {
            keep(self.error, e);
            return r;
        }
        let mut pkts = vec![p];
        if let Err(e) = self.eth.tx_batch(&mut pkts) {
            keep(self.error, e);
        }
        // A packet not sent goes back to the pool as it drops.
        r
    }
}

impl<'p, B: Backend> phy::Device for Port<'p, B> {
    type RxToken<'a>
        = RxToken<'a>
    where
        Self: 'a;
    type TxToken<'a>
        = TxToken<'a, 'p, B>
    where
        Self: 'a;

    fn receive(&mut self, _: Instant) -> Option<(RxToken<'_>, TxToken<'_, 'p, B>)> {
        if self.pending.is_empty() {
            match self.eth.rx_batch(&mut self.pending, RX_BATCH) {
                Ok(_) => self.pending.reverse(),
                Err(e) => keep(&mut self.error, e),
            }
        }
        let p = self.pending.pop()?;
        self.rx_frame.resize(p.len(), 0);
        p.data().read_bytes(0, &mut self.rx_frame);
        drop(p);
        if !self.has_tx_buffer() {
            // The stack may answer this frame; without a buffer the answer is dropped, as
            // under any overload, and the frame is still delivered.
            log::debug!("net: no buffer for a reply");
        }
        Some((
            RxToken {
                frame: &self.rx_frame,
            },
            TxToken {
                eth: &mut self.eth,
                frame: &mut self.tx_frame,
                error: &mut self.error,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<TxToken<'_, 'p, B>> {
        if !self.has_tx_buffer() {
            return None;
        }
        Some(TxToken {
            eth: &mut self.eth,
            frame: &mut self.tx_frame,
            error: &mut self.error,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.eth.pool().buf_size().min(ETHERNET_MTU);
        caps
    }
}

/// Why a [`Host`] exchange did not complete.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// No answer within the time allowed.
    #[error("no answer from {peer} within {waited:?}")]
    Timeout {
        /// Whom we asked.
        peer: String,
        /// How long we waited.
        waited: Duration,
    },
    /// The caller asked to stop.
    #[error("interrupted")]
    Interrupted,
    /// The stack refused to queue the request.
    #[error("the stack refused to send to {peer}: {why}")]
    Send {
        /// Whom we tried to reach.
        peer: String,
        /// The stack's reason.
        why: String,
    },
    /// The queues reported an error.
    #[error(transparent)]
    Driver(#[from] Error),
}

/// An answer to an echo request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoReply {
    /// Sequence number.
    pub seq: u16,
    /// Payload (checked against the request's by [`Host::ping`]: a reply whose payload differs
    /// is ignored).
    pub payload: Vec<u8>,
    /// Time from handing the request to the stack to seeing the reply.
    pub rtt: Duration,
}

/// ICMP identifier of the host's own echo requests.
const PING_IDENT: u16 = 0x6d78;
/// Local UDP port the host sends from.
pub const UDP_PORT: u16 = 40_000;

/// An IPv4 host on a [`Port`]: smoltcp's interface (ARP, ICMP echo replies) with one ICMP and
/// one UDP socket.
pub struct Host<'p, B: Backend> {
    port: Port<'p, B>,
    iface: Interface,
    sockets: SocketSet<'static>,
    icmp: SocketHandle,
    udp: SocketHandle,
}

impl<'p, B: Backend> Host<'p, B> {
    /// A host with hardware address `mac` and IPv4 address `ip`/`prefix` on `port`.
    pub fn new(mut port: Port<'p, B>, mac: [u8; 6], ip: [u8; 4], prefix: u8) -> Self {
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        config.random_seed = u64::from_be_bytes([0, 0, mac[0], mac[1], mac[2], mac[3], mac[4], 7]);
        let mut iface = Interface::new(config, &mut port, Instant::now());
        iface.update_ip_addrs(|a| {
            // A fresh interface has room for its first address.
            let _ = a.push(IpCidr::new(
                IpAddress::v4(ip[0], ip[1], ip[2], ip[3]),
                prefix,
            ));
        });
        let mut sockets = SocketSet::new(Vec::new());
        let buffer =
            |n| icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; n], vec![0; n * 1600]);
        let mut ping = icmp::Socket::new(buffer(8), buffer(8));
        // Binding a fresh socket to an identifier cannot fail.
        let _ = ping.bind(icmp::Endpoint::Ident(PING_IDENT));
        let ubuf =
            |n| udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; n], vec![0; n * 1600]);
        let mut dgram = udp::Socket::new(ubuf(16), ubuf(16));
        let _ = dgram.bind(UDP_PORT);
        let icmp = sockets.add(ping);
        let udp = sockets.add(dgram);
        Host {
            port,
            iface,
            sockets,
            icmp,
            udp,
        }
    }

    /// Lets the stack work: received frames in, answers and queued requests out. Call often
    /// (it never blocks); the first queue error since the last call is returned.
    pub fn poll(&mut self) -> Result<(), NetError> {
        self.iface
            .poll(Instant::now(), &mut self.port, &mut self.sockets);
        self.port.take_error().map_or(Ok(()), |e| Err(e.into()))
    }

    /// Polls for `how_long` (answering whoever asks meanwhile), or until `stop` returns true.
    pub fn serve(&mut self, how_long: Duration, stop: &dyn Fn() -> bool) -> Result<(), NetError> {
        let end = std::time::Instant::now() + how_long;
        while std::time::Instant::now() < end && !stop() {
            self.poll()?;
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Sends an echo request with `seq` and `payload` to `to` and waits up to `timeout` for
    /// the matching reply (resolving `to`'s MAC by ARP first if needed).
    pub fn ping(
        &mut self,
        to: [u8; 4],
        seq: u16,
        payload: &[u8],
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<EchoReply, NetError> {
        let peer = Ipv4Address::from(to);
        let request = Icmpv4Repr::EchoRequest {
            ident: PING_IDENT,
            seq_no: seq,
            data: payload,
        };
        let start = std::time::Instant::now();
        {
            let socket = self.sockets.get_mut::<icmp::Socket>(self.icmp);
            let bytes = socket
                .send(request.buffer_len(), IpAddress::Ipv4(peer))
                .map_err(|e| NetError::Send {
                    peer: peer.to_string(),
                    why: e.to_string(),
                })?;
            request.emit(
                &mut Icmpv4Packet::new_unchecked(bytes),
                &smoltcp::phy::ChecksumCapabilities::default(),
            );
        }
        let (icmp, peer_ip) = (self.icmp, IpAddress::Ipv4(peer));
        self.wait(&peer.to_string(), timeout, stop, |sockets| {
            let socket = sockets.get_mut::<icmp::Socket>(icmp);
            while let Ok((bytes, from)) = socket.recv() {
                let rtt = start.elapsed();
                let Ok(packet) = Icmpv4Packet::new_checked(bytes) else {
                    continue;
                };
                let Ok(Icmpv4Repr::EchoReply {
                    ident,
                    seq_no,
                    data,
                }) = Icmpv4Repr::parse(&packet, &smoltcp::phy::ChecksumCapabilities::default())
                else {
                    continue;
                };
                if from == peer_ip && ident == PING_IDENT && seq_no == seq && data == payload {
                    return Some(EchoReply {
                        seq,
                        payload: data.to_vec(),
                        rtt,
                    });
                }
            }
            None
        })
    }

    /// Polls until `check` finds the answer, `timeout` passes or `stop` returns true.
    fn wait<T>(
        &mut self,
        peer: &str,
        timeout: Duration,
        stop: &dyn Fn() -> bool,
        mut check: impl FnMut(&mut SocketSet<'static>) -> Option<T>,
    ) -> Result<T, NetError> {
        let start = std::time::Instant::now();
        while start.elapsed() < timeout {
            if stop() {
                return Err(NetError::Interrupted);
            }
            self.poll()?;
            if let Some(answer) = check(&mut self.sockets) {
                return Ok(answer);
            }
            std::thread::yield_now();
        }
        Err(NetError::Timeout {
            peer: peer.to_string(),
            waited: timeout,
        })
    }

    /// Sends `payload` from [`UDP_PORT`] to `to`:`port` and waits up to `timeout` for a
    /// datagram back from there; returns it with the round-trip time.
    pub fn udp_round_trip(
        &mut self,
        to: [u8; 4],
        port: u16,
        payload: &[u8],
        timeout: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<(Vec<u8>, Duration), NetError> {
        let peer = IpEndpoint::new(IpAddress::v4(to[0], to[1], to[2], to[3]), port);
        let start = std::time::Instant::now();
        self.sockets
            .get_mut::<udp::Socket>(self.udp)
            .send_slice(payload, peer)
            .map_err(|e| NetError::Send {
                peer: peer.to_string(),
                why: e.to_string(),
            })?;
        let udp = self.udp;
        self.wait(&peer.to_string(), timeout, stop, |sockets| {
            let socket = sockets.get_mut::<udp::Socket>(udp);
            while let Ok((data, meta)) = socket.recv() {
                if meta.endpoint == peer {
                    return Some((data.to_vec(), start.elapsed()));
                }
            }
            None
        })
    }

    /// The port (for the queues' counters).
    pub fn port(&self) -> &Port<'p, B> {
        &self.port
    }

    /// Unwraps the port.
    pub fn into_port(self) -> Port<'p, B> {
        self.port
    }
}
