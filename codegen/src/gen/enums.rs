//! Emits one Rust enum per spec enum, with raw conversions that never lose a value.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, shouty, uint_type};
use crate::ir::Enum;
use proc_macro2::TokenStream;
use quote::quote;

/// The enum's representation: its declared width, or the width of its largest value.
pub fn repr_width(e: &Enum) -> u64 {
    e.width.unwrap_or_else(|| {
        let max = e.values.iter().map(|v| v.value).max().unwrap_or(0);
        u64::from(64 - max.leading_zeros()).max(1)
    })
}

/// Everything generated for one enum.
pub fn emit(ctx: &Ctx, e: &Enum) -> TokenStream {
    let rt = &ctx.rt;
    let ty = camel(&e.name);
    let name = &e.name;
    let repr = uint_type(repr_width(e));
    let mut doc = doc_lines(e.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!(" PRM enum `{name}`."));

    // The first name of each value is the variant; later names for the same value are aliases.
    let mut variants = Vec::new();
    let mut aliases = Vec::new();
    let mut arms = Vec::new();
    let mut seen: Vec<(u64, proc_macro2::Ident)> = Vec::new();
    for v in &e.values {
        let vname = camel(&v.name);
        let lit = format!("0x{:x}", v.value)
            .parse::<TokenStream>()
            .expect("hex");
        let vdoc = doc_lines(v.doc.as_deref());
        match seen.iter().find(|(val, _)| *val == v.value) {
            Some((_, first)) => {
                let alias = shouty(&v.name);
                let adoc = format!(" Another name for [`Self::{first}`] (`{}`).", v.name);
                aliases.push(quote! { #(#[doc = #vdoc])* #[doc = #adoc] pub const #alias: Self = Self::#first; });
            }
            None => {
                variants.push(quote! { #(#[doc = #vdoc])* #vname = #lit });
                arms.push(quote! { #lit => Some(Self::#vname) });
                seen.push((v.value, vname));
            }
        }
    }
    let names = seen.iter().map(|(_, i)| i);
    let spec_names = e
        .values
        .iter()
        .filter(|v| {
            seen.iter()
                .any(|(val, i)| *val == v.value && *i == camel(&v.name))
        })
        .map(|v| v.name.as_str());
    quote! {
        #(#[doc = #doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(#repr)]
        pub enum #ty {
            #(#variants),*
        }

        impl #ty {
            /// The enum's name as the spec writes it.
            pub const NAME: &'static str = #name;
            /// Every value, in spec order.
            pub const ALL: &'static [Self] = &[#(Self::#names),*];
            #(#aliases)*

            /// The value for a raw number, if the enum names it.
            #[inline]
            pub const fn from_raw(raw: u64) -> Option<Self> {
                match raw {
                    #(#arms,)*
                    _ => None,
                }
            }

            /// The value for a raw number, or an error carrying the number.
            #[inline]
            pub const fn try_from_raw(raw: u64) -> Result<Self, #rt::UnknownValue> {
                match Self::from_raw(raw) {
                    Some(v) => Ok(v),
                    None => Err(#rt::UnknownValue { enumeration: #name, raw }),
                }
            }

            /// The raw number.
            #[inline]
            pub const fn raw(self) -> #repr {
                self as #repr
            }

            /// The value's name as the spec writes it.
            pub const fn spec_name(self) -> &'static str {
                const NAMES: &[&str] = &[#(#spec_names),*];
                let mut i = 0;
                while i < Self::ALL.len() {
                    if Self::ALL[i] as u64 == self as u64 {
                        return NAMES[i];
                    }
                    i += 1;
                }
                ""
            }
        }

        impl ::core::convert::TryFrom<u64> for #ty {
            type Error = #rt::UnknownValue;
            fn try_from(raw: u64) -> Result<Self, #rt::UnknownValue> {
                Self::try_from_raw(raw)
            }
        }

        impl ::core::convert::From<#ty> for #repr {
            fn from(v: #ty) -> #repr {
                v.raw()
            }
        }
    }
}
