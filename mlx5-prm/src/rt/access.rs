//! Big-endian bit access: the arithmetic of the PRM (and of the kernel's `MLX5_GET`/`MLX5_SET`)
//! over any [`Bytes`] storage.
//!
//! Generated getters call these with constant arguments; after inlining, a getter on a
//! fixed-size buffer is one load, one byte swap, one shift and one mask.

use super::{Bytes, BytesMut};

/// Bits `shift .. shift + width` (counted from the least significant bit) of the big-endian
/// dword at byte `at`, where `mask == (1 << width) - 1`.
///
/// Unlike [`set32`], no byte path: on ordinary memory LLVM already narrows the load to the
/// bytes the field occupies (a 5-bit field is one `movzbl` and an `and`), and on device
/// memory the dword load is the width the other side's stores are made with.
#[inline(always)]
pub fn get32<S: Bytes + ?Sized>(s: &S, at: usize, shift: u32, mask: u32) -> u32 {
    (s.read_be32(at) >> shift) & mask
}

/// Replaces bits `shift ..` of the big-endian dword at byte `at` with `value & mask`, leaving
/// the other bits as they were.
///
/// When the field lies within one byte of the dword and the storage allows it
/// ([`BytesMut::BYTE_RMW`]), only that byte is read and written: with constant `shift` and
/// `mask`, as in generated setters, that is a byte load, an and, an or and a byte store,
/// where the dword's read-modify-write takes about a dozen instructions (LLVM assembles the
/// dword from narrower loads and cannot shrink the store). The bytes written are the same
/// either way, and so is the bounds check: the whole dword must lie inside the storage.
#[inline(always)]
pub fn set32<S: BytesMut + ?Sized>(s: &mut S, at: usize, shift: u32, mask: u32, value: u32) {
    if S::BYTE_RMW {
        if let Some((byte, bits)) = within_byte(shift, mask) {
            // The dword's range, checked as the dword path checks it (same panic, same
            // message); the byte inside it then needs no check of its own.
            let mut word = s.sub_mut(at, 4);
            let old = word.read_u8(byte);
            let mask = (mask << bits) as u8;
            word.write_u8(byte, (old & !mask) | (((value << bits) as u8) & mask));
            return;
        }
    }
    set32_word(s, at, shift, mask, value)
}

/// [`set32`] as a read-modify-write of the whole dword, whatever the field's width: the path
/// of fields spanning bytes, and of storage that must be accessed in dwords.
#[inline(always)]
fn set32_word<S: BytesMut + ?Sized>(s: &mut S, at: usize, shift: u32, mask: u32, value: u32) {
    let old = s.read_be32(at);
    s.write_be32(at, (old & !(mask << shift)) | ((value & mask) << shift));
}

/// Where the bits `mask << shift` of a big-endian dword lie when they are all in one byte:
/// that byte's index from the dword's first (most significant) byte, and the field's shift
/// inside the byte. `None` when they spread over two bytes or more, or when `shift` is not
/// inside the dword (left to the dword path, which treats it as it always has).
#[inline(always)]
const fn within_byte(shift: u32, mask: u32) -> Option<(usize, u32)> {
    // In 64 bits, so that no bit of `mask` is shifted out unseen.
    if shift < 32 && (mask as u64) << (shift % 8) <= 0xff {
        Some((3 - (shift / 8) as usize, shift % 8))
    } else {
        None
    }
}

/// Writes `(value & mask) << shift` as the whole big-endian dword at byte `at`, without reading
/// it first: for write-only registers, whose other bits are written as zero.
#[inline(always)]
pub fn put32<S: BytesMut + ?Sized>(s: &mut S, at: usize, shift: u32, mask: u32, value: u32) {
    s.write_be32(at, (value & mask) << shift);
}

/// The big-endian 64-bit quantity at byte `at`.
#[inline(always)]
pub fn get64<S: Bytes + ?Sized>(s: &S, at: usize) -> u64 {
    s.read_be64(at)
}

/// Writes the big-endian 64-bit quantity at byte `at`.
#[inline(always)]
pub fn set64<S: BytesMut + ?Sized>(s: &mut S, at: usize, value: u64) {
    s.write_be64(at, value)
}

/// A field of `width` bits (1..=32 inside one dword, or exactly 64 at a dword boundary) at
/// absolute MSB-first bit offset `bit`: used for array elements, whose offset depends on the
/// index.
#[inline(always)]
pub fn get_bits<S: Bytes + ?Sized>(s: &S, bit: usize, width: u32) -> u64 {
    if width == 64 {
        return s.read_be64(bit / 8);
    }
    let shift = 32 - width - (bit % 32) as u32;
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    u64::from(get32(s, bit / 32 * 4, shift, mask))
}

/// Writes a field located as for [`get_bits`]; `value` is masked to `width` bits.
#[inline(always)]
pub fn set_bits<S: BytesMut + ?Sized>(s: &mut S, bit: usize, width: u32, value: u64) {
    if width == 64 {
        return s.write_be64(bit / 8, value);
    }
    let shift = 32 - width - (bit % 32) as u32;
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    set32(s, bit / 32 * 4, shift, mask, value as u32)
}

/// True when `value` fits in `width` bits.
#[inline(always)]
pub const fn fits(value: u64, width: u32) -> bool {
    width >= 64 || value >> width == 0
}

/// [`set32`] for a field narrower than its type: in debug builds, asserts that `value` fits
/// `mask` first (release builds drop the extra bits, as the PRM's accessors do).
#[inline(always)]
#[track_caller]
pub fn set32_narrow<S: BytesMut + ?Sized>(
    s: &mut S,
    at: usize,
    shift: u32,
    mask: u32,
    value: u32,
    field: &'static str,
) {
    debug_assert!(
        value <= mask,
        "value 0x{value:x} too wide for `{field}` (max 0x{mask:x})"
    );
    set32(s, at, shift, mask, value)
}

/// `Ok` when `value` is at most `max`, else the [`Overflow`](super::Overflow) error
/// `try_set_*` accessors return.
#[inline]
pub fn check_fits(field: &'static str, value: u64, max: u64) -> Result<(), super::Overflow> {
    if value > max {
        Err(super::Overflow { field, value, max })
    } else {
        Ok(())
    }
}

/// The number of `width`-bit elements of a trailing array that starts at byte `start` of a
/// `len`-byte buffer.
///
/// Computed without overflow for any `len` (a register block may claim any length), and
/// capped so that the bit position of every element, `start * 8 + i * width`, and its end are
/// representable: generated accessors add those positions up without checking again.
#[inline(always)]
pub const fn trailing_len(len: usize, start: usize, width: usize) -> usize {
    let bytes = len.saturating_sub(start);
    let cap = (usize::MAX / 8).saturating_sub(start);
    let bytes = if bytes < cap { bytes } else { cap };
    if width == 0 {
        0
    } else if width % 8 == 0 {
        bytes / (width / 8)
    } else {
        bytes * 8 / width
    }
}

/// The length of a nested view at byte `at` of a `len`-byte buffer whose storage runs on to
/// the buffer's end: the rest of the buffer, and at least the nested layout's `fixed` size
/// (so a buffer too short for it is refused by the sub-range check, as for a closed view).
#[inline(always)]
pub const fn tail_len(len: usize, at: usize, fixed: usize) -> usize {
    let rest = len.saturating_sub(at);
    if rest > fixed {
        rest
    } else {
        fixed
    }
}
