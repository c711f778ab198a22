//! Word-wise atomic accesses to windows on DMA memory beyond the runtime's: CQE words stored
//! as 8-byte units, and dword-only reads. (Bulk copies, aligned 8-byte accesses in the middle,
//! are the runtime's `DeviceBytes::read_bytes` and `write_bytes`.)

use mlx5_prm::rt::shared::{load32, store64};
use mlx5_prm::rt::{Bytes as _, DeviceBytes};

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
