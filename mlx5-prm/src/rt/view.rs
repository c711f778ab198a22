//! The trait every generated structure view implements, for code generic over layouts (a
//! command interface, a hex-dump decoder).

use super::{Bytes, LayoutError};

/// A typed view of one layout over storage `B`.
pub trait View<B: Bytes>: Sized {
    /// The layout's name as the spec writes it.
    const NAME: &'static str;
    /// Size of the fixed part in bytes.
    const SIZE: usize;

    /// Wraps `buf`, checking it holds at least [`Self::SIZE`] bytes.
    fn new_checked(buf: B) -> Result<Self, LayoutError>;
    /// Wraps `buf` without checking its length; accessors past its end panic.
    fn new_unchecked(buf: B) -> Self;
    /// The storage back.
    fn into_inner(self) -> B;
    /// The storage.
    fn storage(&self) -> &B;
    /// The storage, mutably.
    fn storage_mut(&mut self) -> &mut B;
}

/// Checks that `buf` can hold `size` bytes of layout `name`.
#[inline]
pub fn check_len<B: Bytes>(name: &'static str, size: usize, buf: &B) -> Result<(), LayoutError> {
    if buf.len() < size {
        Err(LayoutError {
            layout: name,
            needed: size,
            actual: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// The first `N` bytes of `buf` as an array, whose length is then part of its type; the
/// [`LayoutError`] of [`check_len`] when `buf` is shorter. The `from_slice` constructors of
/// generated views use it (through `ByteArray`).
#[inline]
pub fn fixed_prefix<'a, const N: usize>(
    name: &'static str,
    buf: &'a [u8],
) -> Result<&'a [u8; N], LayoutError> {
    match buf.first_chunk::<N>() {
        Some(b) => Ok(b),
        None => Err(LayoutError {
            layout: name,
            needed: N,
            actual: buf.len(),
        }),
    }
}

/// [`fixed_prefix`], writable (for the `from_slice_mut` constructors).
#[inline]
pub fn fixed_prefix_mut<'a, const N: usize>(
    name: &'static str,
    buf: &'a mut [u8],
) -> Result<&'a mut [u8; N], LayoutError> {
    let actual = buf.len();
    match buf.first_chunk_mut::<N>() {
        Some(b) => Ok(b),
        None => Err(LayoutError {
            layout: name,
            needed: N,
            actual,
        }),
    }
}

/// An accessor function of a reflection table: `Some(f)` when this crate is built with feature
/// `reflect`, `None` otherwise. The tables also drive the decoding `Debug` (feature `debug`),
/// which needs only offsets and widths; leaving the functions out there saves compiling two
/// closures per field. The choice is made where this crate is compiled, so a crate generated
/// against it agrees with its `reflect` feature.
#[cfg(feature = "reflect")]
#[doc(hidden)]
#[macro_export]
macro_rules! __prm_accessor {
    ($f:expr) => {
        ::core::option::Option::Some($f)
    };
}

/// See the `reflect` version above.
#[cfg(not(feature = "reflect"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __prm_accessor {
    ($f:expr) => {
        ::core::option::Option::None
    };
}
