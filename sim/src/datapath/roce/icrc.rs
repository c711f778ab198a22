//! The invariant CRC of a RoCEv2 packet: the CRC-32 of Ethernet (see [`fcs`]) over a
//! pseudo-header of eight 0xff bytes (standing for InfiniBand's local route header, which
//! RoCEv2 does not carry), the IP and UDP headers with every field a router may change set to
//! ones (IPv4: type of service, TTL, header checksum; IPv6: traffic class, flow label, hop
//! limit; UDP: checksum), the BTH with its first reserved byte set to ones, and everything
//! after it up to the ICRC. It is sent least significant byte first, like the FCS.

use crate::datapath::fcs;

/// Bytes of the largest header prefix masked here: IPv6, UDP and the BTH.
const MASKED_MAX: usize = 40 + 8 + 12;

/// The ICRC of `ip`: an IP packet carrying RoCEv2, from its first header byte up to (not
/// including) the ICRC. The caller has checked that the IP, UDP and BTH headers are all there
/// (an IPv4 header without options).
pub(crate) fn compute(ip: &[u8], v4: bool) -> u32 {
    let (l3, udp_check) = if v4 { (20, 26) } else { (40, 46) };
    let masked = (l3 + 8 + 12).min(ip.len());
    let mut h = [0u8; MASKED_MAX];
    h[..masked].copy_from_slice(&ip[..masked]);
    if v4 {
        h[1] = 0xff; // type of service (DSCP, ECN)
        h[8] = 0xff; // TTL
        h[10] = 0xff; // header checksum
        h[11] = 0xff;
    } else {
        h[0] |= 0x0f; // traffic class, high half
        h[1] = 0xff; // traffic class low half, flow label
        h[2] = 0xff;
        h[3] = 0xff;
        h[7] = 0xff; // hop limit
    }
    h[udp_check] = 0xff;
    h[udp_check + 1] = 0xff;
    if masked > l3 + 8 + 4 {
        h[l3 + 8 + 4] = 0xff; // BTH reserved byte before the destination QP
    }
    let c = fcs::crc32_update(!0, &[0xff; 8]);
    let c = fcs::crc32_update(c, &h[..masked]);
    !fcs::crc32_update(c, &ip[masked..])
}
