//! Large send offload: the LSO opcode (0x0e) as Linux's `mlx5e` posts it for TSO, TSO6 and
//! UDP GSO (`en_tx.c`). The Ethernet segment carries the segment size (`mss`) and every header
//! inline: Ethernet (with any VLAN tag the driver put there), IPv4 or IPv6, then TCP or UDP;
//! the gather list is the payload. The device cuts the payload into `mss`-byte pieces (the
//! last one shorter) and sends each as a complete frame behind a copy of the headers, fixed up
//! the way Linux's own software segmentation fixes them (`inet_gso_segment`,
//! `tcp_gso_segment`, `__udp_gso_segment`):
//!
//! - IPv4: total length of the segment, the ID incremented per segment, header checksum;
//!   IPv6: payload length of the segment (a zero payload length, what Linux leaves for a
//!   jumbogram, is replaced like any other);
//! - TCP: sequence number advanced by `mss` per segment, FIN and PSH kept only on the last
//!   segment and CWR only on the first, checksum of the segment;
//! - UDP: length and checksum of each datagram.
//!
//! Segmentation always fills in both checksums, whatever `cs_flags` says: the headers as
//! the driver wrote them cannot be right for any segment (Linux asks for both anyway).
//!
//! Everything is checked before the first segment leaves, so a bad WQE sends nothing: no
//! `mss`, a VLAN insert request instead of inline headers, headers the model cannot parse as
//! (tags,) IPv4/IPv6 and TCP/UDP ending exactly at `inline_hdr_sz` (IPv6 extension headers
//! and IPv4 fragments included) → `local_qp_op_err`; a payload over 2^[`LOG_MAX_LSO`] bytes
//! (or the smaller `max_lso_cap` of the profile), more than [`MAX_SEGMENTS`] segments, or a
//! segment frame over the largest frame → `local_length_err`; key and memory errors as for
//! SEND.

use super::super::csum::{self, TCP, UDP};
use super::super::mem::Accessor;
use super::super::sendq;
use super::super::Side;
use super::eseg::Eseg;
use super::tx::{self, MAX_FRAME};
use mlx5_prm::CqeSyndrome;

/// log2 of the largest LSO payload (the `max_lso_cap` the model advertises): 512 KiB.
/// Linux's `mlx5e` declares `netif_set_tso_max_size(GSO_MAX_SIZE)`, 8 × 65535 = 524280
/// bytes of skb headers included, so every LSO it may post fits, BIG TCP included.
pub(crate) const LOG_MAX_LSO: u8 = 19;
/// Most segments one LSO WQE may make. Linux counts a GSO packet's segments in 16 bits
/// (`gso_segs`, at most `GSO_MAX_SEGS`), so `mlx5e` never posts more; the bound keeps what
/// one WQE makes the model queue at the port to 512 KiB plus 65535 copies of the headers.
pub(crate) const MAX_SEGMENTS: u64 = 65535;
/// Longest headers LSO takes: Ethernet with two VLAN tags (22 bytes), IPv4 with the most
/// options (60), TCP with the most options (60). IPv6 (40) with TCP is shorter.
const MAX_HDR: usize = 22 + 60 + 60;
/// Length of the fixed IPv6 header, of a TCP header without options and of a UDP header.
const IPV6_HDR: usize = 40;
const TCP_HDR: usize = 20;
const UDP_HDR: usize = 8;
/// TCP flags (byte 13 of the header).
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const CWR: u8 = 0x80;

/// Where the headers of an LSO are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Headers {
    /// Start of the IP header.
    l3: usize,
    v6: bool,
    /// Start of the TCP or UDP header.
    l4: usize,
    tcp: bool,
}

/// Parses the inline headers `h` of an LSO: found as the checksum offload finds them
/// ([`csum::layout`]), and ending exactly where the TCP header (its data offset) or the UDP
/// header ends.
fn headers(h: &[u8]) -> Option<Headers> {
    let lay = csum::layout(h)?;
    let (l4, proto) = lay.l4?;
    let (len, min) = match proto {
        TCP => (usize::from(*h.get(l4 + 12)? >> 4) * 4, TCP_HDR),
        UDP => (UDP_HDR, UDP_HDR),
        _ => return None,
    };
    (len >= min && l4 + len == h.len()).then_some(Headers {
        l3: lay.l3,
        v6: lay.v6,
        l4,
        tcp: proto == TCP,
    })
}

/// Executes an LSO WQE (see the module's doc): checks it, gathers its payload, and queues
/// one frame per segment at the port, each counted as a frame sent.
pub(super) fn send(
    side: &mut Side<'_>,
    who: Accessor,
    wqe: &[u8],
    end: usize,
    fault: bool,
) -> Result<(), CqeSyndrome> {
    let e = Eseg::parse(wqe, end)?;
    let mss = usize::from(e.mss);
    if mss == 0 || e.vlan.is_some() || e.hdr > MAX_HDR {
        return Err(CqeSyndrome::LocalQpOpErr);
    }
    let mut buf = [0u8; MAX_HDR];
    let (first, rest) = e.header(wqe);
    buf[..first.len()].copy_from_slice(first);
    buf[first.len()..e.hdr].copy_from_slice(rest);
    let hdr = &buf[..e.hdr];
    let h = headers(hdr).ok_or(CqeSyndrome::LocalQpOpErr)?;
    let mut total = 0u64;
    for p in sendq::gather(wqe, e.data, end) {
        total += p.map_err(|_| CqeSyndrome::LocalQpOpErr)?.len();
    }
    let m = &mut *side.m;
    let cap = 1u64 << m.cur.eth_cur.max_lso_cap().min(LOG_MAX_LSO);
    let segments = total.div_ceil(mss as u64).max(1);
    let longest = e.hdr as u64 + total.min(mss as u64);
    if total > cap || segments > MAX_SEGMENTS || longest > MAX_FRAME as u64 {
        return Err(CqeSyndrome::LocalLengthErr);
    }
    let mut payload = Vec::with_capacity(total as usize);
    tx::gather_into(
        &m.mkeys,
        side.dma,
        who,
        wqe,
        e.data,
        end,
        fault,
        &mut payload,
    )
    .map_err(|err| err.syndrome(m))?;
    for k in 0..segments as usize {
        let at = (k * mss).min(payload.len());
        let piece = &payload[at..(at + mss).min(payload.len())];
        let last = k + 1 == segments as usize;
        let _ = m.outbox.push_with(|f| {
            let start = f.len();
            f.extend_from_slice(hdr);
            f.extend_from_slice(piece);
            fix(&mut f[start..], &h, k, mss, last);
            Ok::<(), ()>(())
        });
        tx::count_sent(m);
    }
    Ok(())
}

/// Makes frame `f` (the headers, then the payload of segment `k` of `mss`-byte segments;
/// `last` for the final one) a frame of its own: lengths, IPv4 ID, TCP sequence number and
/// flags, then both checksums. The frame is at most [`MAX_FRAME`] bytes, so every length fits
/// its 16-bit field.
fn fix(f: &mut [u8], h: &Headers, k: usize, mss: usize, last: bool) {
    let (l3, l4) = (h.l3, h.l4);
    let put16 = |f: &mut [u8], at: usize, v: usize| {
        f[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes());
    };
    if h.v6 {
        put16(f, l3 + 4, f.len() - l3 - IPV6_HDR);
    } else {
        put16(f, l3 + 2, f.len() - l3);
        let id = u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]).wrapping_add(k as u16);
        f[l3 + 4..l3 + 6].copy_from_slice(&id.to_be_bytes());
    }
    if h.tcp {
        let seq = u32::from_be_bytes([f[l4 + 4], f[l4 + 5], f[l4 + 6], f[l4 + 7]])
            .wrapping_add((k * mss) as u32);
        f[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = f[l4 + 13];
        if !last {
            flags &= !(FIN | PSH);
        }
        if k > 0 {
            flags &= !CWR;
        }
        f[l4 + 13] = flags;
    } else {
        put16(f, l4 + 4, f.len() - l4);
    }
    csum::tx(f, !h.v6, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 (`ihl` words) + TCP (`doff` words) headers.
    fn tcp4(ihl: u8, doff: u8) -> Vec<u8> {
        let mut h = vec![0u8; 12];
        h.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0u8; usize::from(ihl) * 4];
        ip[0] = 0x40 | ihl;
        ip[9] = TCP;
        h.extend_from_slice(&ip);
        let mut tcp = vec![0u8; usize::from(doff) * 4];
        tcp[12] = doff << 4;
        h.extend_from_slice(&tcp);
        h
    }

    #[test]
    fn headers_must_end_where_the_l4_header_does() {
        let h = tcp4(5, 5);
        assert_eq!(
            headers(&h),
            Some(Headers {
                l3: 14,
                v6: false,
                l4: 34,
                tcp: true
            })
        );
        assert_eq!(headers(&tcp4(15, 15)).map(|h| h.l4), Some(74));
        // A byte of payload inline, a header cut short, a data offset below 5 words.
        let mut long = h.clone();
        long.push(0);
        assert_eq!(headers(&long), None);
        assert_eq!(headers(&h[..h.len() - 1]), None);
        let mut short = tcp4(5, 5);
        short[34 + 12] = 4 << 4;
        assert_eq!(headers(&short), None);
        // A fragment, and a protocol other than TCP or UDP.
        let mut frag = tcp4(5, 5);
        frag[14 + 6] = 0x20;
        assert_eq!(headers(&frag), None);
        let mut icmp = tcp4(5, 5);
        icmp[14 + 9] = 1;
        assert_eq!(headers(&icmp), None);
        for len in 0..h.len() {
            let _ = headers(&h[..len]);
        }
    }
}
