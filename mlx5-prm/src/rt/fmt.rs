//! Helpers for the `Debug` of the views: the plain form every view has (name, length, hex
//! bytes), and the hex and list formatting the decoded form (`rt::reflect::Decoded`) shares.

use super::Bytes;
use core::fmt;

/// Shows bytes as hex pairs.
pub struct HexBytes<'a>(pub &'a [u8]);

impl fmt::Debug for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 && i % 4 == 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// How many elements of a long array `Debug` shows before eliding the rest.
pub const MAX_ELEMENTS: usize = 16;

/// Shows up to [`MAX_ELEMENTS`] items, then how many were left out.
pub fn list<T: fmt::Debug>(
    f: &mut fmt::Formatter<'_>,
    len: usize,
    items: impl Iterator<Item = T>,
) -> fmt::Result {
    let mut l = f.debug_list();
    l.entries(items.take(MAX_ELEMENTS));
    if len > MAX_ELEMENTS {
        l.entry(&format_args!("... {} more", len - MAX_ELEMENTS));
    }
    l.finish()
}

/// A view shown without decoding: `Name { len: N, bytes: 00112233 44556677 ... }`, every byte
/// (the cheap `Debug` of the generated views when the `debug` feature is off).
pub fn raw<B: Bytes + ?Sized>(f: &mut fmt::Formatter<'_>, name: &str, buf: &B) -> fmt::Result {
    let mut bytes = [0u8; 64];
    let len = buf.len();
    write!(f, "{name} {{ len: {len}, bytes: ")?;
    let mut at = 0;
    while at < len {
        let n = bytes.len().min(len - at);
        buf.read_bytes(at, &mut bytes[..n]);
        if at > 0 {
            f.write_str(" ")?;
        }
        fmt::Debug::fmt(&HexBytes(&bytes[..n]), f)?;
        at += n;
    }
    f.write_str(" }")
}
