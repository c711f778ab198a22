//! Internet checksums of Ethernet frames, as the adapter computes them: on receive, the
//! CQE's check_sum (the ones'-complement sum over the IP packet, which Linux's mlx5e uses for
//! CHECKSUM_COMPLETE) and the l3_ok/l4_ok verdicts (used for frames too short for the sum);
//! on send, the IPv4 header and TCP/UDP checksums an Ethernet segment's cs_flags ask for.
//!
//! Headers are found as the receive parser finds them: up to two VLAN tags after the
//! addresses, then IPv4 (any header length) or IPv6 (a TCP or UDP header right after the
//! fixed header; extension headers are not followed). The sums are RFC 1071's: 16-bit
//! big-endian words added with end-around carry. Everything reads through slices with checks,
//! so a malformed frame gets "not verified" and never a panic.

/// EtherTypes.
const IPV4: u16 = 0x0800;
const IPV6: u16 = 0x86dd;
const C_TAG: u16 = 0x8100;
const S_TAG: u16 = 0x88a8;
/// IP protocol numbers.
pub(crate) const TCP: u8 = 6;
pub(crate) const UDP: u8 = 17;
/// Offsets of the checksum inside the TCP and UDP headers.
const TCP_CHECK: usize = 16;
const UDP_CHECK: usize = 6;

/// Adds the big-endian 16-bit words of `b` to `acc` (an odd last byte is padded with 0),
/// unfolded. It adds 32-bit words, which folds to the same sum (2^16 is 1 modulo 0xffff), in
/// a quarter of the steps.
fn add(acc: u64, b: &[u8]) -> u64 {
    let mut chunks = b.chunks_exact(4);
    let mut s = acc;
    for c in &mut chunks {
        s += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    match *chunks.remainder() {
        [a, b, c] => s + u64::from(u16::from_be_bytes([a, b])) + (u64::from(c) << 8),
        [a, b] => s + u64::from(u16::from_be_bytes([a, b])),
        [a] => s + (u64::from(a) << 8),
        _ => s,
    }
}

/// Folds a wide sum to 16 bits with end-around carry.
fn fold(mut s: u64) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The ones'-complement sum of `b`, folded (not inverted).
pub(crate) fn sum(b: &[u8]) -> u16 {
    fold(add(0, b))
}

/// Where a frame's headers are (what LSO also segments by, so that segmentation and the
/// checksums it asks for agree on the headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Start of the IP header.
    pub l3: usize,
    /// IPv6 rather than IPv4.
    pub v6: bool,
    /// End of the IP packet (its total length), clamped to the frame.
    pub end: usize,
    /// Start and protocol of the TCP or UDP header, when the packet carries one whole
    /// (IPv4: not a fragment).
    pub l4: Option<(usize, u8)>,
}

fn be16(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]))
}

/// The headers of frame `f` (see the module's doc); `None` for frames without IPv4 or IPv6.
pub(crate) fn layout(f: &[u8]) -> Option<Layout> {
    let mut at = 12;
    let mut ty = be16(f, at)?;
    for _ in 0..2 {
        // Compared directly: as a slice search it was a call per frame when not inlined.
        if ty == C_TAG || ty == S_TAG {
            at += 4;
            ty = be16(f, at)?;
        }
    }
    let l3 = at + 2;
    match ty {
        IPV4 => {
            let ihl = usize::from(*f.get(l3)? & 0xf) * 4;
            if *f.get(l3)? >> 4 != 4 || ihl < 20 || f.len() < l3 + ihl {
                return None;
            }
            let end = (l3 + usize::from(be16(f, l3 + 2)?)).min(f.len());
            let frag = be16(f, l3 + 6)? & 0x3fff != 0;
            let proto = f[l3 + 9];
            let l4 = (!frag && matches!(proto, TCP | UDP)).then_some((l3 + ihl, proto));
            Some(Layout {
                l3,
                v6: false,
                end,
                l4,
            })
        }
        IPV6 => {
            if *f.get(l3)? >> 4 != 6 || f.len() < l3 + 40 {
                return None;
            }
            let end = (l3 + 40 + usize::from(be16(f, l3 + 4)?)).min(f.len());
            let proto = f[l3 + 6];
            let l4 = matches!(proto, TCP | UDP).then_some((l3 + 40, proto));
            Some(Layout {
                l3,
                v6: true,
                end,
                l4,
            })
        }
        _ => None,
    }
}

/// The pseudo-header sum of an L4 segment of `len` bytes and protocol `proto`.
fn pseudo(f: &[u8], lay: &Layout, proto: u8, len: usize) -> u64 {
    let addrs = if lay.v6 {
        &f[lay.l3 + 8..lay.l3 + 40]
    } else {
        &f[lay.l3 + 12..lay.l3 + 20]
    };
    add(0, addrs) + u64::from(proto) + len as u64
}

/// What the receive side reports in the CQE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RxCsum {
    /// Sum over the IP packet (header to its total length), 0 for other frames.
    pub check_sum: u16,
    /// The IPv4 header checksum is right (IPv6 has none: true).
    pub l3_ok: bool,
    /// The TCP or UDP checksum is right (a UDP checksum of 0 means none was sent: true).
    pub l4_ok: bool,
}

/// The receive checksums of frame `f`.
///
/// Each byte is summed once: the packet's sum is the header's plus the rest's (the IP header
/// length is a multiple of 4, so the words line up), and the rest is the TCP or UDP segment
/// whose own verdict needs its sum.
pub(crate) fn rx(f: &[u8]) -> RxCsum {
    let Some(lay) = layout(f) else {
        return RxCsum::default();
    };
    let hdr_len = if lay.v6 {
        40
    } else {
        usize::from(f[lay.l3] & 0xf) * 4
    };
    // The header is whole in the frame (layout checked it), but the packet's total length
    // may say it ends sooner.
    let hdr_end = (lay.l3 + hdr_len).min(lay.end);
    let hdr = add(0, &f[lay.l3..hdr_end]);
    let rest = add(0, &f[hdr_end..lay.end]);
    let l3_ok = lay.v6 || (hdr_end == lay.l3 + hdr_len && fold(hdr) == 0xffff);
    let l4_ok = match lay.l4 {
        Some((at, proto)) if at == hdr_end && at < lay.end => {
            let seg = &f[at..lay.end];
            let min = if proto == TCP { 20 } else { 8 };
            seg.len() >= min
                && ((proto == UDP && !lay.v6 && be16(seg, UDP_CHECK) == Some(0))
                    || fold(pseudo(f, &lay, proto, seg.len()) + rest) == 0xffff)
        }
        _ => false,
    };
    RxCsum {
        check_sum: fold(hdr + rest),
        l3_ok,
        l4_ok,
    }
}

/// Fills in the checksums an Ethernet segment asks for: the IPv4 header checksum (`l3`) and
/// the TCP or UDP checksum (`l4`), each over the frame as built. Frames without such headers
/// are left alone, as the adapter leaves what it cannot parse.
pub(crate) fn tx(f: &mut [u8], l3: bool, l4: bool) {
    let Some(lay) = layout(f) else {
        return;
    };
    if l3 && !lay.v6 {
        let ihl = usize::from(f[lay.l3] & 0xf) * 4;
        f[lay.l3 + 10..lay.l3 + 12].fill(0);
        let c = !sum(&f[lay.l3..lay.l3 + ihl]);
        f[lay.l3 + 10..lay.l3 + 12].copy_from_slice(&c.to_be_bytes());
    }
    if let (true, Some((at, proto))) = (l4, lay.l4) {
        let (off, min) = if proto == TCP {
            (TCP_CHECK, 20)
        } else {
            (UDP_CHECK, 8)
        };
        if at + min > lay.end {
            return;
        }
        f[at + off..at + off + 2].fill(0);
        let len = lay.end - at;
        let total = pseudo(f, &lay, proto, len) + add(0, &f[at..lay.end]);
        let mut c = !fold(total);
        if proto == UDP && c == 0 {
            c = 0xffff; // 0 would mean "no checksum"
        }
        f[at + off..at + off + 2].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 UDP frame with zeroed checksums: `payload` after the headers.
    fn udp4(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&IPV4.to_be_bytes());
        let total = 20 + 8 + payload.len();
        f.extend_from_slice(&[
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0x40,
            0,
            64,
            UDP,
        ]);
        f.extend_from_slice(&[0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        let ulen = 8 + payload.len();
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, (ulen >> 8) as u8, ulen as u8, 0, 0]);
        f.extend_from_slice(payload);
        f
    }

    /// A zero ones'-complement checksum has two forms. UDP must send 0xffff (0 says "no
    /// checksum"); TCP sends 0x0000, the inverted sum, as the PRM's offload computes it (Linux
    /// software may write 0xffff; receivers accept both, RFC 1624).
    #[test]
    fn a_zero_checksum_is_0xffff_for_udp_and_0x0000_for_tcp() {
        for (proto, off, want) in [(UDP, UDP_CHECK, 0xffff), (TCP, TCP_CHECK, 0x0000)] {
            // 12 payload bytes after the UDP-sized header make room for a TCP header; the
            // last two are a word chosen so that the whole sum becomes 0xffff.
            let mut f = udp4(&[7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0]);
            f[23] = proto;
            let at = 14 + 20;
            let n = f.len();
            tx(&mut f, true, true);
            let c = u16::from_be_bytes([f[at + off], f[at + off + 1]]);
            f[n - 2..].copy_from_slice(&c.to_be_bytes());
            tx(&mut f, true, true);
            let got = u16::from_be_bytes([f[at + off], f[at + off + 1]]);
            assert_eq!(got, want, "protocol {proto}");
            assert!(
                rx(&f).l4_ok,
                "protocol {proto}: the receive side verifies it"
            );
        }
    }

    #[test]
    fn rfc_1071_sum() {
        // The example of RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        assert_eq!(
            sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
    }

    #[test]
    fn what_tx_fills_in_rx_verifies() {
        let mut f = udp4(b"hello, checksum");
        assert!(!rx(&f).l3_ok);
        tx(&mut f, true, true);
        let r = rx(&f);
        assert!(r.l3_ok && r.l4_ok);
        // The sum over a packet with a right IPv4 header covers the header as 0xffff.
        assert_eq!(r.check_sum, sum(&f[14..]));
        let last = f.len() - 1;
        f[last] ^= 1;
        assert!(!rx(&f).l4_ok, "a flipped payload bit");
        // Padding past the IP total length is not summed.
        let mut padded = udp4(b"x");
        tx(&mut padded, true, true);
        let base = rx(&padded).check_sum;
        padded.extend_from_slice(&[0xab; 20]);
        assert_eq!(rx(&padded).check_sum, base);
    }

    /// RFC 1071 the plain way: 16-bit words one by one, folded.
    fn reference_sum(b: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for (i, &x) in b.iter().enumerate() {
            s += if i % 2 == 0 {
                u32::from(x) << 8
            } else {
                u32::from(x)
            };
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    proptest::proptest! {
        /// Summing by 32-bit words agrees with 16-bit words for every length and content.
        #[test]
        fn word_sums_agree_with_the_plain_sum(b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            proptest::prop_assert_eq!(sum(&b), reference_sum(&b));
        }

        /// The receive sums of any IPv4 UDP frame, its header, lengths and bytes garbled at
        /// will, are those summed separately over the packet, header and segment.
        #[test]
        fn rx_sums_each_part_as_a_separate_sum_would(
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            pokes in proptest::collection::vec((0usize..100, proptest::num::u8::ANY), 0..4),
            fill in proptest::bool::ANY,
        ) {
            let mut f = udp4(&payload);
            if fill {
                tx(&mut f, true, true);
            }
            for (at, v) in pokes {
                if let Some(b) = f.get_mut(at) {
                    *b = v;
                }
            }
            let r = rx(&f);
            if let Some(lay) = layout(&f) {
                proptest::prop_assert_eq!(r.check_sum, reference_sum(&f[lay.l3..lay.end]));
                if !lay.v6 {
                    let ihl = usize::from(f[lay.l3] & 0xf) * 4;
                    let whole = lay.l3 + ihl <= lay.end;
                    let ok = whole && reference_sum(&f[lay.l3..lay.l3 + ihl]) == 0xffff;
                    proptest::prop_assert_eq!(r.l3_ok, ok);
                }
            } else {
                proptest::prop_assert_eq!(r, RxCsum::default());
            }
        }
    }

    #[test]
    fn malformed_frames_are_not_verified_and_do_not_panic() {
        for len in 0..60 {
            let f = udp4(b"0123456789abcdef");
            let mut g = f[..len.min(f.len())].to_vec();
            let _ = rx(&g);
            tx(&mut g, true, true);
        }
        let mut f = udp4(b"abc");
        f[14] = 0x4f; // IHL 60 > frame
        assert_eq!(rx(&f), RxCsum::default());
    }
}
