//! Flow group match criteria compiled for the data path.
//!
//! A group's mask is a 512-byte fte_match_param with match_criteria_enable saying which of its
//! seven 64-byte parts count; typically a few bytes (a MAC, an ethertype, ports) are set.
//! Comparing all 448 enabled bytes for every entry of every frame cost more than the rest of
//! steering, so a group keeps just the (offset, mask) pairs of its non-zero mask bytes in
//! enabled parts, and an entry keeps its value at those offsets, already masked. Both are
//! computed when the group or entry is created and never change afterwards (SET_FTE replaces
//! a whole entry; a group with entries cannot be destroyed), so nothing needs invalidating.
//! The result is exactly the byte-wise masked compare of the PRM.

use crate::exec::flow::CRITERIA_PARTS;

/// Bytes per part of fte_match_param.
const PART: usize = 64;
/// Parts of fte_match_param.
const PARTS: usize = 7;

/// The mask bytes that matter: (offset in fte_match_param, mask).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Criteria {
    bytes: Vec<(u16, u8)>,
}

impl Criteria {
    /// Compiles the mask `criteria` (fte_match_param, zeros past its end) under
    /// `criteria_enable`.
    pub fn new(criteria_enable: u8, criteria: &[u8]) -> Criteria {
        let enable = criteria_enable & CRITERIA_PARTS;
        let mut bytes = (0..PARTS)
            .filter(|part| enable >> part & 1 == 1)
            .flat_map(|part| part * PART..(part + 1) * PART)
            .filter_map(|i| {
                let m = criteria.get(i).copied().unwrap_or(0);
                (m != 0).then_some((i as u16, m))
            })
            .collect::<Vec<_>>();
        // Kept for the group's life (and copied into each entry): no spare capacity, so what
        // it takes is what the storage budget is charged for.
        bytes.shrink_to_fit();
        Criteria { bytes }
    }

    /// Bytes it keeps (charged to the storage budget by its group and each entry).
    pub fn kept(&self) -> u64 {
        std::mem::size_of_val(self.bytes.as_slice()) as u64
    }

    /// An entry's match value (fte_match_param, zeros past its end) at the offsets that
    /// matter, masked.
    pub fn masked(&self, value: &[u8]) -> Vec<u8> {
        self.bytes
            .iter()
            .map(|&(at, m)| value.get(usize::from(at)).copied().unwrap_or(0) & m)
            .collect()
    }

    /// True when `key` (a frame's fte_match_param, zeros past its end) matches an entry whose
    /// [`masked`](Criteria::masked) value is `masked`.
    #[inline]
    pub fn matches(&self, key: &[u8], masked: &[u8]) -> bool {
        self.bytes
            .iter()
            .zip(masked)
            .all(|(&(at, m), &v)| key.get(usize::from(at)).copied().unwrap_or(0) & m == v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PRM's definition, for comparison.
    fn reference(key: &[u8], enable: u8, mask: &[u8], value: &[u8]) -> bool {
        (0..PARTS)
            .filter(|part| enable >> part & 1 == 1)
            .flat_map(|part| part * PART..(part + 1) * PART)
            .all(|i| {
                let b = |s: &[u8]| s.get(i).copied().unwrap_or(0);
                b(key) & b(mask) == b(value) & b(mask)
            })
    }

    #[test]
    fn compiled_criteria_match_like_the_full_compare() {
        let mut mask = vec![0u8; 512];
        mask[..6].fill(0xff); // outer smac
        mask[0x0c] = 0xf0;
        mask[64] = 0xff; // misc part
        let mut value = vec![0u8; 512];
        value[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        value[0x0c] = 0x5a; // masked to 0x50
        let mut key = [0u8; 64];
        key[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        key[0x0c] = 0x57;
        for enable in [0u8, 1, 2, 3, 0x7f, 0xff] {
            let c = Criteria::new(enable, &mask);
            let v = c.masked(&value);
            for k in [&key[..], &[][..], &key[..3]] {
                assert_eq!(
                    c.matches(k, &v),
                    reference(k, enable & 0x7f, &mask, &value),
                    "enable {enable:#x} key {k:?}"
                );
            }
        }
        // A value that needs a non-zero byte past the parsed headers never matches them.
        value[64] = 1;
        let c = Criteria::new(3, &mask);
        assert!(!c.matches(&key, &c.masked(&value)));
        assert!(!reference(&key, 3, &mask, &value));
    }
}
