//! The decision bytes of a [`super::ForgeBackend`] and the changes they choose: each chance to
//! forge reads one byte (0, or a spent stream, leaves the memory alone), and the next bytes
//! pick the change and where it goes.

use mlx5_prm::rt::Field;

/// The decision bytes; spent bytes read as 0 (no forgery).
pub(super) struct Source {
    pub(super) bytes: Vec<u8>,
    pub(super) at: usize,
}

impl Source {
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at = self.at.saturating_add(1);
        b
    }

    fn word(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// What to do, or `None` to leave the memory alone.
    pub(super) fn op(&mut self) -> Option<Op> {
        let b = self.byte();
        Some(match b % 4 {
            _ if b == 0 => return None,
            0 => Op::Flip(u32::from(self.byte())),
            1 => Op::Ones,
            2 => Op::Zero,
            _ => Op::Value(self.word()),
        })
    }

    /// An index below `n` (which must not be 0).
    pub(super) fn pick(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }
}

/// A change to (at most) 32 bits of a field.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    Flip(u32),
    Ones,
    Zero,
    Value(u32),
}

/// Applies `op` to field `f` of `bytes` (MSB-first bit numbering, as the generated layouts'
/// fields are); a field wider than 32 bits has one of its 32-bit words changed, `word`
/// choosing which. Returns a description.
pub(super) fn apply(bytes: &mut [u8], f: Field, op: Op, word: usize) -> String {
    let words = (f.width as usize).div_ceil(32).max(1);
    let start = f.bit_offset + (word % words) * 32;
    let width = (f.bit_offset + f.width as usize - start).min(32);
    let mut set = |i: usize, v: Option<bool>| {
        let p = start + i;
        let (byte, mask) = (p / 8, 0x80u8 >> (p % 8));
        if let Some(b) = bytes.get_mut(byte) {
            match v {
                Some(true) => *b |= mask,
                Some(false) => *b &= !mask,
                None => *b ^= mask,
            }
        }
    };
    for i in 0..width {
        match op {
            Op::Flip(k) if i == k as usize % width => set(i, None),
            Op::Flip(_) => {}
            Op::Ones => set(i, Some(true)),
            Op::Zero => set(i, Some(false)),
            Op::Value(v) => set(i, Some((v >> (width - 1 - i)) & 1 == 1)),
        }
    }
    format!("{} (bits {start}+{width}): {op:?}", f.name)
}
