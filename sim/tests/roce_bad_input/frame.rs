//! RoCEv2 frames written and read by the test itself, independently of the model's
//! `datapath/roce/wire.rs`: Ethernet II, IPv4 (no options), UDP to port 4791, the base
//! transport header (BTH), the extended headers as raw bytes, the payload padded to four
//! bytes, and the invariant CRC (ICRC) of the RoCEv2 annex (IBTA vol. 1, annex A17): a CRC-32
//! (the Ethernet polynomial, reflected, all-ones start and final inversion) over eight 0xff
//! bytes standing for the absent local route header, then the IP header with TOS, TTL and
//! header checksum set to all ones, the UDP header with its checksum set to all ones, the BTH
//! with its reserved byte after the P_Key set to all ones, and the rest of the packet up to
//! the ICRC, which follows least significant byte first. The CRC here is a plain bit-by-bit
//! loop, not the model's table.

#![allow(dead_code)]

pub const UDP_PORT: u16 = 4791;
pub const ETH: usize = 14;
pub const IP: usize = 20;
pub const UDP: usize = 8;
pub const BTH: usize = 12;
/// Where the BTH starts in a frame built here.
pub const BTH_AT: usize = ETH + IP + UDP;

/// RC opcodes (IBTA table 38, transport 000b).
pub mod op {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_ONLY: u8 = 0x04;
    pub const WRITE_FIRST: u8 = 0x06;
    pub const WRITE_MIDDLE: u8 = 0x07;
    pub const WRITE_LAST: u8 = 0x08;
    pub const WRITE_ONLY: u8 = 0x0a;
    pub const READ_REQUEST: u8 = 0x0c;
    pub const READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const READ_RESPONSE_LAST: u8 = 0x0f;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
}

/// AETH syndromes: bits 7:5 the kind (000 ACK, 001 RNR NAK, 011 NAK), 4:0 the credit count
/// or NAK code.
pub mod syn {
    /// ACK with the "invalid" credit count 31 (no end-to-end flow control).
    pub const ACK: u8 = 0x1f;
    pub const NAK_SEQUENCE: u8 = 0x60;
    pub const NAK_INVALID_REQUEST: u8 = 0x61;
    pub const NAK_REMOTE_ACCESS: u8 = 0x62;
}

/// CRC-32 as Ethernet computes it, one bit at a time, continuing from `crc` (start with
/// 0xffff_ffff, invert at the end).
pub fn crc32_bits(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// The ICRC of `ip`, an IPv4 packet (20-byte header) carrying UDP and a BTH, from its first
/// byte up to where the ICRC goes.
pub fn icrc(ip: &[u8]) -> u32 {
    let mut masked = ip.to_vec();
    masked[1] = 0xff; // TOS (DSCP, ECN)
    masked[8] = 0xff; // TTL
    masked[10] = 0xff; // header checksum
    masked[11] = 0xff;
    if masked.len() >= IP + UDP {
        masked[IP + 6] = 0xff; // UDP checksum
        masked[IP + 7] = 0xff;
    }
    if masked.len() > IP + UDP + 4 {
        masked[IP + UDP + 4] = 0xff; // BTH reserved byte
    }
    let c = crc32_bits(0xffff_ffff, &[0xff; 8]);
    !crc32_bits(c, &masked)
}

/// The IPv4 header checksum over `h` (its checksum field zero).
pub fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// One end of the conversation: MAC and IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
}

/// A request or response packet to build.
#[derive(Debug, Clone, Default)]
pub struct Pkt {
    pub opcode: u8,
    pub se: bool,
    pub ack_req: bool,
    pub dqpn: u32,
    pub psn: u32,
    /// Extended headers, as they go on the wire.
    pub ext: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Pkt {
    pub fn new(opcode: u8, dqpn: u32, psn: u32) -> Pkt {
        Pkt {
            opcode,
            dqpn,
            psn,
            ack_req: true,
            ..Pkt::default()
        }
    }
    /// Appends an RDMA extended transport header (virtual address, R_Key, DMA length).
    pub fn reth(mut self, va: u64, rkey: u32, len: u32) -> Pkt {
        self.ext.extend_from_slice(&va.to_be_bytes());
        self.ext.extend_from_slice(&rkey.to_be_bytes());
        self.ext.extend_from_slice(&len.to_be_bytes());
        self
    }
    /// Appends an atomic extended transport header.
    pub fn atomic(mut self, va: u64, rkey: u32, swap_add: u64, compare: u64) -> Pkt {
        self.ext.extend_from_slice(&va.to_be_bytes());
        self.ext.extend_from_slice(&rkey.to_be_bytes());
        self.ext.extend_from_slice(&swap_add.to_be_bytes());
        self.ext.extend_from_slice(&compare.to_be_bytes());
        self
    }
    /// Appends an ACK extended transport header.
    pub fn aeth(mut self, syndrome: u8, msn: u32) -> Pkt {
        self.ext
            .extend_from_slice(&((u32::from(syndrome) << 24) | (msn & 0xff_ffff)).to_be_bytes());
        self
    }
    pub fn payload(mut self, p: &[u8]) -> Pkt {
        self.payload = p.to_vec();
        self
    }
    pub fn unacked(mut self) -> Pkt {
        self.ack_req = false;
        self
    }

    /// The transport part: BTH (pad count from the payload), extended headers, payload, pad.
    pub fn transport(&self) -> Vec<u8> {
        let pad = (4 - self.payload.len() % 4) % 4;
        let mut t = vec![self.opcode, (u8::from(self.se) << 7) | ((pad as u8) << 4)];
        t.extend_from_slice(&0xffffu16.to_be_bytes());
        t.extend_from_slice(&(self.dqpn & 0xff_ffff).to_be_bytes());
        t.extend_from_slice(
            &((u32::from(self.ack_req) << 31) | (self.psn & 0xff_ffff)).to_be_bytes(),
        );
        t.extend_from_slice(&self.ext);
        t.extend_from_slice(&self.payload);
        t.extend(std::iter::repeat_n(0u8, pad));
        t
    }
}

/// A frame from `src` to `dst` carrying `transport` (BTH onwards, without ICRC), with the
/// IP and UDP lengths, IP checksum and ICRC right.
pub fn wrap(src: &Addr, dst: &Addr, sport: u16, transport: &[u8]) -> Vec<u8> {
    let udp_len = UDP + transport.len() + 4;
    let mut f = Vec::with_capacity(ETH + IP + udp_len);
    f.extend_from_slice(&dst.mac);
    f.extend_from_slice(&src.mac);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((IP + udp_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src.ip);
    f.extend_from_slice(&dst.ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&UDP_PORT.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(transport);
    seal(&mut f);
    f
}

/// Recomputes the IP checksum of frame `f` and appends its ICRC.
pub fn seal(f: &mut Vec<u8>) {
    fix_ip_checksum(f);
    let c = icrc(&f[ETH..]);
    f.extend_from_slice(&c.to_le_bytes());
}

/// Recomputes the IPv4 header checksum of frame `f` in place.
pub fn fix_ip_checksum(f: &mut [u8]) {
    f[ETH + 10] = 0;
    f[ETH + 11] = 0;
    let c = ip_checksum(&f[ETH..ETH + IP]);
    f[ETH + 10..ETH + 12].copy_from_slice(&c.to_be_bytes());
}

/// Recomputes the ICRC of a whole frame (its last four bytes).
pub fn reseal(f: &mut Vec<u8>) {
    let n = f.len() - 4;
    f.truncate(n);
    seal(f);
}

/// `p` as a frame from `src` to `dst`.
pub fn build(src: &Addr, dst: &Addr, p: &Pkt) -> Vec<u8> {
    wrap(src, dst, 0xc123, &p.transport())
}

/// A packet the model sent, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub src: Addr,
    pub dst: Addr,
    pub opcode: u8,
    pub dqpn: u32,
    pub psn: u32,
    pub ack_req: bool,
    /// AETH syndrome and MSN, for the opcodes that carry one.
    pub aeth: Option<(u8, u32)>,
    /// The original value of an atomic acknowledge.
    pub atomic_orig: Option<u64>,
    pub payload: Vec<u8>,
    /// The ICRC on the wire equals the one computed here.
    pub icrc_ok: bool,
}

/// Parses a frame the model sent (Ethernet II, IPv4 without options, UDP 4791); `None` for
/// anything else or anything cut short.
pub fn parse(f: &[u8]) -> Option<Seen> {
    if f.len() < BTH_AT + BTH + 4 || f[12..14] != [0x08, 0x00] || f[ETH] != 0x45 {
        return None;
    }
    let ip_len = usize::from(u16::from_be_bytes([f[ETH + 2], f[ETH + 3]]));
    let udp_dst = u16::from_be_bytes([f[ETH + IP + 2], f[ETH + IP + 3]]);
    if f[ETH + 9] != 17 || udp_dst != UDP_PORT || ETH + ip_len > f.len() {
        return None;
    }
    let end = ETH + ip_len;
    let wire = u32::from_le_bytes(f[end - 4..end].try_into().ok()?);
    let icrc_ok = wire == icrc(&f[ETH..end - 4]);
    let t = &f[BTH_AT..end - 4];
    let opcode = t[0];
    let pad = usize::from((t[1] >> 4) & 3);
    let aeth_len = match opcode {
        op::READ_RESPONSE_FIRST
        | op::READ_RESPONSE_LAST
        | op::READ_RESPONSE_ONLY
        | op::ACKNOWLEDGE
        | op::ATOMIC_ACKNOWLEDGE => 4,
        _ => 0,
    };
    let atomic_len = if opcode == op::ATOMIC_ACKNOWLEDGE {
        8
    } else {
        0
    };
    let body = BTH + aeth_len + atomic_len;
    if t.len() < body + pad {
        return None;
    }
    let word = |at: usize| u32::from_be_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]]);
    let aeth = (aeth_len > 0).then(|| {
        let w = word(BTH);
        ((w >> 24) as u8, w & 0xff_ffff)
    });
    let atomic_orig =
        (atomic_len > 0).then(|| (u64::from(word(BTH + 4)) << 32) | u64::from(word(BTH + 8)));
    let mac = |at: usize| -> [u8; 6] { f[at..at + 6].try_into().unwrap() };
    let ip4 = |at: usize| -> [u8; 4] { f[at..at + 4].try_into().unwrap() };
    Some(Seen {
        src: Addr {
            mac: mac(6),
            ip: ip4(ETH + 12),
        },
        dst: Addr {
            mac: mac(0),
            ip: ip4(ETH + 16),
        },
        opcode,
        dqpn: word(4) & 0xff_ffff,
        psn: word(8) & 0xff_ffff,
        ack_req: t[8] & 0x80 != 0,
        aeth,
        atomic_orig,
        payload: t[body..t.len() - pad].to_vec(),
        icrc_ok,
    })
}

/// The frame of `p` cut to `n` bytes before its ICRC, with the IP and UDP lengths made to
/// agree with the cut and the ICRC computed over what is left: only the header checks can
/// tell.
pub fn cut(src: &Addr, dst: &Addr, p: &Pkt, n: usize) -> Vec<u8> {
    let mut f = build(src, dst, p);
    f.truncate(n);
    let ip_len = (n - ETH + 4) as u16;
    f[ETH + 2..ETH + 4].copy_from_slice(&ip_len.to_be_bytes());
    let udp_len = ip_len - IP as u16;
    let u = ETH + IP;
    f[u + 4..u + 6].copy_from_slice(&udp_len.to_be_bytes());
    seal(&mut f);
    f
}
