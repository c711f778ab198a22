//! The Ethernet segment of a send WQE (the 16 bytes after the control segment) as the device
//! reads it: the checksums to fill in, the LSO segment size, and in its last dword either the
//! start of the inline headers or a VLAN tag to insert (the two share the dword; bit 15 of
//! its first half tells them apart, see `wqe_eth_seg_insert` in the spec).

use super::super::sendq::DS;
use mlx5_prm::{CqeSyndrome, WqeEthSeg, WqeEthSegInsert};

/// Where the Ethernet segment starts: right after the control segment.
const ESEG: usize = DS;
/// Byte offset, inside the segment, of its last dword (inline_hdr_sz, or the insert request).
const TAIL: usize = WqeEthSeg::INLINE_HDR_SZ.bit_offset / 8;
/// Byte offset and length of the inline header bytes the segment itself holds.
const START: usize = WqeEthSeg::INLINE_HDR_START.bit_offset / 8;
const IN_SEGMENT: usize = WqeEthSeg::INLINE_HDR_START.width as usize / 8;
/// Where inline header bytes continue: the 16-byte units after the segment.
const AFTER: usize = ESEG + DS;
/// The byte of the outer checksum flags (cs_flags), and their bits in it.
const CS_FLAGS: usize = WqeEthSeg::L4_CSUM.bit_offset / 8;
const L4_CSUM: u8 = 0x80 >> (WqeEthSeg::L4_CSUM.bit_offset % 8);
const L3_CSUM: u8 = 0x80 >> (WqeEthSeg::L3_CSUM.bit_offset % 8);
/// The insert_vlan and insert_trailer bits as bits of the 16-bit inline_hdr_sz half they
/// share (bit offsets count from the dword's most significant bit).
const INSERT_VLAN: u16 = 0x8000 >> WqeEthSegInsert::INSERT_VLAN.bit_offset;
const INSERT_TRAILER: u16 = 0x8000 >> WqeEthSegInsert::INSERT_TRAILER.bit_offset;
/// EtherTypes of the tags VLAN insertion adds (802.1Q, and 802.1ad for a service tag).
const TPID_CTAG: u16 = 0x8100;
const TPID_STAG: u16 = 0x88a8;

/// What an Ethernet segment asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Eseg {
    /// The outer checksum flags, kept as their byte: one test tells whether any is asked
    /// for (see [`Eseg::l3_csum`], [`Eseg::l4_csum`]).
    csum: u8,
    /// The LSO segment size (0 outside LSO).
    pub mss: u16,
    /// Inline header bytes: up to two in the segment, the rest from [`AFTER`] on.
    pub hdr: usize,
    /// The tag to put after the MAC addresses (EtherType and TCI as on the wire), when the
    /// segment asks for VLAN insertion instead of carrying inline headers.
    pub vlan: Option<[u8; 4]>,
    /// Where the gather list starts: after the inline headers, padded to 16 bytes.
    pub data: usize,
}

impl Eseg {
    /// Reads the Ethernet segment of `wqe`, whose DS count ends at byte `end`. A WQE too
    /// short for the segment, inline headers running past the WQE, or a trailer request (the
    /// model does not advertise `insert_trailer`) make the WQE malformed: `local_qp_op_err`.
    #[inline]
    pub fn parse(wqe: &[u8], end: usize) -> Result<Eseg, CqeSyndrome> {
        if end < AFTER || wqe.len() < end {
            return Err(CqeSyndrome::LocalQpOpErr);
        }
        let seg = WqeEthSeg::new_unchecked(&wqe[ESEG..AFTER]);
        // One read of the half for the common case, inline headers.
        let sz = seg.inline_hdr_sz();
        let (hdr, vlan) = if sz & (INSERT_VLAN | INSERT_TRAILER) == 0 {
            (usize::from(sz), None)
        } else {
            let tail = WqeEthSegInsert::new_unchecked(&wqe[ESEG + TAIL..AFTER]);
            if !tail.insert_vlan() {
                return Err(CqeSyndrome::LocalQpOpErr);
            }
            let tpid = if tail.svlan() { TPID_STAG } else { TPID_CTAG };
            let [a, b] = tpid.to_be_bytes();
            let [c, d] = tail.vlan_tci().to_be_bytes();
            (0, Some([a, b, c, d]))
        };
        let rest = hdr.saturating_sub(IN_SEGMENT);
        if rest > end - AFTER {
            return Err(CqeSyndrome::LocalQpOpErr);
        }
        Ok(Eseg {
            csum: wqe[ESEG + CS_FLAGS] & (L3_CSUM | L4_CSUM),
            mss: seg.mss(),
            hdr,
            vlan,
            data: AFTER + rest.div_ceil(DS) * DS,
        })
    }

    /// Whether the segment asks for any checksum.
    #[inline]
    pub fn any_csum(&self) -> bool {
        self.csum != 0
    }

    /// Fill in the IPv4 header checksum.
    #[inline]
    pub fn l3_csum(&self) -> bool {
        self.csum & L3_CSUM != 0
    }

    /// Fill in the TCP or UDP checksum.
    #[inline]
    pub fn l4_csum(&self) -> bool {
        self.csum & L4_CSUM != 0
    }

    /// The inline header bytes, in two pieces: those in the segment, then those after it.
    /// Only for the `wqe` [`Eseg::parse`] read this from.
    #[inline]
    pub fn header<'w>(&self, wqe: &'w [u8]) -> (&'w [u8], &'w [u8]) {
        let first = self.hdr.min(IN_SEGMENT);
        let rest = self.hdr - first;
        (
            &wqe[ESEG + START..ESEG + START + first],
            &wqe[AFTER..AFTER + rest],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wqe(tail: [u8; 4], ds: usize) -> Vec<u8> {
        let mut w = vec![0u8; 64];
        w[ESEG + 4] = 0xc0; // both checksums
        w[ESEG + 6..ESEG + 8].copy_from_slice(&1448u16.to_be_bytes());
        w[ESEG + 12..ESEG + 16].copy_from_slice(&tail);
        w.truncate(ds * DS);
        w
    }

    #[test]
    fn inline_headers_or_a_tag_share_the_last_dword() {
        // Linux's MLX5_ETH_WQE_INSERT_VLAN and _INSERT_TRAILER, as bits of the first half.
        assert_eq!((INSERT_VLAN, INSERT_TRAILER), (0x8000, 0x4000));
        // 18 inline bytes: two in the segment, 16 in the next unit; data from byte 48.
        let w = wqe([0, 18, 0xaa, 0xbb], 4);
        let e = Eseg::parse(&w, 64).unwrap();
        assert_eq!((e.hdr, e.data, e.mss, e.vlan), (18, 48, 1448, None));
        assert!(e.l3_csum() && e.l4_csum());
        assert_eq!(
            (L4_CSUM, L3_CSUM),
            (0x80, 0x40),
            "Linux's MLX5_ETH_WQE_L4/L3_CSUM"
        );
        assert_eq!(e.header(&w), (&[0xaa, 0xbb][..], &w[32..48]));
        // Bit 15 set: a tag of VLAN 5, priority 3; no inline header.
        let w = wqe([0x80, 0x00, 0x60, 0x05], 3);
        let e = Eseg::parse(&w, 48).unwrap();
        assert_eq!((e.hdr, e.data), (0, 32));
        assert_eq!(e.vlan, Some([0x81, 0x00, 0x60, 0x05]));
        let w = wqe([0x80, 0x01, 0x00, 0x07], 2);
        assert_eq!(Eseg::parse(&w, 32).unwrap().vlan, Some([0x88, 0xa8, 0, 7]));
    }

    #[test]
    fn malformed_segments() {
        // Inline bytes past the WQE's end, a trailer, a WQE without the segment.
        let w = wqe([0, 40, 0, 0], 3);
        assert_eq!(Eseg::parse(&w, 48), Err(CqeSyndrome::LocalQpOpErr));
        let w = wqe([0x40, 0, 0, 0], 2);
        assert_eq!(Eseg::parse(&w, 32), Err(CqeSyndrome::LocalQpOpErr));
        assert_eq!(Eseg::parse(&w, 16), Err(CqeSyndrome::LocalQpOpErr));
        assert_eq!(Eseg::parse(&w[..20], 32), Err(CqeSyndrome::LocalQpOpErr));
    }
}
