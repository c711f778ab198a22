//! The Ethernet frame check sequence: the CRC-32 of IEEE 802.3 (polynomial 0x04C11DB7, bits
//! taken least significant first, register preset to all ones and complemented at the end),
//! sent least significant byte first after the frame. An RQ with scatter_fcs gets it appended
//! to every frame it receives, as it came off the wire.
//!
//! Frames reach the model's port without their FCS (a TAP device, a `Wire` and loopback all
//! carry frames as the kernel sees them), so the device computes the FCS the frame had on the
//! wire: over the frame as it arrived, VLAN tag included, whether or not the RQ strips it.

/// The reflected polynomial, one table entry per byte value.
const TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// The CRC-32 of `data`.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    !crc32_update(!0, data)
}

/// The CRC register after `data`, from register value `c` (neither preset nor complemented
/// here): what a CRC over several pieces (the RoCE ICRC's masked headers, then the payload)
/// is built from.
pub(crate) fn crc32_update(c: u32, data: &[u8]) -> u32 {
    data.iter()
        .fold(c, |c, &b| TABLE[usize::from((c as u8) ^ b)] ^ (c >> 8))
}

/// The four FCS bytes of `frame`, in wire order.
pub(crate) fn fcs(frame: &[u8]) -> [u8; 4] {
    crc32(frame).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

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
