//! The receive parser: a frame's L2, L3 and L4 headers as the outer-headers part of
//! fte_match_param (what steering matches on) and as the header types its CQE reports.
//!
//! Only the first 64-byte part of fte_match_param (outer_headers) depends on the frame; the
//! other parts are zero for every frame, so the key is that part alone and steering reads
//! zeros past it (see [`Criteria::matches`](super::matcher::Criteria::matches)). Building the
//! whole 512-byte key per frame was a measurable share of a frame's cost.

use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{CqeL3HdrType, CqeL4HdrType, FteMatchSetLyr24};

/// Bytes of fte_match_param the parser fills in: the outer_headers part.
pub(crate) const PARSED: usize = 64;

/// Bytes of a frame the parser may read: a VLAN tag (18 bytes of L2), an IPv4 header of 15
/// words (60), and the TCP header up to its flags (14). Frames that agree on these bytes
/// (and, when shorter, on their length) parse alike.
pub(crate) const PARSE_DEPTH: usize = 18 + 60 + 14;

/// What the parser learned about a frame.
pub(crate) struct Parsed {
    /// The frame as fte_match_param would see it: its first part (outer headers); the rest
    /// is 0.
    pub key: [u8; PARSED],
    pub l3: CqeL3HdrType,
    pub l4: CqeL4HdrType,
}

/// Parses the L2, L3 and L4 headers of a frame into the outer headers of a match key.
#[cfg(test)]
pub(crate) fn parse(frame: &[u8]) -> Parsed {
    let mut p = Parsed::new();
    parse_into(frame, &mut p);
    p
}

impl Parsed {
    /// Nothing parsed yet.
    pub fn new() -> Parsed {
        Parsed {
            key: [0u8; PARSED],
            l3: CqeL3HdrType::None,
            l4: CqeL4HdrType::None,
        }
    }
}

/// [`parse`] into `p` (fresh from [`Parsed::new`]), in place: returning the key by value
/// stalled on store forwarding.
pub(crate) fn parse_into(frame: &[u8], p: &mut Parsed) {
    let Parsed { key, l3, l4 } = p;
    // The source and destination addresses, written once the header view is done.
    let mut addrs: [Option<(usize, &[u8])>; 2] = [None, None];
    let mut h = FteMatchSetLyr24::new_unchecked(&mut key[..]);
    let b = |at: usize, n: usize| frame.get(at..at + n);
    if let (Some(d), Some(s)) = (b(0, 6), b(6, 6)) {
        h.set_dmac_47_16(d.read_be32(0));
        h.set_dmac_15_0(u16::from_be_bytes([d[4], d[5]]));
        h.set_smac_47_16(s.read_be32(0));
        h.set_smac_15_0(u16::from_be_bytes([s[4], s[5]]));
    }
    let mut at = 12;
    let mut ethertype = b(at, 2).map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
    if ethertype == 0x8100 {
        if let Some(tci) = b(at + 2, 2) {
            let tci = u16::from_be_bytes([tci[0], tci[1]]);
            h.set_cvlan_tag(true);
            h.set_first_prio((tci >> 13) as u8);
            h.set_first_cfi(tci >> 12 & 1 == 1);
            h.set_first_vid(tci & 0xfff);
        }
        at += 4;
        ethertype = b(at, 2).map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
    }
    h.set_ethertype(ethertype);
    let ip = at + 2;
    let (proto, l4_at) = match ethertype {
        0x0800 => match b(ip, 20) {
            Some(v4) => {
                *l3 = CqeL3HdrType::Ipv4;
                h.set_ip_version(4);
                h.set_ttl_hoplimit(v4[8]);
                h.set_ip_protocol(v4[9]);
                h.set_ip_dscp(v4[1] >> 2);
                h.set_ip_ecn(v4[1] & 3);
                h.set_ipv4_ihl(v4[0] & 0xf);
                // IPv4 addresses sit in the last 4 bytes of the 16-byte address fields.
                let src = FteMatchSetLyr24::SRC_IPV4_SRC_IPV6.bit_offset / 8 + 12;
                let dst = FteMatchSetLyr24::DST_IPV4_DST_IPV6.bit_offset / 8 + 12;
                let frag = u16::from_be_bytes([v4[6], v4[7]]) & 0x3fff != 0;
                h.set_frag(frag);
                addrs = [Some((src, &v4[12..16])), Some((dst, &v4[16..20]))];
                (Some(v4[9]), ip + usize::from(v4[0] & 0xf) * 4)
            }
            None => (None, 0),
        },
        0x86dd => match b(ip, 40) {
            Some(v6) => {
                *l3 = CqeL3HdrType::Ipv6;
                h.set_ip_version(6);
                h.set_ip_protocol(v6[6]);
                h.set_ttl_hoplimit(v6[7]);
                let src = FteMatchSetLyr24::SRC_IPV4_SRC_IPV6.bit_offset / 8;
                let dst = FteMatchSetLyr24::DST_IPV4_DST_IPV6.bit_offset / 8;
                addrs = [Some((src, &v6[8..24])), Some((dst, &v6[24..40]))];
                (Some(v6[6]), ip + 40)
            }
            None => (None, 0),
        },
        _ => (None, 0),
    };
    if let (Some(proto @ (6 | 17)), Some(ports)) = (proto, b(l4_at, 4)) {
        let (sport, dport) = (
            u16::from_be_bytes([ports[0], ports[1]]),
            u16::from_be_bytes([ports[2], ports[3]]),
        );
        if proto == 6 {
            h.set_tcp_sport(sport);
            h.set_tcp_dport(dport);
            let flags = b(l4_at + 12, 2).map_or(0, |f| u16::from_be_bytes([f[0], f[1]]) & 0x1ff);
            h.set_tcp_flags(flags);
            *l4 = if flags & 0x10 == 0 {
                CqeL4HdrType::TcpNoAck
            } else {
                CqeL4HdrType::TcpAckAndData
            };
        } else {
            h.set_udp_sport(sport);
            h.set_udp_dport(dport);
            *l4 = CqeL4HdrType::Udp;
        }
    }
    for (at, bytes) in addrs.into_iter().flatten() {
        key[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vlan_ipv4_udp() {
        let mut f = vec![0u8; 64];
        f[..6].copy_from_slice(&[0x02, 1, 2, 3, 4, 5]);
        f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        f[14..16].copy_from_slice(&((5u16 << 13) | 42).to_be_bytes());
        f[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        f[18] = 0x45;
        f[27] = 17;
        f[30..34].copy_from_slice(&[10, 0, 0, 1]);
        f[38..40].copy_from_slice(&4791u16.to_be_bytes());
        let p = parse(&f);
        let h = FteMatchSetLyr24::new_unchecked(&p.key[..]);
        assert_eq!((h.dmac_47_16(), h.dmac_15_0()), (0x0201_0203, 0x0405));
        assert_eq!(
            (h.first_vid(), h.first_prio(), h.cvlan_tag()),
            (42, 5, true)
        );
        assert_eq!(
            (h.ethertype(), h.ip_version(), h.ip_protocol()),
            (0x0800, 4, 17)
        );
        assert_eq!(h.udp_sport(), 4791);
        assert_eq!(&p.key[0x2c..0x30], &[10, 0, 0, 1]);
        assert_eq!((p.l3, p.l4), (CqeL3HdrType::Ipv4, CqeL4HdrType::Udp));
        // Nothing past PARSE_DEPTH matters, even for the deepest headers (VLAN, IPv4 with
        // options, TCP).
        let mut deep = vec![0u8; 128];
        deep[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        deep[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        deep[18] = 0x4f;
        deep[27] = 6;
        deep[PARSE_DEPTH - 2..PARSE_DEPTH].copy_from_slice(&0x0012u16.to_be_bytes());
        let p = parse(&deep);
        assert_eq!(p.l4, CqeL4HdrType::TcpAckAndData);
        for len in [PARSE_DEPTH, 128] {
            let mut other = deep[..len].to_vec();
            other[PARSE_DEPTH..].fill(0xee);
            assert_eq!(parse(&other).key, p.key);
        }
        // ... and the last of them is read: without it the flags (and their ACK) are gone.
        let cut = parse(&deep[..PARSE_DEPTH - 1]);
        assert_eq!(cut.l4, CqeL4HdrType::TcpNoAck);
        // Truncated frames parse as far as they go.
        let _ = parse(&f[..3]);
        let _ = parse(&[]);
    }

    proptest::proptest! {
        /// Any bytes from the wire (a TAP device gives the kernel's frames) parse without
        /// panicking, and what the key says about the L2 header is what the frame holds.
        #[test]
        fn any_frame_parses(frame in proptest::collection::vec(proptest::num::u8::ANY, 0..160)) {
            let p = parse(&frame);
            let h = FteMatchSetLyr24::new_unchecked(&p.key[..]);
            if frame.len() >= 14 {
                let dmac = (u64::from(h.dmac_47_16()) << 16) | u64::from(h.dmac_15_0());
                let mut want = [0u8; 8];
                want[2..].copy_from_slice(&frame[..6]);
                proptest::prop_assert_eq!(dmac, u64::from_be_bytes(want));
                let outer = u16::from_be_bytes([frame[12], frame[13]]);
                proptest::prop_assert_eq!(h.cvlan_tag(), outer == 0x8100 && frame.len() >= 16);
            }
        }
    }
}
