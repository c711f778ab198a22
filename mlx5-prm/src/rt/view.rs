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
/// generated views use it.
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

/// The `Debug` of a view when the decoding one (the crate's `debug` feature) is not built: the
/// view's name, its length and its bytes in hex, so a view can always go into `dbg!`, an
/// `assert_eq!` or a `#[derive(Debug)]` struct.
#[doc(hidden)]
#[macro_export]
macro_rules! __prm_raw_debug {
    ($ty:ident) => {
        impl<B: $crate::rt::Bytes> ::core::fmt::Debug for $ty<B> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                $crate::rt::fmt::raw(f, stringify!($ty), &self.buf)
            }
        }
    };
}

/// The constructors and trait implementations every generated view shares; generated code
/// invokes it once per layout so the boilerplate lives here, once.
///
/// `__prm_view!(Foo, "foo", 64)` is for a layout that ends with its fixed part; it also gets
/// `from_slice` and `from_slice_mut`, which borrow the first 64 bytes of a slice as
/// `&[u8; 64]`. A layout whose storage runs on past its fixed part (a trailing array, its
/// own or a nested view's) is declared `__prm_view!(Foo, "foo", 64, runs_on)` and does not
/// get them: its trailing accessors count elements from the buffer's length, which would
/// then be the fixed part's, so the elements would silently vanish.
#[doc(hidden)]
#[macro_export]
macro_rules! __prm_view {
    ($ty:ident, $name:literal, $size:literal) => {
        $crate::__prm_view!(@any $ty, $name, $size);

        impl<'a> $ty<&'a [u8; $size]> {
            /// Wraps the first `SIZE` bytes of `buf` (the error is `new_checked`'s when it is
            /// shorter).
            ///
            /// The view's storage is then `&[u8; SIZE]`: the length is part of the type, so
            /// accessors compile without a bounds check, to the same instructions as on the
            /// owned form. A view over `&[u8]` (from `new_checked`) compares the slice's
            /// length again at every access, as the compiler cannot see the check made when it
            /// was built.
            #[inline]
            pub fn from_slice(
                buf: &'a [u8],
            ) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                Ok(Self {
                    buf: $crate::rt::fixed_prefix::<$size>($name, buf)?,
                })
            }
        }

        impl<'a> $ty<&'a mut [u8; $size]> {
            /// Wraps the first `SIZE` bytes of `buf`, writably (the error is `new_checked`'s
            /// when it is shorter).
            ///
            /// As `from_slice`: the storage is `&mut [u8; SIZE]`, so getters and setters
            /// compile without bounds checks, to the owned form's instructions.
            #[inline]
            pub fn from_slice_mut(
                buf: &'a mut [u8],
            ) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                Ok(Self {
                    buf: $crate::rt::fixed_prefix_mut::<$size>($name, buf)?,
                })
            }
        }
    };
    ($ty:ident, $name:literal, $size:literal, runs_on) => {
        $crate::__prm_view!(@any $ty, $name, $size);
    };
    (@any $ty:ident, $name:literal, $size:literal) => {
        impl<B: $crate::rt::Bytes> $ty<B> {
            /// Wraps `buf`, checking that it holds the whole fixed part of the layout.
            #[inline]
            pub fn new_checked(buf: B) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                $crate::rt::check_len($name, $size, &buf)?;
                Ok(Self { buf })
            }

            /// Wraps `buf` without checking its length; accessors past its end panic.
            #[inline]
            pub const fn new_unchecked(buf: B) -> Self {
                Self { buf }
            }

            /// The storage back.
            #[inline]
            pub fn into_inner(self) -> B {
                self.buf
            }

            /// The storage.
            #[inline]
            pub fn storage(&self) -> &B {
                &self.buf
            }

            /// The storage, mutably.
            #[inline]
            pub fn storage_mut(&mut self) -> &mut B {
                &mut self.buf
            }
        }

        impl<B: $crate::rt::Bytes> $crate::rt::View<B> for $ty<B> {
            const NAME: &'static str = $name;
            const SIZE: usize = $size;
            fn new_checked(buf: B) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                Self::new_checked(buf)
            }
            fn new_unchecked(buf: B) -> Self {
                Self { buf }
            }
            fn into_inner(self) -> B {
                self.buf
            }
            fn storage(&self) -> &B {
                &self.buf
            }
            fn storage_mut(&mut self) -> &mut B {
                &mut self.buf
            }
        }

        impl $ty<[u8; $size]> {
            /// Size of the fixed part in bytes.
            pub const SIZE: usize = $size;

            /// An owned, zeroed instance.
            #[inline]
            pub const fn zeroed() -> Self {
                Self { buf: [0; $size] }
            }
        }

        impl ::core::default::Default for $ty<[u8; $size]> {
            fn default() -> Self {
                Self::zeroed()
            }
        }
    };
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
