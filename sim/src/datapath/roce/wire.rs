//! RoCEv2 frames as they cross the port: Ethernet (optionally VLAN-tagged), IPv4 or IPv6, UDP
//! to port 4791, the InfiniBand base transport header (BTH), the extended headers the opcode
//! calls for, the payload padded to four bytes, and the invariant CRC (ICRC).
//!
//! The layouts are the InfiniBand Architecture Specification's (volume 1, chapter 9, the
//! transport headers) with the RoCEv2 annex (A17: UDP encapsulation and the ICRC over the IP
//! and UDP headers with their variant fields masked). Parsing checks every length against the
//! frame and never reads past it; a frame that is not RoCEv2 at all is told apart from one
//! that is RoCEv2 but broken, as only the latter is the RoCE path's to drop and count.

use super::icrc;
use crate::datapath::csum;

/// UDP destination port of RoCEv2.
pub(crate) const UDP_PORT: u16 = 4791;
pub(crate) const BTH_LEN: usize = 12;
pub(crate) const RETH_LEN: usize = 16;
pub(crate) const AETH_LEN: usize = 4;
pub(crate) const ATOMIC_ETH_LEN: usize = 28;
pub(crate) const ATOMIC_ACK_LEN: usize = 8;
pub(crate) const IMM_LEN: usize = 4;
pub(crate) const ICRC_LEN: usize = 4;
/// The default (full-membership) partition key: RoCE ports have only this one.
pub(crate) const DEFAULT_PKEY: u16 = 0xffff;

const ETH_LEN: usize = 14;
const VLAN_LEN: usize = 4;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const IP_PROTO_UDP: u8 = 17;

/// The RC opcodes (transport 000b in bits 7:5, the operation in 4:0).
pub(crate) mod op {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_IMM: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_IMM: u8 = 0x05;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_LAST_IMM: u8 = 0x09;
    pub const WRITE_ONLY: u8 = 0x0a;
    pub const WRITE_ONLY_IMM: u8 = 0x0b;
    pub const READ_REQUEST: u8 = 0x0c;
    pub const READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const READ_RESPONSE_LAST: u8 = 0x0f;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    pub const SEND_LAST_INV: u8 = 0x16;
    pub const SEND_ONLY_INV: u8 = 0x17;
}

/// What a packet of a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Send,
    Write,
    Read,
    Atomic,
    ReadResponse,
    Ack,
    AtomicAck,
}

/// Where a packet sits in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pos {
    First,
    Middle,
    Last,
    Only,
}

/// The shape of one opcode: its operation, its place in the message, and the extended
/// headers that follow its BTH (in this order: RETH, AtomicETH, AETH, AtomicAckETH, ImmDt,
/// IETH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub kind: Kind,
    pub pos: Pos,
    pub reth: bool,
    pub atomic_eth: bool,
    pub aeth: bool,
    pub atomic_ack: bool,
    pub imm: bool,
    pub ieth: bool,
    /// The packet may carry payload.
    pub payload: bool,
}

impl Shape {
    const fn new(kind: Kind, pos: Pos) -> Shape {
        Shape {
            kind,
            pos,
            reth: false,
            atomic_eth: false,
            aeth: false,
            atomic_ack: false,
            imm: false,
            ieth: false,
            payload: false,
        }
    }

    /// Bytes of extended headers after the BTH.
    pub const fn ext_len(&self) -> usize {
        (self.reth as usize) * RETH_LEN
            + (self.atomic_eth as usize) * ATOMIC_ETH_LEN
            + (self.aeth as usize) * AETH_LEN
            + (self.atomic_ack as usize) * ATOMIC_ACK_LEN
            + (self.imm as usize) * IMM_LEN
            + (self.ieth as usize) * IMM_LEN
    }

    /// A request (as opposed to a response the requester receives).
    pub const fn is_request(&self) -> bool {
        matches!(
            self.kind,
            Kind::Send | Kind::Write | Kind::Read | Kind::Atomic
        )
    }

    /// The last (or only) packet of its message.
    pub const fn ends_message(&self) -> bool {
        matches!(self.pos, Pos::Last | Pos::Only)
    }
}

/// The shape of RC opcode `opcode`; `None` for anything else (other transports, reserved
/// codes).
pub(crate) const fn shape(opcode: u8) -> Option<Shape> {
    use Kind::*;
    use Pos::*;
    let mut s = match opcode {
        op::SEND_FIRST => Shape::new(Send, First),
        op::SEND_MIDDLE => Shape::new(Send, Middle),
        op::SEND_LAST | op::SEND_LAST_IMM | op::SEND_LAST_INV => Shape::new(Send, Last),
        op::SEND_ONLY | op::SEND_ONLY_IMM | op::SEND_ONLY_INV => Shape::new(Send, Only),
        op::WRITE_FIRST => Shape::new(Write, First),
        op::WRITE_MIDDLE => Shape::new(Write, Middle),
        op::WRITE_LAST | op::WRITE_LAST_IMM => Shape::new(Write, Last),
        op::WRITE_ONLY | op::WRITE_ONLY_IMM => Shape::new(Write, Only),
        op::READ_REQUEST => Shape::new(Read, Only),
        op::READ_RESPONSE_FIRST => Shape::new(ReadResponse, First),
        op::READ_RESPONSE_MIDDLE => Shape::new(ReadResponse, Middle),
        op::READ_RESPONSE_LAST => Shape::new(ReadResponse, Last),
        op::READ_RESPONSE_ONLY => Shape::new(ReadResponse, Only),
        op::ACKNOWLEDGE => Shape::new(Ack, Only),
        op::ATOMIC_ACKNOWLEDGE => Shape::new(AtomicAck, Only),
        op::COMPARE_SWAP | op::FETCH_ADD => Shape::new(Atomic, Only),
        _ => return None,
    };
    s.payload = matches!(s.kind, Send | Write | ReadResponse);
    s.reth = matches!(
        opcode,
        op::WRITE_FIRST | op::WRITE_ONLY | op::WRITE_ONLY_IMM
    ) || opcode == op::READ_REQUEST;
    s.atomic_eth = matches!(s.kind, Atomic);
    s.aeth = matches!(s.kind, Ack | AtomicAck)
        || matches!(
            opcode,
            op::READ_RESPONSE_FIRST | op::READ_RESPONSE_LAST | op::READ_RESPONSE_ONLY
        );
    s.atomic_ack = matches!(s.kind, AtomicAck);
    s.imm = matches!(
        opcode,
        op::SEND_LAST_IMM | op::SEND_ONLY_IMM | op::WRITE_LAST_IMM | op::WRITE_ONLY_IMM
    );
    s.ieth = matches!(opcode, op::SEND_LAST_INV | op::SEND_ONLY_INV);
    Some(s)
}

/// The base transport header's fields (the P_Key is always the default one, TVer 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bth {
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// MigReq.
    pub mig: bool,
    /// Pad bytes at the end of the payload (0..=3).
    pub pad: u8,
    pub pkey: u16,
    /// Destination QP (24 bits).
    pub dqpn: u32,
    /// AckReq.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

/// The RDMA extended transport header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub len: u32,
}

/// The atomic extended transport header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AtomicEth {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

/// The ACK extended transport header: syndrome and message sequence number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Aeth {
    pub syndrome: u8,
    pub msn: u32,
}

/// AETH syndromes: bits 7:5 say ACK (000), RNR NAK (001) or NAK (011); bits 4:0 hold the
/// credit count, the RNR timer or the NAK code.
pub(crate) mod aeth {
    /// ACK without end-to-end credits ("invalid credit count": flow control not used).
    pub const ACK: u8 = 0x1f;
    pub const RNR_NAK: u8 = 0x20;
    pub const NAK_PSN_SEQUENCE: u8 = 0x60;
    pub const NAK_INVALID_REQUEST: u8 = 0x61;
    pub const NAK_REMOTE_ACCESS: u8 = 0x62;
    pub const NAK_REMOTE_OPERATIONAL: u8 = 0x63;
    /// The kind bits of a syndrome.
    pub const fn kind(syndrome: u8) -> u8 {
        syndrome & 0xe0
    }
    pub const KIND_ACK: u8 = 0x00;
    pub const KIND_RNR: u8 = 0x20;
    pub const KIND_NAK: u8 = 0x60;
}

/// A RoCEv2 packet parsed out of a frame; `payload` borrows the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packet<'f> {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// IPv4 rather than IPv6.
    pub v4: bool,
    /// Addresses as 16 bytes (IPv4 in the IPv4-mapped form).
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub sport: u16,
    pub bth: Bth,
    pub shape: Shape,
    pub reth: Reth,
    pub atomic: AtomicEth,
    pub aeth: Aeth,
    pub atomic_ack: u64,
    /// ImmDt or IETH, whichever the opcode has.
    pub imm: u32,
    pub payload: &'f [u8],
}

/// Why a frame is not a packet the RoCE path can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not UDP to port 4791 over IP: not RoCEv2 (the Ethernet path's).
    NotRoce,
    /// RoCEv2, but a header is cut short or its lengths do not add up.
    Malformed,
    /// The ICRC does not match.
    Icrc,
    /// A transport version other than 0, or an opcode that is not RC.
    Opcode,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

/// The IPv4-mapped IPv6 form of an IPv4 address.
pub(crate) fn mapped(v4: [u8; 4]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[10] = 0xff;
    a[11] = 0xff;
    a[12..].copy_from_slice(&v4);
    a
}

/// Where the IP packet starts and whether it is IPv4, for a frame carrying UDP to port 4791;
/// `None` for any other frame. Cheap: the Ethernet path asks it of every frame it receives
/// while RoCE is on.
pub(crate) fn locate(frame: &[u8]) -> Option<(usize, bool)> {
    if frame.len() < ETH_LEN + IPV4_LEN + UDP_LEN {
        return None;
    }
    let mut l3 = ETH_LEN;
    let mut ethertype = be16(frame, 12);
    if ethertype == ETHERTYPE_VLAN {
        l3 += VLAN_LEN;
        ethertype = be16(frame, 16);
    }
    let (v4, proto_at, l4) = match ethertype {
        ETHERTYPE_IPV4 => (true, l3 + 9, l3 + usize::from(frame[l3] & 0xf) * 4),
        ETHERTYPE_IPV6 => (false, l3 + 6, l3 + IPV6_LEN),
        _ => return None,
    };
    if frame.len() < l4 + UDP_LEN || frame[proto_at] != IP_PROTO_UDP {
        return None;
    }
    (be16(frame, l4 + 2) == UDP_PORT).then_some((l3, v4))
}

/// Parses a frame; see [`Refused`] for what it reports.
pub(crate) fn parse(frame: &[u8]) -> Result<Packet<'_>, Refused> {
    let (l3, v4) = locate(frame).ok_or(Refused::NotRoce)?;
    let mut p = Packet {
        src_mac: [0; 6],
        dst_mac: [0; 6],
        v4,
        src_ip: [0; 16],
        dst_ip: [0; 16],
        sport: 0,
        bth: Bth {
            opcode: 0,
            se: false,
            mig: false,
            pad: 0,
            pkey: 0,
            dqpn: 0,
            ack_req: false,
            psn: 0,
        },
        shape: Shape::new(Kind::Ack, Pos::Only),
        reth: Reth::default(),
        atomic: AtomicEth::default(),
        aeth: Aeth::default(),
        atomic_ack: 0,
        imm: 0,
        payload: &[],
    };
    p.dst_mac.copy_from_slice(&frame[0..6]);
    p.src_mac.copy_from_slice(&frame[6..12]);
    // The IP packet, cut to its own length (an Ethernet minimum may pad the frame).
    let ip_end = if v4 {
        let ihl = usize::from(frame[l3] & 0xf) * 4;
        let flags_frag = be16(frame, l3 + 6);
        // Options are not part of RoCEv2's ICRC layout, and a fragment is not a whole packet.
        if frame[l3] >> 4 != 4 || ihl != IPV4_LEN || flags_frag & 0x3fff != 0 {
            return Err(Refused::Malformed);
        }
        p.src_ip = mapped([
            frame[l3 + 12],
            frame[l3 + 13],
            frame[l3 + 14],
            frame[l3 + 15],
        ]);
        p.dst_ip = mapped([
            frame[l3 + 16],
            frame[l3 + 17],
            frame[l3 + 18],
            frame[l3 + 19],
        ]);
        l3 + usize::from(be16(frame, l3 + 2))
    } else {
        if frame[l3] >> 4 != 6 {
            return Err(Refused::Malformed);
        }
        p.src_ip.copy_from_slice(&frame[l3 + 8..l3 + 24]);
        p.dst_ip.copy_from_slice(&frame[l3 + 24..l3 + 40]);
        l3 + IPV6_LEN + usize::from(be16(frame, l3 + 4))
    };
    let l4 = l3 + if v4 { IPV4_LEN } else { IPV6_LEN };
    if ip_end > frame.len() || ip_end < l4 + UDP_LEN {
        return Err(Refused::Malformed);
    }
    let udp_end = l4 + usize::from(be16(frame, l4 + 4));
    if udp_end != ip_end || udp_end < l4 + UDP_LEN + BTH_LEN + ICRC_LEN {
        return Err(Refused::Malformed);
    }
    p.sport = be16(frame, l4);
    let ip = &frame[l3..ip_end];
    let (hdrs, icrc_bytes) = ip.split_at(ip.len() - ICRC_LEN);
    if icrc::compute(hdrs, v4).to_le_bytes() != icrc_bytes {
        return Err(Refused::Icrc);
    }
    let bth_at = l4 + UDP_LEN;
    let t = &frame[bth_at..udp_end - ICRC_LEN];
    p.bth = Bth {
        opcode: t[0],
        se: t[1] & 0x80 != 0,
        mig: t[1] & 0x40 != 0,
        pad: (t[1] >> 4) & 0x3,
        pkey: be16(t, 2),
        dqpn: be32(t, 4) & 0xff_ffff,
        ack_req: t[8] & 0x80 != 0,
        psn: be32(t, 8) & 0xff_ffff,
    };
    if t[1] & 0xf != 0 {
        return Err(Refused::Opcode);
    }
    p.shape = shape(p.bth.opcode).ok_or(Refused::Opcode)?;
    let ext = p.shape.ext_len();
    if t.len() < BTH_LEN + ext + usize::from(p.bth.pad) {
        return Err(Refused::Malformed);
    }
    let mut at = BTH_LEN;
    if p.shape.reth {
        p.reth = Reth {
            va: be64(t, at),
            rkey: be32(t, at + 8),
            len: be32(t, at + 12),
        };
        at += RETH_LEN;
    }
    if p.shape.atomic_eth {
        p.atomic = AtomicEth {
            va: be64(t, at),
            rkey: be32(t, at + 8),
            swap_add: be64(t, at + 12),
            compare: be64(t, at + 20),
        };
        at += ATOMIC_ETH_LEN;
    }
    if p.shape.aeth {
        let w = be32(t, at);
        p.aeth = Aeth {
            syndrome: (w >> 24) as u8,
            msn: w & 0xff_ffff,
        };
        at += AETH_LEN;
    }
    if p.shape.atomic_ack {
        p.atomic_ack = be64(t, at);
        at += ATOMIC_ACK_LEN;
    }
    if p.shape.imm || p.shape.ieth {
        p.imm = be32(t, at);
        at += IMM_LEN;
    }
    let payload = &t[at..t.len() - usize::from(p.bth.pad)];
    if !p.shape.payload && (!payload.is_empty() || p.bth.pad != 0) {
        return Err(Refused::Malformed);
    }
    p.payload = payload;
    Ok(p)
}

/// How frames to one peer are addressed: from the sending QP's address path and the port's
/// RoCE address table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Path {
    pub dmac: [u8; 6],
    pub smac: [u8; 6],
    /// The VLAN tag's TCI, if the source entry has a VLAN.
    pub vlan: Option<u16>,
    pub v4: bool,
    pub sip: [u8; 16],
    pub dip: [u8; 16],
    /// Traffic class (DSCP and ECN).
    pub tclass: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub sport: u16,
}

/// Extended headers being assembled after a BTH.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ext {
    bytes: [u8; ATOMIC_ETH_LEN + AETH_LEN + ATOMIC_ACK_LEN],
    len: usize,
}

impl Ext {
    pub fn new() -> Ext {
        Ext {
            bytes: [0; ATOMIC_ETH_LEN + AETH_LEN + ATOMIC_ACK_LEN],
            len: 0,
        }
    }
    fn put(mut self, b: &[u8]) -> Ext {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
        self
    }
    pub fn reth(self, r: Reth) -> Ext {
        self.put(&r.va.to_be_bytes())
            .put(&r.rkey.to_be_bytes())
            .put(&r.len.to_be_bytes())
    }
    pub fn atomic(self, a: AtomicEth) -> Ext {
        self.put(&a.va.to_be_bytes())
            .put(&a.rkey.to_be_bytes())
            .put(&a.swap_add.to_be_bytes())
            .put(&a.compare.to_be_bytes())
    }
    pub fn aeth(self, a: Aeth) -> Ext {
        self.put(&((u32::from(a.syndrome) << 24) | (a.msn & 0xff_ffff)).to_be_bytes())
    }
    pub fn atomic_ack(self, orig: u64) -> Ext {
        self.put(&orig.to_be_bytes())
    }
    pub fn imm(self, imm: u32) -> Ext {
        self.put(&imm.to_be_bytes())
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Appends the frame of one packet to `out`: headers from `path` and `bth` (whose `pad` is
/// set here from the payload's length), `ext`, `payload`, the pad bytes and the ICRC; the
/// IPv4 header checksum and, over IPv6, the UDP checksum are filled in (over IPv4 the UDP
/// checksum is 0, as RoCEv2 allows).
pub(crate) fn build(out: &mut Vec<u8>, path: &Path, bth: &Bth, ext: &[u8], payload: &[u8]) {
    let start = out.len();
    let pad = (4 - payload.len() % 4) % 4;
    let udp_len = UDP_LEN + BTH_LEN + ext.len() + payload.len() + pad + ICRC_LEN;
    out.extend_from_slice(&path.dmac);
    out.extend_from_slice(&path.smac);
    if let Some(tci) = path.vlan {
        out.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        out.extend_from_slice(&tci.to_be_bytes());
    }
    let l3 = out.len() - start;
    if path.v4 {
        out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let total = (IPV4_LEN + udp_len) as u16;
        out.extend_from_slice(&[0x45, path.tclass]);
        out.extend_from_slice(&total.to_be_bytes());
        // Identification 0 with Don't Fragment: the packet is never fragmented.
        out.extend_from_slice(&[0, 0, 0x40, 0, path.hop_limit, IP_PROTO_UDP, 0, 0]);
        out.extend_from_slice(&path.sip[12..]);
        out.extend_from_slice(&path.dip[12..]);
    } else {
        out.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        let w = (6u32 << 28) | (u32::from(path.tclass) << 20) | (path.flow_label & 0xf_ffff);
        out.extend_from_slice(&w.to_be_bytes());
        out.extend_from_slice(&(udp_len as u16).to_be_bytes());
        out.extend_from_slice(&[IP_PROTO_UDP, path.hop_limit]);
        out.extend_from_slice(&path.sip);
        out.extend_from_slice(&path.dip);
    }
    out.extend_from_slice(&path.sport.to_be_bytes());
    out.extend_from_slice(&UDP_PORT.to_be_bytes());
    out.extend_from_slice(&(udp_len as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    let b0 = (u8::from(bth.se) << 7) | (u8::from(bth.mig) << 6) | ((pad as u8) << 4);
    out.extend_from_slice(&[bth.opcode, b0]);
    out.extend_from_slice(&bth.pkey.to_be_bytes());
    out.extend_from_slice(&(bth.dqpn & 0xff_ffff).to_be_bytes());
    let w = (u32::from(bth.ack_req) << 31) | (bth.psn & 0xff_ffff);
    out.extend_from_slice(&w.to_be_bytes());
    out.extend_from_slice(ext);
    out.extend_from_slice(payload);
    out.extend_from_slice(&[0; 3][..pad]);
    let ip_start = start + l3 + 2;
    let crc = icrc::compute(&out[ip_start..], path.v4);
    out.extend_from_slice(&crc.to_le_bytes());
    csum::tx(&mut out[start..], path.v4, !path.v4);
}

#[cfg(test)]
mod tests;
