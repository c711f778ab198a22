//! Word-wise atomic copies between windows on DMA memory and ordinary buffers: aligned
//! 8-byte accesses in the middle, 4-, 2- and 1-byte ones at the ends.

use mlx5_prm::rt::shared::{load16, load32, load64, load8, store16, store32, store64, store8};
use mlx5_prm::rt::{Bytes as _, BytesMut as _, DeviceBytes};

/// Copies the start of window `w` into `out` (which must not be longer than `w`): aligned
/// 8-byte atomic loads, with the widest aligned 4-, 2- and 1-byte loads at the ends. Through the
/// bounds-checked accessors of [`DeviceBytes`], byte by byte, copies were the larger part of
/// moving a frame.
pub(crate) fn copy_out(w: &DeviceBytes<'_>, out: &mut [u8]) {
    if out.len() > w.len() {
        w.read_bytes(0, out); // Panics, as any access past a window does.
        return;
    }
    let p = w.as_ptr();
    let head = p.align_offset(8).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    // Up to the first 8-byte boundary, the widest aligned loads that fit (a dword at a 4-byte
    // boundary stays one 4-byte load: the width the device or driver writes it with).
    let mut i = 0;
    while i < first.len() {
        let a = p as usize + i;
        if a % 4 == 0 && first.len() - i >= 4 {
            // SAFETY: aligned to 4, inside the window (i + 4 <= head <= w.len()).
            let v = unsafe { load32(p.add(i).cast::<u32>()) };
            first[i..i + 4].copy_from_slice(&v.to_ne_bytes());
            i += 4;
        } else if a % 2 == 0 && first.len() - i >= 2 {
            // SAFETY: aligned to 2, inside the window.
            let v = unsafe { load16(p.add(i).cast::<u16>()) };
            first[i..i + 2].copy_from_slice(&v.to_ne_bytes());
            i += 2;
        } else {
            // SAFETY: inside the window.
            first[i] = unsafe { load8(p.add(i)) };
            i += 1;
        }
    }
    // SAFETY: head <= out.len() <= w.len().
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact_mut(8);
    let mut at = 0;
    for o in &mut words {
        // SAFETY: `p + at` is 8-byte aligned (p is, at is a multiple of 8) and the word lies
        // inside the window (head + at + 8 <= out.len() <= w.len()).
        let v = unsafe { load64(p.add(at).cast::<u64>()) };
        o.copy_from_slice(&v.to_ne_bytes());
        at += 8;
    }
    let tail = words.into_remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        // SAFETY: aligned to 4 (8-aligned plus a multiple of 4), inside the window.
        let v = unsafe { load32(p.add(at + t).cast::<u32>()) };
        tail[t..t + 4].copy_from_slice(&v.to_ne_bytes());
        t += 4;
    }
    if tail.len() - t >= 2 {
        // SAFETY: aligned to 2, inside the window.
        let v = unsafe { load16(p.add(at + t).cast::<u16>()) };
        tail[t..t + 2].copy_from_slice(&v.to_ne_bytes());
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the window.
        tail[t] = unsafe { load8(p.add(at + t)) };
    }
}

/// Stores `words` (numeric values of big-endian 8-byte units) at the start of window `w`
/// (8-byte aligned, at least that long), one aligned 8-byte atomic store each, in order.
/// False, and nothing stored, when the window is too short or not aligned.
pub(crate) fn store_words(w: &mut DeviceBytes<'_>, words: &[u64]) -> bool {
    let p = w.as_ptr();
    if words.len() * 8 > w.len() || p.align_offset(8) != 0 {
        return false;
    }
    for (k, &v) in words.iter().enumerate() {
        // SAFETY: 8-byte aligned (checked) and inside the window (8k + 8 <= w.len()).
        unsafe { store64(p.add(8 * k).cast::<u64>(), v.to_be()) };
    }
    true
}

/// Copies `data` (not longer than `w`) to the start of window `w`, like [`copy_out`].
pub(crate) fn copy_in(w: &mut DeviceBytes<'_>, data: &[u8]) {
    if data.len() > w.len() {
        w.write_bytes(0, data); // Panics, as any access past a window does.
        return;
    }
    let p = w.as_ptr();
    let head = p.align_offset(8).min(data.len());
    let (first, rest) = data.split_at(head);
    // As in `copy_out`: the widest aligned stores up to the first 8-byte boundary.
    let mut i = 0;
    while i < first.len() {
        let a = p as usize + i;
        if a % 4 == 0 && first.len() - i >= 4 {
            let mut b = [0u8; 4];
            b.copy_from_slice(&first[i..i + 4]);
            // SAFETY: aligned to 4, inside the window (i + 4 <= head <= w.len()).
            unsafe { store32(p.add(i).cast::<u32>(), u32::from_ne_bytes(b)) };
            i += 4;
        } else if a % 2 == 0 && first.len() - i >= 2 {
            let b = [first[i], first[i + 1]];
            // SAFETY: aligned to 2, inside the window.
            unsafe { store16(p.add(i).cast::<u16>(), u16::from_ne_bytes(b)) };
            i += 2;
        } else {
            // SAFETY: inside the window.
            unsafe { store8(p.add(i), first[i]) };
            i += 1;
        }
    }
    // SAFETY: head <= data.len() <= w.len().
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact(8);
    let mut at = 0;
    for d in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(d);
        // SAFETY: an aligned word inside the window, as in `copy_out`.
        unsafe { store64(p.add(at).cast::<u64>(), u64::from_ne_bytes(b)) };
        at += 8;
    }
    let tail = words.remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&tail[t..t + 4]);
        // SAFETY: aligned to 4, inside the window.
        unsafe { store32(p.add(at + t).cast::<u32>(), u32::from_ne_bytes(b)) };
        t += 4;
    }
    if tail.len() - t >= 2 {
        let b = [tail[t], tail[t + 1]];
        // SAFETY: aligned to 2, inside the window.
        unsafe { store16(p.add(at + t).cast::<u16>(), u16::from_ne_bytes(b)) };
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the window.
        unsafe { store8(p.add(at + t), tail[t]) };
    }
}

/// Copies the start of window `w` into `out` (4-byte aligned, a multiple of 4 bytes long, not
/// longer than `w`) with aligned 4-byte atomic loads.
pub(crate) fn read_dwords(w: &DeviceBytes<'_>, out: &mut [u8]) {
    if out.len() > w.len() || w.as_ptr().align_offset(4) != 0 {
        w.read_bytes(0, out); // Panics past the window; byte-wise when not aligned.
        return;
    }
    let p = w.as_ptr();
    for (k, o) in out.chunks_exact_mut(4).enumerate() {
        // SAFETY: 4-byte aligned (checked) and inside the window (4k + 4 <= out.len() <=
        // w.len()).
        let v = unsafe { load32(p.add(4 * k).cast::<u32>()) };
        o.copy_from_slice(&v.to_ne_bytes());
    }
}
