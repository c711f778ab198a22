//! Word-wise volatile copies between windows on DMA memory and ordinary buffers: aligned
//! 8-byte accesses in the middle, 4-, 2- and 1-byte ones at the ends.

use mlx5_prm::rt::{Bytes as _, BytesMut as _, DeviceBytes};

/// Copies the start of window `w` into `out` (which must not be longer than `w`): aligned
/// 8-byte volatile loads, with aligned 4-, 2- and 1-byte loads at the ends. Through the
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
    for (i, o) in first.iter_mut().enumerate() {
        // SAFETY: i < out.len() <= w.len(): inside the window, valid for volatile reads.
        *o = unsafe { p.add(i).read_volatile() };
    }
    // SAFETY: head <= out.len() <= w.len().
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact_mut(8);
    let mut at = 0;
    for o in &mut words {
        // SAFETY: `p + at` is 8-byte aligned (p is, at is a multiple of 8) and the word lies
        // inside the window (head + at + 8 <= out.len() <= w.len()).
        let v = unsafe { p.add(at).cast::<u64>().read_volatile() };
        o.copy_from_slice(&v.to_ne_bytes());
        at += 8;
    }
    let tail = words.into_remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        // SAFETY: aligned to 4 (8-aligned plus a multiple of 4), inside the window.
        let v = unsafe { p.add(at + t).cast::<u32>().read_volatile() };
        tail[t..t + 4].copy_from_slice(&v.to_ne_bytes());
        t += 4;
    }
    if tail.len() - t >= 2 {
        // SAFETY: aligned to 2, inside the window.
        let v = unsafe { p.add(at + t).cast::<u16>().read_volatile() };
        tail[t..t + 2].copy_from_slice(&v.to_ne_bytes());
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the window.
        tail[t] = unsafe { p.add(at + t).read_volatile() };
    }
}

/// Stores `words` (numeric values of big-endian 8-byte units) at the start of window `w`
/// (8-byte aligned, at least that long), one aligned 8-byte volatile store each, in order.
/// False, and nothing stored, when the window is too short or not aligned.
pub(crate) fn store_words(w: &mut DeviceBytes<'_>, words: &[u64]) -> bool {
    let p = w.as_ptr();
    if words.len() * 8 > w.len() || p.align_offset(8) != 0 {
        return false;
    }
    for (k, &v) in words.iter().enumerate() {
        // SAFETY: 8-byte aligned (checked) and inside the window (8k + 8 <= w.len()).
        unsafe { p.add(8 * k).cast::<u64>().write_volatile(v.to_be()) };
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
    for (i, &d) in first.iter().enumerate() {
        // SAFETY: i < data.len() <= w.len(): inside the window, valid for volatile writes.
        unsafe { p.add(i).write_volatile(d) };
    }
    // SAFETY: head <= data.len() <= w.len().
    let p = unsafe { p.add(head) };
    let mut words = rest.chunks_exact(8);
    let mut at = 0;
    for d in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(d);
        // SAFETY: an aligned word inside the window, as in `copy_out`.
        unsafe {
            p.add(at)
                .cast::<u64>()
                .write_volatile(u64::from_ne_bytes(b))
        };
        at += 8;
    }
    let tail = words.remainder();
    let mut t = 0;
    if tail.len() - t >= 4 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&tail[t..t + 4]);
        // SAFETY: aligned to 4, inside the window.
        unsafe {
            p.add(at + t)
                .cast::<u32>()
                .write_volatile(u32::from_ne_bytes(b))
        };
        t += 4;
    }
    if tail.len() - t >= 2 {
        let b = [tail[t], tail[t + 1]];
        // SAFETY: aligned to 2, inside the window.
        unsafe {
            p.add(at + t)
                .cast::<u16>()
                .write_volatile(u16::from_ne_bytes(b))
        };
        t += 2;
    }
    if tail.len() > t {
        // SAFETY: inside the window.
        unsafe { p.add(at + t).write_volatile(tail[t]) };
    }
}

/// Copies the start of window `w` into `out` (4-byte aligned, a multiple of 4 bytes long, not
/// longer than `w`) with aligned 4-byte volatile loads.
pub(crate) fn read_dwords(w: &DeviceBytes<'_>, out: &mut [u8]) {
    if out.len() > w.len() || w.as_ptr().align_offset(4) != 0 {
        w.read_bytes(0, out); // Panics past the window; byte-wise when not aligned.
        return;
    }
    let p = w.as_ptr();
    for (k, o) in out.chunks_exact_mut(4).enumerate() {
        // SAFETY: 4-byte aligned (checked) and inside the window (4k + 4 <= out.len() <=
        // w.len()).
        let v = unsafe { p.add(4 * k).cast::<u32>().read_volatile() };
        o.copy_from_slice(&v.to_ne_bytes());
    }
}
