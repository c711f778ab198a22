//! The Ethernet frame check sequence: the CRC-32 of IEEE 802.3 (polynomial 0x04C11DB7, bits
//! taken least significant first, register preset to all ones and complemented at the end),
//! sent least significant byte first after the frame. An RQ with scatter_fcs gets it appended
//! to every frame it receives, as it came off the wire.
//!
//! Frames reach the model's port without their FCS (a TAP device, a `Wire` and loopback all
//! carry frames as the kernel sees them), so the device computes the FCS the frame had on the
//! wire: over the frame as it arrived, VLAN tag included, whether or not the RQ strips it.

/// The CRC-32 of `data`.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    !crc32_update(!0, data)
}

/// The CRC register after `data`, from register value `c` (neither preset nor complemented
/// here): what a CRC over several pieces (the RoCE ICRC's masked headers, then the payload)
/// is built from.
///
/// crc32fast does the work (carry-less multiplication where the CPU has it, some 0.1
/// instructions a byte against 8 for a table): every RoCE packet needs its ICRC computed
/// once when built and once when received, over the whole payload. Its values are the
/// complement of the register this function speaks in.
pub(crate) fn crc32_update(c: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!c);
    h.update(data);
    !h.finalize()
}

/// The four FCS bytes of `frame`, in wire order.
pub(crate) fn fcs(frame: &[u8]) -> [u8; 4] {
    crc32(frame).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The CRC register after `data` the slow way, bit by bit from the reflected polynomial:
    /// the oracle `crc32_update` is checked against.
    fn bitwise_update(mut c: u32, data: &[u8]) -> u32 {
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        c
    }

    proptest! {
        #[test]
        fn updates_agree_with_the_bitwise_crc(
            start in any::<u32>(),
            a in proptest::collection::vec(any::<u8>(), 0..300),
            b in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let fast = crc32_update(crc32_update(start, &a), &b);
            let slow = bitwise_update(bitwise_update(start, &a), &b);
            prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn the_standard_check_value_and_the_residue() {
        // The CRC-32 catalogue's check value: the CRC of the ASCII digits 1 to 9.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
        // Data followed by its FCS has the constant CRC every receiver checks for.
        let frame: Vec<u8> = (0..60u8).collect();
        let mut with = frame.clone();
        with.extend_from_slice(&fcs(&frame));
        assert_eq!(crc32(&with), 0x2144_df1c);
    }
}
