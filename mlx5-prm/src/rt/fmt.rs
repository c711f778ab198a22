//! Helpers for the generated `Debug` implementations: enum values by name (or raw number when
//! unknown) and reserved bits that are not zero, which usually means a layout mistake or a
//! newer device.

use super::{Bytes, UnknownValue};
use core::fmt;

/// Shows `Ok(v)` as `v` and an unknown value as `unknown(0x..)`.
pub struct EnumValue<T>(pub Result<T, UnknownValue>);

impl<T: fmt::Debug> fmt::Debug for EnumValue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Ok(v) => v.fmt(f),
            Err(e) => write!(f, "unknown(0x{:x})", e.raw),
        }
    }
}

/// Shows a number in hex.
pub struct Hex(pub u64);

impl fmt::Debug for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}", self.0)
    }
}

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

/// The reserved bits of one dword: `(byte offset, mask of reserved bits)`.
pub type ReservedMask = (u32, u32);

/// Reserved bits that are set, shown as `[0x04: 0x0000ff00, ...]`.
pub struct ReservedSet<'a, B: Bytes + ?Sized> {
    /// The storage.
    pub buf: &'a B,
    /// The layout's reserved bits.
    pub masks: &'static [ReservedMask],
}

impl<B: Bytes + ?Sized> ReservedSet<'_, B> {
    /// True when any reserved bit is set.
    pub fn any(&self) -> bool {
        self.set().next().is_some()
    }

    fn set(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.masks.iter().filter_map(|&(at, mask)| {
            let v = self.buf.read_be32(at as usize) & mask;
            (v != 0).then_some((at, v))
        })
    }
}

impl<B: Bytes + ?Sized> fmt::Debug for ReservedSet<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut l = f.debug_list();
        for (at, v) in self.set() {
            l.entry(&format_args!("0x{at:02x}: 0x{v:08x}"));
        }
        l.finish()
    }
}

/// Debug-formats through a closure (arrays, unions).
pub struct With<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result>(pub F);

impl<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result> fmt::Debug for With<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.0)(f)
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
