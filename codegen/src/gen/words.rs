//! Emits one builder per word a structure declares under `words:` (doorbells and other words
//! written whole, in the manner of svd2rust's `write(|w| ..)`): a `Copy` value type over the
//! word's bits with one chained setter per field inside it, and on the view a `write_<word>`
//! that stores it with one access.
//!
//! The builder starts from zero (a write-only register's other bits are written as zero) and
//! its setters are `const fn`s of shifts and masks on a plain integer, so a chain of them
//! folds to the constants and `or`s one would write by hand.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, camel_with, method, uint_type};
use crate::ir::{FieldType, Ir, Struct, Word};
use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

/// The builder type's name: `uar_page` + `cq_arm` → `UarPageCqArmWord`.
pub fn builder_name(s: &Struct, w: &Word) -> Ident {
    camel_with(&format!("{}_{}", s.name, w.name), "Word")
}

fn hex(v: u64) -> TokenStream {
    format!("0x{v:x}").parse().expect("hex literal")
}

/// The builders of every word of `s` (items next to the view) and the view's `write_*`
/// methods (inside its `impl<B: BytesMut>` block).
pub fn emit(ctx: &Ctx, ir: &Ir, s: &Struct) -> (TokenStream, Vec<TokenStream>) {
    let mut items = Vec::new();
    let mut writers = Vec::new();
    for w in &s.words {
        let (item, writer) = word(ctx, ir, s, w);
        items.push(item);
        writers.push(writer);
    }
    (quote!(#(#items)*), writers)
}

fn word(ctx: &Ctx, _ir: &Ir, s: &Struct, w: &Word) -> (TokenStream, TokenStream) {
    let rt = &ctx.rt;
    let ty = builder_name(s, w);
    let view = camel(&s.name);
    let repr = uint_type(w.width);
    let byte = Literal::usize_unsuffixed((w.bit_offset / 8) as usize);
    let wname = &w.name;
    let sname = &s.name;
    let mut doc = doc_lines(w.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!(
        " Word `{wname}` of `{sname}`: {} bits at byte 0x{:x}, written as one store. Start from [`{ty}::new`] (every field zero), set fields, then store [`{ty}::bits`] (or hand the builder to [`{view}::write_{wname}`]).",
        w.width,
        w.bit_offset / 8
    ));
    let fields: Vec<_> = s.fields.iter().filter(|f| w.holds(f)).collect();
    let mut setters = Vec::new();
    for f in &fields {
        let fname = &f.name;
        let set = method("", fname, "");
        let try_set = method("try_", fname, "");
        // Bits of the field inside the word's value, counted from its least significant bit.
        let shift = w.width - (f.bit_offset - w.bit_offset) - f.width;
        let mask = if f.width == 64 {
            u64::MAX
        } else {
            (1u64 << f.width) - 1
        };
        let (shift_l, mask_l) = (Literal::u32_unsuffixed(shift as u32), hex(mask));
        let place = format!(
            " Sets `{fname}`: bits {}..={} of the word.",
            shift,
            shift + f.width - 1
        );
        let compose = |value: TokenStream| quote!(Self((self.0 & !((#mask_l as #repr) << #shift_l)) | ((#value & (#mask_l as #repr)) << #shift_l)));
        match &f.ty {
            FieldType::Bool => {
                let body = compose(quote!((v as #repr)));
                setters.push(quote! {
                    #[doc = #place]
                    #[inline(always)]
                    pub const fn #set(self, v: bool) -> Self { #body }
                });
            }
            FieldType::Enum(e) => {
                let ety = camel(e);
                let body = compose(quote!((v.raw() as #repr)));
                setters.push(quote! {
                    #[doc = #place]
                    #[inline(always)]
                    pub const fn #set(self, v: #ety) -> Self { #body }
                });
            }
            _ => {
                let arg = uint_type(f.width);
                let natural = matches!(f.width, 8 | 16 | 32 | 64);
                let body = compose(quote!((v as #repr)));
                if natural {
                    setters.push(quote! {
                        #[doc = #place]
                        #[inline(always)]
                        pub const fn #set(self, v: #arg) -> Self { #body }
                    });
                } else {
                    let ddoc = format!(
                        " Bits beyond its {} are dropped (a `debug_assert!` in debug builds).",
                        f.width
                    );
                    let tdoc = format!(
                        " Sets `{fname}`, or returns an error if `v` does not fit its {} bits.",
                        f.width
                    );
                    let msg = format!("value too wide for `{fname}` ({} bits)", f.width);
                    setters.push(quote! {
                        #[doc = #place]
                        #[doc = #ddoc]
                        #[inline(always)]
                        pub const fn #set(self, v: #arg) -> Self {
                            debug_assert!((v as u64) <= #mask_l, #msg);
                            #body
                        }
                        #[doc = #tdoc]
                        #[inline]
                        pub fn #try_set(self, v: #arg) -> Result<Self, #rt::Overflow> {
                            #rt::check_fits(#fname, u64::from(v), #mask_l)?;
                            Ok(self.#set(v))
                        }
                    });
                }
            }
        }
    }
    let store = if w.width == 64 {
        quote!(self.buf.write_be64(#byte, w.0))
    } else {
        quote!(self.buf.write_be32(#byte, w.0))
    };
    let write = method("write_", wname, "");
    let write_with = method("write_", wname, "_with");
    let wdoc = format!(
        " Stores word `{wname}` built by `w` as one {}-bit big-endian access (over [`{rt}::MmioBytes`], two 32-bit register writes, high word first).",
        w.width,
        rt = "rt"
    );
    let wdoc2 = format!(
        " Stores word `{wname}`: `f` sets its fields on a zeroed [`{ty}`], svd2rust style (`v.{write_with}(|w| w.a(1).b(2))`)."
    );
    let writer = quote! {
        #[doc = #wdoc]
        #[inline]
        pub fn #write(&mut self, w: #ty) { #store }
        #[doc = #wdoc2]
        #[inline]
        pub fn #write_with(&mut self, f: impl FnOnce(#ty) -> #ty) { self.#write(f(#ty::new())) }
    };
    let item = quote! {
        #(#[doc = #doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[must_use = "a word builder does nothing until its bits are stored"]
        pub struct #ty(#repr);

        impl #ty {
            /// Byte offset of the word in its structure.
            pub const OFFSET: usize = #byte;

            /// The word with every field zero.
            #[inline(always)]
            pub const fn new() -> Self { Self(0) }

            /// The word's value, to be stored big-endian at [`Self::OFFSET`].
            #[inline(always)]
            pub const fn bits(self) -> #repr { self.0 }

            #(#setters)*
        }
    };
    (item, writer)
}
