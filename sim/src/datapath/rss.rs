//! Receive-side scaling: the hash a TIR computes over a received frame's headers, and the RQ
//! table entry it picks.
//!
//! A TIR's context names the hash function (`rx_hash_fn`: none, inverted XOR8 or Toeplitz),
//! the 40-byte Toeplitz key, whether the hash is symmetric, and which fields of which
//! protocols feed it (`rx_hash_field_selector_outer`: IPv4 or IPv6, TCP or UDP, and a mask of
//! source/destination address, source/destination port and IPsec SPI). The rules the model
//! follows, and why:
//!
//! - **Input.** The selected fields in the order source address, destination address, source
//!   port, destination port, SPI, each in network byte order: the order of Microsoft's RSS
//!   specification, whose published vectors the tests check. A field is hashed only when the
//!   frame has it *in the protocols the selector names*: addresses when the frame is IP of the
//!   selected version, ports when it also carries a whole header of the selected transport
//!   and is not an IPv4 fragment (a later fragment has no ports; hashing the first one's would
//!   split a datagram across queues), the SPI when it is ESP or AH. A frame that does not match
//!   the selector's types hashes over what it does have of them (a UDP frame at a TCP selector:
//!   the addresses), and a frame with none of them hashes over nothing: hash 0, hash type 0,
//!   RQT entry 0. (No public source says what the device does here, and mlx5e never asks:
//!   its flow tables send each traffic type to the TIR selecting that type, and non-IP
//!   traffic to a TIR that selects no field at all.)
//! - **Symmetric** (`rx_hash_symmetric`, which mlx5e sets with Toeplitz, `en/tir.c`, and
//!   reports to ethtool as `RXH_XFRM_SYM_XOR`): exactly the transformation
//!   `include/uapi/linux/ethtool.h` gives that flag: each source field is XORed with its
//!   destination counterpart and the result is fed to the hash in place of both, so swapping
//!   the two directions of a flow gives the same input. A pair only half selected is hashed
//!   as is. The inverted XOR8 is symmetric by nature (XOR commutes) and XORing a pair into
//!   both places would cancel it, so the flag leaves that function alone.
//! - **Toeplitz**: the standard RSS hash: for each input bit set, the 32 key bits starting at
//!   that bit's position are XORed into the result. Key bits past the 40 bytes read as zero
//!   (only inputs longer than 36 bytes reach them).
//! - **Inverted XOR8**: the XOR of all input bytes, one byte. Its RQT entry is that byte's low
//!   bits in reversed order, which is why mlx5e writes its table bit-reversed for this function
//!   (`en/rqt.c`, `mlx5e_calc_indir_rqns`): with the reversal undone, frames land on
//!   `indir[hash % size]`, the queue ethtool's table promises. The CQE reports the XOR byte.
//! - **RQT entry**: a Toeplitz (or absent) hash picks entry `hash % rqt_actual_size`: the low
//!   bits for the power-of-two tables mlx5e builds (`en/rqt.c` fills 256 entries, entry i for
//!   channel i % channels), as `ethtool -X` expects. A table whose size is not a power of two
//!   (mlx5e never makes one) is indexed by the remainder.
//! - **CQE**: `rss_hash_result` is the hash, `rss_hash_type` says which fields went in (two
//!   bits each for source and destination address and port, `spec/cqe.yaml`; the SPI is
//!   reported in both port codes); both 0 when the TIR does not hash.
//!
//! The hash depends only on the first [`PARSE_DEPTH`](super::parse::PARSE_DEPTH) bytes of a
//! frame (the deepest field, an AH SPI behind a VLAN tag and a 60-byte IPv4 header, ends at
//! byte 86), so the steering memo may keep it with the frame's steering.

use crate::exec::tir::{Tir, TirTarget};
use crate::model::Model;
use mlx5_prm::{
    CqeRssIpType, CqeRssL4Type, RxHashField, TircRxHashFn, CQE_RSS_DST_IP_SHIFT,
    CQE_RSS_DST_L4_SHIFT, CQE_RSS_SRC_IP_SHIFT, CQE_RSS_SRC_L4_SHIFT,
};

/// Bytes of a Toeplitz key.
pub(crate) const KEY_LEN: usize = 40;

/// IP protocol numbers the hash knows.
const TCP: u8 = 6;
const UDP: u8 = 17;
const ESP: u8 = 50;
const AH: u8 = 51;

/// The hash settings of a TIR context, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HashConfig {
    pub func: TircRxHashFn,
    pub symmetric: bool,
    pub key: [u8; KEY_LEN],
    /// rx_hash_field_selector_outer: l3_prot_type (IPv6), l4_prot_type (UDP), selected_fields.
    pub ipv6: bool,
    pub udp: bool,
    pub fields: u32,
}

impl HashConfig {
    fn selects(&self, f: RxHashField) -> bool {
        self.fields >> f.raw() & 1 == 1
    }
}

/// What a frame's headers offer a hash: the IP addresses, the TCP or UDP ports, the SPI.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    /// IPv4 (`Some(false)`) or IPv6 (`Some(true)`); `None` for other frames.
    pub ipv6: Option<bool>,
    /// Source and destination addresses: the first 4 bytes for IPv4, all 16 for IPv6.
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// IP protocol (TCP or UDP) and source and destination ports, when the frame carries
    /// them and is not an IPv4 fragment.
    pub ports: Option<(u8, [u8; 2], [u8; 2])>,
    /// The SPI of an ESP or AH header.
    pub spi: Option<[u8; 4]>,
}

/// The hash fields of `frame`, found as the receive parser finds headers
/// ([`parse`](super::parse)): one optional C-tag, IPv4 by its IHL or IPv6 with the transport
/// header right after the fixed header. Truncated headers offer what they hold whole.
pub(crate) fn fields(frame: &[u8]) -> Fields {
    let mut f = Fields::default();
    let b = |at: usize, n: usize| frame.get(at..at + n);
    let be16 = |at: usize| b(at, 2).map(|t| u16::from_be_bytes([t[0], t[1]]));
    let mut at = 12;
    if be16(at) == Some(0x8100) {
        at += 4;
    }
    let ip = at + 2;
    let (proto, l4, fragment) = match be16(at) {
        Some(0x0800) => match b(ip, 20) {
            Some(v4) => {
                f.ipv6 = Some(false);
                f.src[..4].copy_from_slice(&v4[12..16]);
                f.dst[..4].copy_from_slice(&v4[16..20]);
                let fragment = u16::from_be_bytes([v4[6], v4[7]]) & 0x3fff != 0;
                (v4[9], ip + usize::from(v4[0] & 0xf) * 4, fragment)
            }
            None => return f,
        },
        Some(0x86dd) => match b(ip, 40) {
            Some(v6) => {
                f.ipv6 = Some(true);
                f.src.copy_from_slice(&v6[8..24]);
                f.dst.copy_from_slice(&v6[24..40]);
                (v6[6], ip + 40, false)
            }
            None => return f,
        },
        _ => return f,
    };
    if fragment {
        return f;
    }
    match proto {
        TCP | UDP => {
            if let Some(p) = b(l4, 4) {
                f.ports = Some((proto, [p[0], p[1]], [p[2], p[3]]));
            }
        }
        ESP => f.spi = b(l4, 4).map(|s| [s[0], s[1], s[2], s[3]]),
        AH => f.spi = b(l4 + 4, 4).map(|s| [s[0], s[1], s[2], s[3]]),
        _ => {}
    }
    f
}

/// A computed hash: `rss_hash_result` and `rss_hash_type` of the CQE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hashed {
    pub value: u32,
    pub kind: u8,
}

/// The longest input: two IPv6 addresses, two ports, an SPI.
const MAX_INPUT: usize = 16 + 16 + 2 + 2 + 4;

/// The hash of `f` under `cfg` (see the module documentation for the rules).
pub(crate) fn hash(cfg: &HashConfig, f: &Fields) -> Hashed {
    if cfg.func == TircRxHashFn::None {
        return Hashed::default();
    }
    let mut input = [0u8; MAX_INPUT];
    let mut len = 0;
    let mut kind = 0u8;
    let mut push = |bytes: &[u8]| {
        input[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
    };
    let symmetric = cfg.symmetric && cfg.func == TircRxHashFn::Toeplitz;
    if f.ipv6 == Some(cfg.ipv6) {
        let n = if cfg.ipv6 { 16 } else { 4 };
        let (mut src, mut dst) = (f.src, f.dst);
        let (s, d) = (
            cfg.selects(RxHashField::SrcIp),
            cfg.selects(RxHashField::DstIp),
        );
        if symmetric && s && d {
            for k in 0..n {
                src[k] ^= dst[k];
            }
            dst = src;
        }
        let code = if cfg.ipv6 {
            CqeRssIpType::Ipv6
        } else {
            CqeRssIpType::Ipv4
        };
        if s {
            push(&src[..n]);
            kind |= code.raw() << CQE_RSS_SRC_IP_SHIFT;
        }
        if d {
            push(&dst[..n]);
            kind |= code.raw() << CQE_RSS_DST_IP_SHIFT;
        }
        let want = if cfg.udp { UDP } else { TCP };
        if let Some((proto, mut sport, mut dport)) = f.ports.filter(|p| p.0 == want) {
            let (s, d) = (
                cfg.selects(RxHashField::L4Sport),
                cfg.selects(RxHashField::L4Dport),
            );
            if symmetric && s && d {
                sport = [sport[0] ^ dport[0], sport[1] ^ dport[1]];
                dport = sport;
            }
            let code = if proto == UDP {
                CqeRssL4Type::Udp
            } else {
                CqeRssL4Type::Tcp
            };
            if s {
                push(&sport);
                kind |= code.raw() << CQE_RSS_SRC_L4_SHIFT;
            }
            if d {
                push(&dport);
                kind |= code.raw() << CQE_RSS_DST_L4_SHIFT;
            }
        }
        if let Some(spi) = f.spi.filter(|_| cfg.selects(RxHashField::IpsecSpi)) {
            push(&spi);
            let code = CqeRssL4Type::IpsecSpi.raw();
            kind |= code << CQE_RSS_SRC_L4_SHIFT | code << CQE_RSS_DST_L4_SHIFT;
        }
    }
    let input = &input[..len];
    let value = match cfg.func {
        TircRxHashFn::Toeplitz => toeplitz(&cfg.key, input),
        _ => u32::from(input.iter().fold(0u8, |a, b| a ^ b)),
    };
    Hashed { value, kind }
}

/// The Toeplitz hash of `input` under `key`: for every input bit set (most significant bit of
/// each byte first), the 32 key bits starting at that bit's position are XORed in. A 64-bit
/// window holds the key bits from the current byte's position on; bits past the key are 0.
pub(crate) fn toeplitz(key: &[u8; KEY_LEN], input: &[u8]) -> u32 {
    let mut window = u64::from_be_bytes([
        key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
    ]);
    let mut result = 0u32;
    for (next, &byte) in (8..).zip(input) {
        for bit in 0..8 {
            if byte << bit & 0x80 != 0 {
                result ^= (window >> (32 - bit)) as u32;
            }
        }
        window = window << 8 | u64::from(key.get(next).copied().unwrap_or(0));
    }
    result
}

/// The RQT entry (of `size`, at least 1) that hash `value` of function `func` picks.
pub(crate) fn entry(func: TircRxHashFn, value: u32, size: usize) -> usize {
    let size = size.max(1);
    match func {
        TircRxHashFn::InvertXor8 => {
            // The low log2(size) bits (rounded up), reversed.
            let bits = size.next_power_of_two().trailing_zeros();
            let reversed = if bits == 0 {
                0
            } else {
                (value & ((1 << bits) - 1)).reverse_bits() >> (32 - bits)
            };
            reversed as usize % size
        }
        _ => value as usize % size,
    }
}

/// Where a frame steered to TIR `tir` goes: the RQ, the flow tag of the entry that sent it,
/// and the hash. `f` holds the frame's hash fields once a hashing TIR needed them (parsed from
/// `frame` then, at most once per frame). `None` when the TIR is gone.
pub(crate) fn dispatch(
    m: &Model,
    tir: u32,
    flow_tag: u32,
    frame: &[u8],
    f: &mut Option<Fields>,
) -> Option<Delivery> {
    let t: &Tir = m.tirs.get(tir).ok()?;
    let hashed = if t.hash.func == TircRxHashFn::None {
        Hashed::default()
    } else {
        hash(&t.hash, f.get_or_insert_with(|| fields(frame)))
    };
    let rqn = match t.target {
        TirTarget::Rq(rqn) => rqn,
        TirTarget::Rqt(rqt) => {
            let rqs = &m.rqts.get(rqt).ok()?.rqs;
            *rqs.get(entry(t.hash.func, hashed.value, rqs.len()))?
        }
    };
    Some(Delivery {
        rqn,
        flow_tag,
        hash: hashed,
    })
}

/// One RQ a received frame goes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Delivery {
    pub rqn: u32,
    pub flow_tag: u32,
    pub hash: Hashed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(func: TircRxHashFn, fields: u32) -> HashConfig {
        HashConfig {
            func,
            symmetric: false,
            key: [0x5a; KEY_LEN],
            ipv6: false,
            udp: false,
            fields,
        }
    }

    /// Ethernet + IPv4 (IHL `ihl`) + 8 bytes of `proto` header.
    fn v4(proto: u8, ihl: u8, frag: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x40 | ihl, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&frag.to_be_bytes());
        f.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.resize(14 + usize::from(ihl) * 4, 0);
        f.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]);
        f
    }

    #[test]
    fn fields_follow_the_selected_protocols() {
        let tcp = fields(&v4(TCP, 5, 0));
        assert_eq!(tcp.ports, Some((TCP, [0x12, 0x34], [0x56, 0x78])));
        let all = 0b1111;
        let h = hash(&cfg(TircRxHashFn::Toeplitz, all), &tcp);
        assert_eq!(h.kind, 0b01_01_01_01, "IPv4 addresses, TCP ports");
        // A UDP selector takes only the addresses of a TCP frame.
        let mut udp_sel = cfg(TircRxHashFn::Toeplitz, all);
        udp_sel.udp = true;
        let ip_only = hash(&cfg(TircRxHashFn::Toeplitz, 0b11), &tcp);
        assert_eq!(hash(&udp_sel, &tcp), ip_only);
        assert_eq!(ip_only.kind, 0b0101);
        // An IPv6 selector takes nothing of an IPv4 frame.
        let mut v6_sel = cfg(TircRxHashFn::Toeplitz, all);
        v6_sel.ipv6 = true;
        assert_eq!(hash(&v6_sel, &tcp), Hashed::default());
        // Fragments offer no ports; options move them.
        assert_eq!(fields(&v4(TCP, 5, 0x2000)).ports, None);
        assert_eq!(
            fields(&v4(UDP, 7, 0)).ports.map(|p| p.1),
            Some([0x12, 0x34])
        );
        // ESP's SPI is its first word, AH's its second.
        assert_eq!(fields(&v4(ESP, 5, 0)).spi, Some([0x12, 0x34, 0x56, 0x78]));
        assert_eq!(fields(&v4(AH, 5, 0)).spi, Some([0x9a, 0xbc, 0xde, 0xf0]));
        let spi = hash(
            &cfg(TircRxHashFn::Toeplitz, 0b10011),
            &fields(&v4(ESP, 5, 0)),
        );
        assert_eq!(spi.kind, 0b11_11_01_01);
        // Truncated frames offer what they hold whole, and never panic.
        let full = v4(TCP, 5, 0);
        for n in 0..full.len() {
            let f = fields(&full[..n]);
            assert_eq!(f.ports.is_some(), n >= 38);
            assert_eq!(f.ipv6.is_some(), n >= 34);
        }
    }

    #[test]
    fn xor8_is_the_xor_of_the_selected_bytes() {
        let f = fields(&v4(UDP, 5, 0));
        let mut c = cfg(TircRxHashFn::InvertXor8, 0b1111);
        c.udp = true;
        let want = [10, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0x56, 0x78]
            .iter()
            .fold(0u8, |a, b| a ^ b);
        assert_eq!(hash(&c, &f).value, u32::from(want));
        c.symmetric = true;
        assert_eq!(hash(&c, &f).value, u32::from(want), "symmetric: unchanged");
        // No field selected (mlx5e's direct TIRs): 0.
        assert_eq!(
            hash(&cfg(TircRxHashFn::InvertXor8, 0), &f),
            Hashed::default()
        );
    }

    #[test]
    fn entries_from_the_low_bits() {
        assert_eq!(entry(TircRxHashFn::Toeplitz, 0x1234_5678, 256), 0x78);
        assert_eq!(entry(TircRxHashFn::Toeplitz, 7, 3), 1);
        assert_eq!(entry(TircRxHashFn::None, 0, 8), 0);
        assert_eq!(
            entry(TircRxHashFn::InvertXor8, 0b0000_0001, 256),
            0b1000_0000
        );
        assert_eq!(
            entry(TircRxHashFn::InvertXor8, 0b1100_0001, 256),
            0b1000_0011
        );
        assert_eq!(entry(TircRxHashFn::InvertXor8, 0b0110, 8), 0b011);
        assert_eq!(entry(TircRxHashFn::InvertXor8, 0xff, 1), 0);
        assert_eq!(entry(TircRxHashFn::Toeplitz, u32::MAX, 0), 0);
    }
}
