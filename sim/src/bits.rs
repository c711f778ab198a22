//! Copying bit ranges between layouts: the QP transitions apply exactly the context fields the
//! state machine table names (a 1-bit flag, a 24-bit PSN, a 16-byte GID, a whole address
//! path), given as absolute MSB-first bit offsets.

/// Copies `width` bits from MSB-first bit `src_bit` of `src` to bit `dst_bit` of `dst`.
/// Bits outside either buffer are skipped (never a panic).
pub(crate) fn copy_bits(src: &[u8], src_bit: usize, dst: &mut [u8], dst_bit: usize, width: usize) {
    if src_bit % 8 == 0 && dst_bit % 8 == 0 && width % 8 == 0 {
        let (s, d, n) = (src_bit / 8, dst_bit / 8, width / 8);
        if let (Some(from), Some(to)) = (src.get(s..s + n), dst.get_mut(d..d + n)) {
            to.copy_from_slice(from);
            return;
        }
    }
    for i in 0..width {
        let (s, d) = (src_bit + i, dst_bit + i);
        let (Some(&byte), true) = (src.get(s / 8), d / 8 < dst.len()) else {
            continue;
        };
        let bit = byte >> (7 - s % 8) & 1;
        let mask = 1u8 << (7 - d % 8);
        dst[d / 8] = (dst[d / 8] & !mask) | (bit << (7 - d % 8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_unaligned_ranges() {
        let src = [0b1010_1100u8, 0xff];
        let mut dst = [0u8; 2];
        copy_bits(&src, 2, &mut dst, 5, 6);
        assert_eq!(dst, [0b0000_0101, 0b1000_0000]);
        let mut dst = [0u8; 2];
        copy_bits(&src, 0, &mut dst, 0, 16);
        assert_eq!(dst, src);
        copy_bits(&src, 8, &mut dst, 12, 100);
    }
}
