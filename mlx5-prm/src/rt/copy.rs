//! Bulk copies between device-shared memory and ordinary buffers, for
//! [`DeviceBytes::read_bytes`](super::DeviceBytes) and `write_bytes`: aligned 8-byte atomic
//! accesses in the middle, and the widest aligned 4-, 2- or 1-byte ones at the ends.
//!
//! Byte by byte, a copy costs a load, a store and a loop step per byte; it was most of the
//! work of moving a frame through the device model and of reading a command mailbox. Word by
//! word it is an eighth of that. The accesses stay atomic (see [`super::shared`]), and a dword
//! at a 4-byte boundary before the first 8-byte one is still read or written as one dword,
//! the width the other side uses for the dwords of descriptors.

use super::shared::{load16, load32, load64, load8, store16, store32, store64, store8};

/// Copies `out.len()` bytes from `p` into `out`.
///
/// # Safety
///
/// `p .. p + out.len()` must be valid for reads, and every concurrent access to those bytes
/// must be atomic (the contract of [`DeviceBytes::new`](super::DeviceBytes::new)).
#[inline]
pub(crate) unsafe fn load_into(p: *const u8, out: &mut [u8]) {
    let head = p.align_offset(8).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    let mut i = 0;
    while i < first.len() {
        let a = p as usize + i;
        if a % 4 == 0 && first.len() - i >= 4 {
            // SAFETY: aligned to 4 and inside the range (i + 4 <= head <= out.len()).
            let v = unsafe { load32(p.add(i).cast::<u32>()) };
            first[i..i + 4].copy_from_slice(&v.to_ne_bytes());
            i += 4;
        } else if a % 2 == 0 && first.len() - i >= 2 {
            // SAFETY: aligned to 2 and inside the range.
            let v = unsafe { load16(p.add(i).cast::<u16>()) };
            first[i..i + 2].copy_from_slice(&v.to_ne_bytes());
            i += 2;
        } else {
            // SAFETY: inside the range.
            first[i] = unsafe { load8(p.add(i)) };
            i += 1;
        }
    }
    // SAFETY: head <= out.len(), inside the range.
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact_mut(8);
    let mut at = 0;
    for o in &mut words {
        // SAFETY: 8-byte aligned (p is, at is a multiple of 8) and inside the range
        // (head + at + 8 <= out.len()).
        let v = unsafe { load64(p.add(at).cast::<u64>()) };
        o.copy_from_slice(&v.to_ne_bytes());
        at += 8;
    }
    let tail = words.into_remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        // SAFETY: aligned to 4 (8-aligned plus a multiple of 8), inside the range.
        let v = unsafe { load32(p.add(at + t).cast::<u32>()) };
        tail[t..t + 4].copy_from_slice(&v.to_ne_bytes());
        t += 4;
    }
    if tail.len() - t >= 2 {
        // SAFETY: aligned to 2, inside the range.
        let v = unsafe { load16(p.add(at + t).cast::<u16>()) };
        tail[t..t + 2].copy_from_slice(&v.to_ne_bytes());
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the range.
        tail[t] = unsafe { load8(p.add(at + t)) };
    }
}

/// Copies `data` to `p`, as [`load_into`] reads.
///
/// # Safety
///
/// `p .. p + data.len()` must be valid for writes, and every concurrent access to those bytes
/// must be atomic.
#[inline]
pub(crate) unsafe fn store_from(p: *mut u8, data: &[u8]) {
    let head = p.align_offset(8).min(data.len());
    let (first, rest) = data.split_at(head);
    let mut i = 0;
    while i < first.len() {
        let a = p as usize + i;
        if a % 4 == 0 && first.len() - i >= 4 {
            let b = [first[i], first[i + 1], first[i + 2], first[i + 3]];
            // SAFETY: aligned to 4 and inside the range (i + 4 <= head <= data.len()).
            unsafe { store32(p.add(i).cast::<u32>(), u32::from_ne_bytes(b)) };
            i += 4;
        } else if a % 2 == 0 && first.len() - i >= 2 {
            let b = [first[i], first[i + 1]];
            // SAFETY: aligned to 2 and inside the range.
            unsafe { store16(p.add(i).cast::<u16>(), u16::from_ne_bytes(b)) };
            i += 2;
        } else {
            // SAFETY: inside the range.
            unsafe { store8(p.add(i), first[i]) };
            i += 1;
        }
    }
    // SAFETY: head <= data.len(), inside the range.
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact(8);
    let mut at = 0;
    for d in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(d);
        // SAFETY: an aligned word inside the range, as in `load_into`.
        unsafe { store64(p.add(at).cast::<u64>(), u64::from_ne_bytes(b)) };
        at += 8;
    }
    let tail = words.remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        let b = [tail[t], tail[t + 1], tail[t + 2], tail[t + 3]];
        // SAFETY: aligned to 4, inside the range.
        unsafe { store32(p.add(at + t).cast::<u32>(), u32::from_ne_bytes(b)) };
        t += 4;
    }
    if tail.len() - t >= 2 {
        let b = [tail[t], tail[t + 1]];
        // SAFETY: aligned to 2, inside the range.
        unsafe { store16(p.add(at + t).cast::<u16>(), u16::from_ne_bytes(b)) };
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the range.
        unsafe { store8(p.add(at + t), tail[t]) };
    }
}

#[cfg(test)]
mod tests {
    use crate::rt::{Bytes as _, BytesMut as _, DeviceBytes};

    /// Every start offset (so every alignment) and length up to 40 bytes: the copies move
    /// exactly the bytes asked for and touch nothing around them.
    #[test]
    fn copies_every_alignment_and_length_exactly() {
        // Under Miri (a thousand times slower) each alignment once and lengths up to three
        // words: still every split into an unaligned head, whole words and a tail.
        let (starts, max_len) = if cfg!(miri) { (8, 24) } else { (16, 40) };
        let mut mem = [0u64; 8];
        let base = mem.as_mut_ptr().cast::<u8>();
        let src: [u8; 64] = core::array::from_fn(|i| i as u8 ^ 0xa5);
        for start in 0..starts {
            for len in 0..=max_len {
                // SAFETY: `mem` is 64 bytes, touched only through this window meanwhile.
                let mut w = unsafe { DeviceBytes::new(base, 64) };
                w.write_bytes(0, &[0xee; 64]);
                w.write_bytes(start, &src[..len]);
                let mut all = [0u8; 64];
                w.read_bytes(0, &mut all);
                for (k, &b) in all.iter().enumerate() {
                    let want = if (start..start + len).contains(&k) {
                        src[k - start]
                    } else {
                        0xee
                    };
                    assert_eq!(b, want, "start {start} len {len} byte {k}");
                }
                let mut out = [0u8; 40];
                w.read_bytes(start, &mut out[..len]);
                assert_eq!(out[..len], src[..len], "start {start} len {len}");
            }
        }
    }
}
