//! Big-endian bit access: the arithmetic of the PRM (and of the kernel's `MLX5_GET`/`MLX5_SET`)
//! over any [`Bytes`] storage.
//!
//! Generated getters call these with constant arguments; after inlining, a getter on a
//! fixed-size buffer is one load, one byte swap, one shift and one mask.

use super::{Bytes, BytesMut};

/// Bits `shift .. shift + width` (counted from the least significant bit) of the big-endian
/// dword at byte `at`, where `mask == (1 << width) - 1`.
#[inline(always)]
pub fn get32<S: Bytes + ?Sized>(s: &S, at: usize, shift: u32, mask: u32) -> u32 {
    (s.read_be32(at) >> shift) & mask
}

/// Replaces bits `shift ..` of the big-endian dword at byte `at` with `value & mask`, leaving
/// the other bits as they were.
#[inline(always)]
pub fn set32<S: BytesMut + ?Sized>(s: &mut S, at: usize, shift: u32, mask: u32, value: u32) {
    let old = s.read_be32(at);
    s.write_be32(at, (old & !(mask << shift)) | ((value & mask) << shift));
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
