//! Where perftest's bandwidth tests put their bytes, so that every byte the peer writes or
//! reads can be predicted and checked.
//!
//! perftest's buffer (one QP, one flow) is `2 × INC(BUFF_SIZE)` bytes, `BUFF_SIZE` being the
//! larger of the message size and the page size ("cycle buffer", after both sides took the
//! larger page size) and `INC(x)` `x` rounded up to the cache line (at least one line). The
//! first `BUFF_SIZE` bytes are the local (send) side; the key message advertises the address
//! `BUFF_SIZE` bytes in, the target of the peer's RDMA. Messages of at most half a page cycle
//! through `page / INC(size)` slots `INC(size)` apart, message `n` using slot `n mod slots`,
//! at the same offset in the sender's buffer and in the target; larger messages all use
//! offset 0. Atomics (8 bytes) cycle the same way.
//!
//! perftest fills the whole buffer with `rand()` bytes, or, with
//! `--payload_file_path=FILE`, with the file's pattern repeated from the buffer's first byte
//! (index `i` holds pattern byte `i mod len`, the pattern cut to the message size). The file
//! holds 32-bit words written `0xAABBCCDD`, comma separated, each word's bytes stored least
//! significant first (DD CC BB AA). With a pattern both ends know, every byte is predictable.

/// perftest's message placement for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes per message.
    pub size: usize,
    /// The page size both sides agreed on (the larger).
    pub cycle: usize,
    /// The cache line size both sides agreed on (the larger).
    pub line: usize,
}

impl Layout {
    /// `INC(x)`: `x` rounded up to the cache line, at least one line.
    fn inc_of(&self, x: usize) -> usize {
        let line = self.line.max(1);
        if x > line {
            x.div_ceil(line) * line
        } else {
            line
        }
    }

    /// Distance between consecutive slots.
    pub fn inc(&self) -> usize {
        self.inc_of(self.size)
    }

    /// `BUFF_SIZE`: where the target half starts.
    pub fn target(&self) -> usize {
        self.size.max(self.cycle)
    }

    /// Bytes of the whole buffer.
    pub fn len(&self) -> usize {
        2 * self.inc_of(self.target())
    }

    /// Slots the messages cycle through.
    pub fn slots(&self) -> usize {
        if self.size <= self.cycle / 2 {
            (self.cycle / self.inc()).max(1)
        } else {
            1
        }
    }

    /// Offset of message `n` from the target address (and in the sender's buffer).
    pub fn offset(&self, n: u64) -> usize {
        (n % self.slots() as u64) as usize * self.inc()
    }

    /// How many of `iters` messages go to slot `k`.
    pub fn hits(&self, iters: u64, k: usize) -> u64 {
        let s = self.slots() as u64;
        iters / s + u64::from((k as u64) < iters % s)
    }

    /// Whether byte `o` of the target half is written by some of `iters` messages.
    pub fn written(&self, iters: u64, o: usize) -> bool {
        let (k, within) = (o / self.inc(), o % self.inc());
        k < self.slots() && within < self.size && self.hits(iters, k) > 0
    }
}

/// A `--payload_file_path` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    bytes: Vec<u8>,
}

/// The pattern the example and the guest milestone use unless told otherwise: 16 words, no
/// two bytes of a word alike and no zero byte, so a misplaced or missing byte shows.
pub const DEFAULT_PAYLOAD: &str = "0x4d4c5835,0x72646d61,0x5f62775f,0x31362121,\
0xa5c3e10f,0x0e1d2c3b,0x4a596877,0x8695a4b3,0xc2d1e0ff,0x11223344,0x55667788,0x99aabbcc,\
0xddeeff12,0x13579bdf,0x2468ace1,0xfedcba98";

impl Payload {
    /// Parses perftest's file syntax: words `0x` + 8 hex digits separated by commas (or
    /// newlines after the first comma, which perftest's reader also takes).
    pub fn parse(text: &str) -> Result<Payload, String> {
        let mut bytes = Vec::new();
        for word in text.split([',', '\n']).filter(|w| !w.is_empty()) {
            let digits = word
                .strip_prefix("0x")
                .or_else(|| word.strip_prefix("0X"))
                .filter(|d| d.len() == 8 && d.bytes().all(|c| c.is_ascii_hexdigit()))
                .ok_or(format!("payload word {word:?} is not 0x and 8 hex digits"))?;
            let v = u32::from_str_radix(digits, 16).map_err(|e| e.to_string())?;
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        if bytes.is_empty() {
            return Err("empty payload".into());
        }
        Ok(Payload { bytes })
    }

    /// Byte `i` of a perftest buffer filled with this pattern for messages of `size` bytes.
    pub fn fill(&self, size: usize, i: usize) -> u8 {
        let n = self.bytes.len().min(size.max(1));
        self.bytes[i % n]
    }

    /// `len` bytes of such a buffer from index `at`.
    pub fn span(&self, size: usize, at: usize, len: usize) -> Vec<u8> {
        (at..at + len).map(|i| self.fill(size, i)).collect()
    }
}
