//! The bytes every transfer carries: a stream whose byte at offset `i` is a function of a seed
//! and `i` alone, so a receiver checks each byte where it lands (a lost, duplicated, reordered
//! or corrupted range is found at its offset) without the sender's data, and a CRC-32 over the
//! stream that both ends print.

/// The stream's 8-byte word at word index `w` (SplitMix64 of the seed and the index).
fn word(seed: u64, w: u64) -> u64 {
    let mut z = seed ^ w.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `out` with the stream's bytes from `offset` on.
pub fn fill(seed: u64, offset: u64, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        let at = offset + i as u64;
        *b = word(seed, at / 8).to_le_bytes()[(at % 8) as usize];
    }
}

/// The offset of the first byte of `data` that differs from the stream at `offset`, if any.
pub fn first_mismatch(seed: u64, offset: u64, data: &[u8]) -> Option<u64> {
    let mut want = vec![0u8; data.len()];
    fill(seed, offset, &mut want);
    data.iter()
        .zip(&want)
        .position(|(a, b)| a != b)
        .map(|i| offset + i as u64)
}

/// A receiver's running check: bytes in order, the first mismatch, and the CRC-32 of what
/// arrived.
#[derive(Debug)]
pub struct Checker {
    seed: u64,
    bytes: u64,
    mismatch: Option<u64>,
    crc: crc32fast::Hasher,
}

impl Checker {
    /// Nothing received yet.
    pub fn new(seed: u64) -> Checker {
        Checker {
            seed,
            bytes: 0,
            mismatch: None,
            crc: crc32fast::Hasher::new(),
        }
    }

    /// The next `data` of the stream arrived.
    pub fn take(&mut self, data: &[u8]) {
        if self.mismatch.is_none() {
            self.mismatch = first_mismatch(self.seed, self.bytes, data);
        }
        self.crc.update(data);
        self.bytes += data.len() as u64;
    }

    /// Bytes taken.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Offset of the first byte that was not the stream's.
    pub fn mismatch(&self) -> Option<u64> {
        self.mismatch
    }

    /// CRC-32 of every byte taken.
    pub fn crc(&self) -> u32 {
        self.crc.clone().finalize()
    }
}

/// CRC-32 of the stream's first `len` bytes (what a sender prints).
pub fn crc_of(seed: u64, len: u64) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        fill(seed, at, &mut buf[..n]);
        crc.update(&buf[..n]);
        at += n as u64;
    }
    crc.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_split_gives_the_same_stream() {
        let mut whole = vec![0u8; 1000];
        fill(7, 0, &mut whole);
        let mut c = Checker::new(7);
        for chunk in whole.chunks(13) {
            c.take(chunk);
        }
        assert_eq!(c.mismatch(), None);
        assert_eq!(c.bytes(), 1000);
        assert_eq!(c.crc(), crc_of(7, 1000));
        assert_eq!(c.crc(), crc32fast::hash(&whole));
    }

    #[test]
    fn a_changed_byte_is_found_at_its_offset() {
        let mut data = vec![0u8; 300];
        fill(1, 0, &mut data);
        data[211] ^= 0x10;
        let mut c = Checker::new(1);
        c.take(&data[..100]);
        c.take(&data[100..]);
        assert_eq!(c.mismatch(), Some(211));
    }

    #[test]
    fn seeds_differ() {
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        fill(1, 0, &mut a);
        fill(2, 0, &mut b);
        assert_ne!(a, b);
    }
}
