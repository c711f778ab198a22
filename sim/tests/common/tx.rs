//! A transmit queue as `mlx5e` drives it, for the tests of the send path: WQEs built by hand
//! (control segment, Ethernet segment with inline headers or a VLAN insert request, inline
//! and data segments), posted at the producer counter and published in the doorbell record,
//! the doorbell rung with the last WQE's first 8 bytes; frames caught by a link; and the
//! test's own packet builder, parser and RFC 1071 checksum to judge the frames with.

use super::dp::Node;
use super::eth::Eth;
use mlx5_prm::cmd;
use mlx5_prm::rt::Bytes;
use mlx5_prm::{QuerySqOut, SendOpcode, SqState};
use mlx5_sim::{Config, Link};
use std::sync::{Arc, Mutex};

pub const MAC_A: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 1];
pub const MAC_B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

/// A link that keeps every frame put on it.
#[derive(Default)]
pub struct Capture(Mutex<Vec<Vec<u8>>>);

impl Link for Capture {
    fn transmit(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

/// One send WQE being built: its 16-byte units after the control segment.
#[derive(Debug, Clone)]
pub struct Wqe {
    pub opcode: u8,
    /// Ask for a CQE (ce = 2, what mlx5e sets on the WQE it rings the doorbell for).
    pub signaled: bool,
    /// The units after the control segment.
    pub body: Vec<u8>,
}

impl Wqe {
    /// A NOP of one unit (as `mlx5e_post_nop`).
    pub fn nop(signaled: bool) -> Wqe {
        Wqe {
            opcode: SendOpcode::Nop.raw(),
            signaled,
            body: Vec::new(),
        }
    }

    /// A SEND or LSO WQE whose Ethernet segment has `cs_flags` (bit 7 L4, bit 6 L3), `mss`
    /// and the inline headers `hdr` (as `mlx5e_sq_xmit_wqe` copies them).
    pub fn eth(opcode: SendOpcode, cs_flags: u8, mss: u16, hdr: &[u8]) -> Wqe {
        let mut body = vec![0u8; 16];
        body[4] = cs_flags;
        body[6..8].copy_from_slice(&mss.to_be_bytes());
        body[12..14].copy_from_slice(&(hdr.len() as u16).to_be_bytes());
        let first = hdr.len().min(2);
        body[14..14 + first].copy_from_slice(&hdr[..first]);
        body.extend_from_slice(&hdr[first..]);
        body.resize(body.len().div_ceil(16) * 16, 0);
        Wqe {
            opcode: opcode.raw(),
            signaled: true,
            body,
        }
    }

    /// A SEND without inline headers asking for a VLAN tag (`mlx5e`'s eseg->insert: type bit
    /// 15, bit 0 for a service tag, then the TCI).
    pub fn send_vlan(cs_flags: u8, tci: u16, svlan: bool) -> Wqe {
        let mut w = Wqe::eth(SendOpcode::Send, cs_flags, 0, &[]);
        let ty: u16 = 0x8000 | u16::from(svlan);
        w.body[12..14].copy_from_slice(&ty.to_be_bytes());
        w.body[14..16].copy_from_slice(&tci.to_be_bytes());
        w
    }

    /// Adds a data segment.
    pub fn data(mut self, lkey: u32, addr: u64, len: u32) -> Wqe {
        self.body.extend_from_slice(&len.to_be_bytes());
        self.body.extend_from_slice(&lkey.to_be_bytes());
        self.body.extend_from_slice(&addr.to_be_bytes());
        self
    }

    /// Adds an inline data segment (bit 31 and the length, the bytes, padding to 16).
    pub fn inline(mut self, bytes: &[u8]) -> Wqe {
        self.body
            .extend_from_slice(&(0x8000_0000u32 | bytes.len() as u32).to_be_bytes());
        self.body.extend_from_slice(bytes);
        self.body.resize(self.body.len().div_ceil(16) * 16, 0);
        self
    }

    pub fn unsignaled(mut self) -> Wqe {
        self.signaled = false;
        self
    }

    /// WQEBBs it occupies.
    pub fn wqebbs(&self) -> u16 {
        (16 + self.body.len()).div_ceil(64) as u16
    }
}

/// An SQ of 64 WQEBBs (CQ of 16) whose frames a [`Capture`] link catches, with a data buffer
/// of 64 KiB (`e.buf`, key `e.key`).
pub struct Tx {
    pub e: Eth,
    pub link: Arc<Capture>,
}

impl Tx {
    pub fn new() -> Tx {
        Tx::on(Node::inline())
    }

    pub fn with_config(config: Config) -> Tx {
        Tx::on(Node::new(super::Host::new(config)))
    }

    fn on(n: Node) -> Tx {
        let e = Eth::new(n, &[MAC_A]);
        let link = Arc::new(Capture::default());
        e.n.dev().attach_link(link.clone());
        Tx { e, link }
    }

    /// The producer counter (WQEBBs posted).
    pub fn pc(&self) -> u16 {
        self.e.sq_pc.get()
    }

    /// Writes `w` at the producer counter (control segment filled in: index, SQ, DS count,
    /// CQ update when signaled), advances the counter and publishes it in the doorbell
    /// record; returns the first 8 bytes for [`Tx::ring`].
    pub fn post(&self, w: &Wqe) -> u64 {
        let pc = self.pc();
        let mut bytes = vec![0u8; 16];
        bytes.extend_from_slice(&w.body);
        let ds = (bytes.len() / 16) as u32;
        assert!(ds < 64, "a WQE of {ds} units");
        bytes[0..4].copy_from_slice(&((u32::from(pc) << 8) | u32::from(w.opcode)).to_be_bytes());
        bytes[4..8].copy_from_slice(&((self.e.sqn << 8) | ds).to_be_bytes());
        bytes[11] = if w.signaled { 2 << 2 } else { 0 };
        bytes.resize(bytes.len().div_ceil(64) * 64, 0);
        for (k, block) in bytes.chunks(64).enumerate() {
            let slot = (u64::from(pc) + k as u64) % 64;
            self.e.n.write(self.e.sq_ring + slot * 64, block);
        }
        let next = pc.wrapping_add(w.wqebbs());
        self.e.sq_pc.set(next);
        self.e
            .n
            .publish(self.e.sq_dbr + 4, &u32::from(next).to_be_bytes());
        bytes.read_be64(0)
    }

    /// Rings the doorbell with the first 8 bytes of the last WQE posted.
    pub fn ring(&self, first8: u64) {
        self.e.ring_send(first8);
    }

    /// Posts `w` and rings for it.
    pub fn send(&self, w: &Wqe) {
        let first8 = self.post(w);
        self.ring(first8);
    }

    /// The frames the link caught since the last call.
    pub fn frames(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.link.0.lock().unwrap())
    }

    /// QUERY_SQ's view of the SQ's state.
    pub fn state(&self) -> SqState {
        let r = self
            .e
            .n
            .host
            .run::<cmd::QuerySq>(0, 0, 0, |i| i.set_sqn(self.e.sqn))
            .ok();
        QuerySqOut::new_unchecked(&r.out[..])
            .sq_context()
            .state()
            .unwrap()
    }

    /// MODIFY_SQ from `from` to `to`.
    pub fn modify(&self, from: SqState, to: SqState) {
        self.e
            .n
            .host
            .run::<cmd::ModifySq>(0, 0, 0, |i| {
                i.set_sqn(self.e.sqn);
                i.set_sq_state(from);
                i.ctx_mut().set_state(to);
            })
            .ok();
    }

    /// A buffer of `len` bytes in its own memory key (lr): (address, key).
    pub fn buffer(&self, data: &[u8]) -> (u64, u32) {
        let r = self.e.n.alloc(data.len().max(1));
        self.e.n.write(r.iova, data);
        let key = self
            .e
            .n
            .mkey(self.e.n.pd, r.iova, data.len().max(1) as u64, "lr");
        (r.iova, key)
    }
}

impl Default for Tx {
    fn default() -> Tx {
        Tx::new()
    }
}

/// RFC 1071: the ones'-complement sum of big-endian 16-bit words (odd byte padded), folded.
pub fn ones(data: &[u8], mut acc: u64) -> u16 {
    for (i, b) in data.iter().enumerate() {
        acc += if i % 2 == 0 {
            u64::from(*b) << 8
        } else {
            u64::from(*b)
        };
    }
    while acc > 0xffff {
        acc = (acc >> 16) + (acc & 0xffff);
    }
    acc as u16
}

/// What a test frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub v6: bool,
    pub tcp: bool,
    /// 802.1Q tag (TCI) after the MACs.
    pub vlan: Option<u16>,
    /// IPv4 options (words beyond 5) and TCP options (words beyond 5).
    pub ip_opt_words: u8,
    pub tcp_opt_words: u8,
    /// TCP flags of the headers the driver writes.
    pub flags: u8,
}

impl Spec {
    pub const TCP4: Spec = Spec {
        v6: false,
        tcp: true,
        vlan: None,
        ip_opt_words: 0,
        tcp_opt_words: 0,
        flags: 0x18,
    };

    /// Headers as the stack hands them to a driver for a GSO packet of `payload` bytes:
    /// lengths of the whole packet, IPv4 ID 0x1234, TCP sequence 1000, checksums left as
    /// garbage (the device must fill them in).
    pub fn headers(&self, payload: usize) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&MAC_B);
        h.extend_from_slice(&MAC_A);
        if let Some(tci) = self.vlan {
            h.extend_from_slice(&0x8100u16.to_be_bytes());
            h.extend_from_slice(&tci.to_be_bytes());
        }
        let l4_len = if self.tcp {
            20 + 4 * usize::from(self.tcp_opt_words)
        } else {
            8
        };
        let proto = if self.tcp { 6 } else { 17 };
        if self.v6 {
            h.extend_from_slice(&0x86ddu16.to_be_bytes());
            h.extend_from_slice(&[0x60, 0x01, 0x23, 0x45]);
            h.extend_from_slice(&((l4_len + payload) as u16).to_be_bytes());
            h.extend_from_slice(&[proto, 64]);
            h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            h.extend_from_slice(&0x0800u16.to_be_bytes());
            let ihl = 5 + self.ip_opt_words;
            let total = (usize::from(ihl) * 4 + l4_len + payload) as u16;
            h.extend_from_slice(&[0x40 | ihl, 0]);
            h.extend_from_slice(&total.to_be_bytes());
            h.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, proto, 0xde, 0xad]);
            h.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
            // Options: NOPs (type 1).
            h.extend(std::iter::repeat_n(1u8, 4 * usize::from(self.ip_opt_words)));
        }
        if self.tcp {
            h.extend_from_slice(&[0x9c, 0x40, 0x01, 0xbb]);
            h.extend_from_slice(&1000u32.to_be_bytes());
            h.extend_from_slice(&77u32.to_be_bytes());
            h.extend_from_slice(&[(5 + self.tcp_opt_words) << 4, self.flags]);
            h.extend_from_slice(&[0xff, 0xff, 0xbe, 0xef, 0, 0]);
            h.extend(std::iter::repeat_n(
                1u8,
                4 * usize::from(self.tcp_opt_words),
            ));
        } else {
            h.extend_from_slice(&[0x9c, 0x40, 0x13, 0x88]);
            h.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
            h.extend_from_slice(&[0xbe, 0xef]);
        }
        h
    }
}

/// A frame as the test's own parser reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub vlan: Option<u16>,
    pub v6: bool,
    /// IPv4 total length or IPv6 payload length.
    pub ip_len: u16,
    pub ip_id: u16,
    /// The IPv4 header checksum verifies (IPv6: true).
    pub ip_ok: bool,
    pub tcp: bool,
    pub seq: u32,
    pub flags: u8,
    pub udp_len: u16,
    /// The TCP or UDP checksum verifies over the pseudo-header and the segment.
    pub l4_ok: bool,
    pub payload: Vec<u8>,
}

fn be16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

/// Parses an Ethernet frame with at most one 802.1Q tag, IPv4 or IPv6, TCP or UDP; checks
/// that the IP lengths cover exactly the rest of the frame.
pub fn parse(f: &[u8]) -> Parsed {
    let mut at = 12;
    let mut vlan = None;
    if be16(f, at) == 0x8100 {
        vlan = Some(be16(f, at + 2));
        at += 4;
    }
    let ty = be16(f, at);
    let l3 = at + 2;
    let (v6, ip_len, ip_id, ip_ok, proto, l4, pseudo) = match ty {
        0x0800 => {
            let ihl = usize::from(f[l3] & 0xf) * 4;
            let total = be16(f, l3 + 2);
            assert_eq!(l3 + usize::from(total), f.len(), "IPv4 total length");
            let ok = ones(&f[l3..l3 + ihl], 0) == 0xffff;
            let proto = f[l3 + 9];
            let len = f.len() - l3 - ihl;
            let pseudo = u64::from(ones(&f[l3 + 12..l3 + 20], 0)) + u64::from(proto) + len as u64;
            (false, total, be16(f, l3 + 4), ok, proto, l3 + ihl, pseudo)
        }
        0x86dd => {
            let plen = be16(f, l3 + 4);
            assert_eq!(l3 + 40 + usize::from(plen), f.len(), "IPv6 payload length");
            let proto = f[l3 + 6];
            let pseudo =
                u64::from(ones(&f[l3 + 8..l3 + 40], 0)) + u64::from(proto) + u64::from(plen);
            (true, plen, 0, true, proto, l3 + 40, pseudo)
        }
        other => panic!("EtherType {other:#x}"),
    };
    let l4_ok = ones(&f[l4..], pseudo) == 0xffff;
    let (tcp, seq, flags, udp_len, data) = match proto {
        6 => {
            let doff = usize::from(f[l4 + 12] >> 4) * 4;
            let seq = u32::from_be_bytes([f[l4 + 4], f[l4 + 5], f[l4 + 6], f[l4 + 7]]);
            (true, seq, f[l4 + 13], 0, l4 + doff)
        }
        17 => {
            let len = be16(f, l4 + 4);
            assert_eq!(l4 + usize::from(len), f.len(), "UDP length");
            assert_ne!(be16(f, l4 + 6), 0, "a UDP checksum was sent");
            (false, 0, 0, len, l4 + 8)
        }
        other => panic!("protocol {other}"),
    };
    Parsed {
        vlan,
        v6,
        ip_len,
        ip_id,
        ip_ok,
        tcp,
        seq,
        flags,
        udp_len,
        l4_ok,
        payload: f[data..].to_vec(),
    }
}

/// A payload of `len` bytes no two nearby positions of which are equal.
pub fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}
