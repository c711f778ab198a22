//! Reading and writing bit fields in a byte buffer with the kernel's numbering: bit 0 is the
//! most significant bit of byte 0, so a field at `bit_offset` of `width` bits covers bits
//! `bit_offset..bit_offset + width`, most significant first (big-endian, as the device sees
//! it).

/// The field's bits as big-endian bytes, right-aligned (the value's low bit is the last byte's
/// low bit). Bits past the end of `buf` read as 0; callers check lengths first.
pub fn get(buf: &[u8], bit_offset: u64, width: u64) -> Vec<u8> {
    let n = width.div_ceil(8) as usize;
    let mut out = vec![0u8; n];
    let pad = n as u64 * 8 - width;
    for i in 0..width {
        if bit(buf, bit_offset + i) {
            let o = pad + i;
            out[(o / 8) as usize] |= 0x80 >> (o % 8);
        }
    }
    out
}

/// The field as a number, when it is at most 64 bits wide.
pub fn get_u64(buf: &[u8], bit_offset: u64, width: u64) -> Option<u64> {
    (width <= 64)
        .then(|| (0..width).fold(0u64, |v, i| (v << 1) | u64::from(bit(buf, bit_offset + i))))
}

/// Writes `value` (big-endian bytes, right-aligned; shorter or longer than the field is fine as
/// long as the extra high bits are 0, which [`fits`] checks) into the field.
pub fn set(buf: &mut [u8], bit_offset: u64, width: u64, value: &[u8]) {
    let total = value.len() as u64 * 8;
    for i in 0..width {
        // Bit i of the field (from its MSB) is bit `width - 1 - i` counted from the value's LSB.
        let from_lsb = width - 1 - i;
        let on = from_lsb < total && {
            let o = total - 1 - from_lsb;
            value[(o / 8) as usize] & (0x80 >> (o % 8)) != 0
        };
        let at = bit_offset + i;
        if let Some(b) = buf.get_mut((at / 8) as usize) {
            let mask = 0x80 >> (at % 8);
            if on {
                *b |= mask;
            } else {
                *b &= !mask;
            }
        }
    }
}

/// True when the big-endian `value` needs at most `width` bits.
pub fn fits(value: &[u8], width: u64) -> bool {
    significant_bits(value) <= width
}

/// Bits needed to write the big-endian `value` (0 for zero).
pub fn significant_bits(value: &[u8]) -> u64 {
    match value.iter().position(|&b| b != 0) {
        None => 0,
        Some(i) => (value.len() - i) as u64 * 8 - u64::from(value[i].leading_zeros()),
    }
}

fn bit(buf: &[u8], at: u64) -> bool {
    buf.get((at / 8) as usize)
        .is_some_and(|b| b & (0x80 >> (at % 8)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prm_positions() {
        // 0x04[23:16] of 00 00 00 00 | 12 34 56 78 is 0x34: bits 40..48.
        let buf = [0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78];
        assert_eq!(get_u64(&buf, 40, 8), Some(0x34));
        assert_eq!(get_u64(&buf, 32, 32), Some(0x1234_5678));
        assert_eq!(get_u64(&buf, 35, 1), Some(1)); // 0x12 = 0001_0010: bit 3 from the MSB
        assert_eq!(get(&buf, 36, 12), vec![0x02, 0x34]);
    }

    #[test]
    fn set_then_get() {
        let mut buf = [0xffu8; 8];
        set(&mut buf, 4, 12, &[0x0a, 0xbc]);
        assert_eq!(get_u64(&buf, 4, 12), Some(0xabc));
        assert_eq!(buf[0], 0xfa);
        assert_eq!(buf[1], 0xbc);
        assert_eq!(buf[2], 0xff);
        assert!(fits(&[0x0f, 0xff], 12));
        assert!(!fits(&[0x1f, 0xff], 12));
        assert_eq!(significant_bits(&[0, 1]), 1);
    }
}
