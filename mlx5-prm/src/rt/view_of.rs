//! The one generic view type every generated layout is an alias of, and the traits its
//! layout markers implement.
//!
//! A layout used to be a struct of its own with some twenty constructor, conversion and
//! trait items each; a crate of 700 layouts compiled 15,000 of those little functions. Now
//! `__prm_views!` declares `ViewOf<L, B>` and those items once per generated module (one
//! per spec file), and a layout is `pub type Foo<B = [u8; N]> = ViewOf<layouts::Foo, B>`
//! with a [`ViewLayout`] impl of constants: its getters and setters stay inherent methods of
//! `Foo<B>`, written in the generated crate. (svd2rust's PACs are built the same way:
//! `Reg<SPEC>`.) One `ViewOf` per module rather than per crate keeps method calls cheap to
//! compile: rustc weighs every inherent impl of the type that has an item of the called name.

use super::{Bytes, BytesMut, LayoutError};
use core::fmt;

/// A layout marker's facts, for the generic constructors and `Debug` of `ViewOf`.
pub trait ViewLayout: 'static {
    /// The layout's name as the spec writes it.
    const NAME: &'static str;
    /// The view's Rust name, for the plain `Debug`.
    const TYPE: &'static str;
    /// Size of the fixed part in bytes.
    const SIZE: usize;
    /// `[u8; SIZE]`: the owned storage.
    type Array: ByteArray;

    /// How a view of this layout prints with `{:?}`: by default its name, length and bytes
    /// in hex; the generated crate's decoding `Debug` (feature `debug`) overrides it.
    #[inline]
    fn debug<B: Bytes>(f: &mut fmt::Formatter<'_>, buf: &B) -> fmt::Result {
        super::fmt::raw(f, Self::TYPE, buf)
    }
}

/// A layout that ends with its fixed part, so that a view over exactly `SIZE` bytes
/// (`from_slice`, `from_slice_mut`) sees all of it. A layout whose storage runs on (a
/// trailing array, its own or a nested view's) does not implement it: its trailing
/// accessors count elements from the buffer's length, and the elements would silently
/// vanish.
pub trait FixedLayout: ViewLayout {}

/// `[u8; N]`, the owned storage of an `N`-byte layout.
pub trait ByteArray: Bytes + BytesMut + Copy + 'static {
    /// All zeroes.
    const ZERO: Self;
    /// The first `N` bytes of `buf`, or [`fixed_prefix`](super::fixed_prefix)'s error
    /// naming layout `name`.
    fn prefix<'a>(name: &'static str, buf: &'a [u8]) -> Result<&'a Self, LayoutError>;
    /// The same, writably.
    fn prefix_mut<'a>(name: &'static str, buf: &'a mut [u8]) -> Result<&'a mut Self, LayoutError>;
}

impl<const N: usize> ByteArray for [u8; N] {
    const ZERO: Self = [0; N];
    #[inline]
    fn prefix<'a>(name: &'static str, buf: &'a [u8]) -> Result<&'a Self, LayoutError> {
        super::fixed_prefix::<N>(name, buf)
    }
    #[inline]
    fn prefix_mut<'a>(name: &'static str, buf: &'a mut [u8]) -> Result<&'a mut Self, LayoutError> {
        super::fixed_prefix_mut::<N>(name, buf)
    }
}

/// Declares `ViewOf<L, B>`, the view type of the layouts of a generated module, with its
/// constructors and trait implementations. Generated code invokes it once per module, in
/// the generated crate (inherent methods of a type may only be written in the crate that
/// declares it).
///
/// `ViewOf<L, &[u8; N]>` (from `from_slice`) carries its length in its type, so accessors
/// compile without bounds checks, to the owned form's instructions; a view over `&[u8]`
/// (from `new_checked`) compares the slice's length again at every access, as the compiler
/// cannot see the check made when it was built.
#[doc(hidden)]
#[macro_export]
macro_rules! __prm_views {
    () => {
        /// A typed view of layout `L` (a marker in [`layouts`]) over storage `B`: every
        /// layout `Foo` of this module is `ViewOf<layouts::Foo, B>`, with `B` defaulting to
        /// the owned `[u8; SIZE]`. Its accessors are the layout's; the constructors below
        /// are every layout's.
        #[repr(transparent)]
        pub struct ViewOf<L, B> {
            buf: B,
            layout: ::core::marker::PhantomData<fn() -> L>,
        }

        impl<L, B: ::core::clone::Clone> ::core::clone::Clone for ViewOf<L, B> {
            #[inline]
            fn clone(&self) -> Self {
                Self {
                    buf: self.buf.clone(),
                    layout: ::core::marker::PhantomData,
                }
            }
        }

        impl<L, B: ::core::marker::Copy> ::core::marker::Copy for ViewOf<L, B> {}

        impl<L, B: ::core::cmp::PartialEq> ::core::cmp::PartialEq for ViewOf<L, B> {
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                self.buf == other.buf
            }
        }

        impl<L, B: ::core::cmp::Eq> ::core::cmp::Eq for ViewOf<L, B> {}

        impl<L: $crate::rt::ViewLayout, B: $crate::rt::Bytes> ViewOf<L, B> {
            /// Wraps `buf`, checking that it holds the whole fixed part of the layout.
            #[inline]
            pub fn new_checked(buf: B) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                $crate::rt::check_len(L::NAME, L::SIZE, &buf)?;
                Ok(Self {
                    buf,
                    layout: ::core::marker::PhantomData,
                })
            }

            /// Wraps `buf` without checking its length; accessors past its end panic.
            #[inline]
            pub const fn new_unchecked(buf: B) -> Self {
                Self {
                    buf,
                    layout: ::core::marker::PhantomData,
                }
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

        impl<L: $crate::rt::ViewLayout, B: $crate::rt::Bytes> $crate::rt::View<B> for ViewOf<L, B> {
            const NAME: &'static str = L::NAME;
            const SIZE: usize = L::SIZE;
            fn new_checked(buf: B) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                Self::new_checked(buf)
            }
            fn new_unchecked(buf: B) -> Self {
                Self {
                    buf,
                    layout: ::core::marker::PhantomData,
                }
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

        impl<L: $crate::rt::ViewLayout> ViewOf<L, L::Array> {
            /// Size of the fixed part in bytes.
            pub const SIZE: usize = L::SIZE;

            /// An owned, zeroed instance.
            #[inline]
            pub const fn zeroed() -> Self {
                Self {
                    buf: <L::Array as $crate::rt::ByteArray>::ZERO,
                    layout: ::core::marker::PhantomData,
                }
            }
        }

        impl<L: $crate::rt::ViewLayout> ::core::default::Default for ViewOf<L, L::Array> {
            fn default() -> Self {
                Self::zeroed()
            }
        }

        impl<'a, L: $crate::rt::FixedLayout> ViewOf<L, &'a L::Array> {
            /// Wraps the first `SIZE` bytes of `buf` (the error is `new_checked`'s when it is
            /// shorter).
            ///
            /// The view's storage is then `&[u8; SIZE]`: the length is part of the type, so
            /// accessors compile without a bounds check, to the same instructions as on the
            /// owned form.
            #[inline]
            pub fn from_slice(
                buf: &'a [u8],
            ) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                let buf = <L::Array as $crate::rt::ByteArray>::prefix(L::NAME, buf)?;
                Ok(Self {
                    buf,
                    layout: ::core::marker::PhantomData,
                })
            }
        }

        impl<'a, L: $crate::rt::FixedLayout> ViewOf<L, &'a mut L::Array> {
            /// Wraps the first `SIZE` bytes of `buf`, writably (the error is `new_checked`'s
            /// when it is shorter).
            ///
            /// As `from_slice`: the storage is `&mut [u8; SIZE]`, so getters and setters
            /// compile without bounds checks, to the owned form's instructions.
            #[inline]
            pub fn from_slice_mut(
                buf: &'a mut [u8],
            ) -> ::core::result::Result<Self, $crate::rt::LayoutError> {
                let buf = <L::Array as $crate::rt::ByteArray>::prefix_mut(L::NAME, buf)?;
                Ok(Self {
                    buf,
                    layout: ::core::marker::PhantomData,
                })
            }
        }

        impl<L: $crate::rt::ViewLayout, B: $crate::rt::Bytes> ::core::fmt::Debug for ViewOf<L, B> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                L::debug(f, &self.buf)
            }
        }
    };
}
