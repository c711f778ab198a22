//! The accessors of one field of a view (getters, setters, sub-views) with its reflection
//! entry (which the decoding `Debug` also reads): numbers, flags, enums, bytes and nested views here, arrays in
//! [`super::arrays`].

use super::ctx::Ctx;
use super::names::{camel, method, uint_type};
use crate::ir::{Access, ArrayCount, Field, FieldType, Ir, Struct};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

pub(super) fn usize_lit(v: u64) -> Literal {
    Literal::usize_unsuffixed(v as usize)
}

pub(super) fn hex_u32(v: u32) -> TokenStream {
    format!("0x{v:x}").parse().expect("hex literal")
}

/// How a field is reached, by the kind of data it holds.
pub(super) enum Kind<'a> {
    /// A number, flag or enum within one dword (`Dword`) or a whole 64-bit quantity.
    Scalar,
    /// Opaque bytes.
    Bytes,
    /// A nested structure or union view.
    Nested(&'a str),
}

pub(super) fn kind(f: &Field) -> Kind<'_> {
    match &f.ty {
        FieldType::Bytes => Kind::Bytes,
        FieldType::Struct(t) | FieldType::Union(t) => Kind::Nested(t),
        _ => Kind::Scalar,
    }
}

/// The Rust type of a scalar element.
pub(super) fn scalar_type(ir: &Ir, f: &Field) -> TokenStream {
    match &f.ty {
        FieldType::Bool => quote!(bool),
        _ => {
            let _ = ir;
            let t = uint_type(f.width);
            quote!(#t)
        }
    }
}

/// `(dword byte offset, shift, mask)` of a field inside one dword.
pub(super) fn dword_parts(bit: u64, width: u64) -> (u64, u32, u32) {
    let byte = bit / 32 * 4;
    let shift = (32 - width - bit % 32) as u32;
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    (byte, shift, mask)
}

/// The code for one field.
pub(super) struct FieldCode {
    pub(super) getters: Vec<TokenStream>,
    pub(super) setters: Vec<TokenStream>,
    pub(super) reflect_field: Option<TokenStream>,
    pub(super) reflect_nested: Option<TokenStream>,
}

impl FieldCode {
    pub(super) fn build(
        ctx: &Ctx,
        ir: &Ir,
        s: &Struct,
        f: &Field,
        readable: bool,
        writable: bool,
        doc: &TokenStream,
    ) -> FieldCode {
        match f.count {
            None => Self::single(ctx, ir, s, f, readable, writable, doc),
            Some(count) => Self::array(ctx, ir, s, f, count, readable, writable, doc),
        }
    }

    fn single(
        ctx: &Ctx,
        _ir: &Ir,
        s: &Struct,
        f: &Field,
        readable: bool,
        writable: bool,
        doc: &TokenStream,
    ) -> FieldCode {
        let rt = &ctx.rt;
        let ty = camel(&s.name);
        let fname = &f.name;
        let get = method("", fname, "");
        let set = method("set_", fname, "");
        let mut getters = Vec::new();
        let mut setters = Vec::new();
        let mut reflect_field = None;
        let mut reflect_nested = None;
        // Setters point at the getter's documentation; write-only fields carry it themselves.
        let wdoc = &setter_doc(fname, readable, doc);
        match kind(f) {
            Kind::Scalar => {
                let raw_t = uint_type(f.width);
                let whole64 = f.width == 64;
                let (byte, shift, mask) = if whole64 {
                    (f.bit_offset / 8, 0, u32::MAX)
                } else {
                    dword_parts(f.bit_offset, f.width)
                };
                let byte_l = usize_lit(byte);
                let shift_l = Literal::u32_unsuffixed(shift);
                let mask_l = hex_u32(mask);
                let read_raw = if whole64 {
                    quote!(#rt::get64(&self.buf, #byte_l))
                } else if f.width == 32 {
                    quote!(self.buf.read_be32(#byte_l))
                } else {
                    quote!(#rt::get32(&self.buf, #byte_l, #shift_l, #mask_l) as #raw_t)
                };
                let write_raw = |v: TokenStream| {
                    if whole64 {
                        quote!(#rt::set64(&mut self.buf, #byte_l, #v))
                    } else if f.width == 32 {
                        quote!(self.buf.write_be32(#byte_l, #v))
                    } else if f.access == Some(Access::Wo) {
                        quote!(#rt::put32(&mut self.buf, #byte_l, #shift_l, #mask_l, u32::from(#v)))
                    } else {
                        quote!(#rt::set32(&mut self.buf, #byte_l, #shift_l, #mask_l, u32::from(#v)))
                    }
                };
                let max = if f.width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << f.width) - 1
                };
                let max_l = format!("0x{max:x}").parse::<TokenStream>().expect("hex");
                let natural = matches!(f.width, 8 | 16 | 32 | 64);
                // Setter of the raw number, with overflow handling when the type is wider.
                let raw_setters = |set_name: &proc_macro2::Ident, try_name: &proc_macro2::Ident| {
                    let mut out = Vec::new();
                    if natural {
                        let body = write_raw(quote!(v));
                        out.push(quote! {
                            #wdoc
                            #[inline]
                            pub fn #set_name(&mut self, v: #raw_t) { #body }
                        });
                    } else {
                        let body = if f.access == Some(Access::Wo) {
                            let body = write_raw(quote!(v));
                            quote!(debug_assert!(u64::from(v) <= #max_l); #body)
                        } else {
                            quote!(#rt::set32_narrow(&mut self.buf, #byte_l, #shift_l, #mask_l, u32::from(v), #fname))
                        };
                        let ddoc = format!(
                            " Bits beyond its {} are dropped (a `debug_assert!` in debug builds).",
                            f.width
                        );
                        let tdoc = format!(" Writes `{fname}`, or returns an error if `v` does not fit its {} bits.", f.width);
                        out.push(quote! {
                            #wdoc
                            #[doc = #ddoc]
                            #[inline]
                            pub fn #set_name(&mut self, v: #raw_t) { #body }
                            #[doc = #tdoc]
                            #[inline]
                            pub fn #try_name(&mut self, v: #raw_t) -> Result<(), #rt::Overflow> {
                                #rt::check_fits(#fname, u64::from(v), #max_l)?;
                                self.#set_name(v);
                                Ok(())
                            }
                        });
                    }
                    out
                };
                match &f.ty {
                    FieldType::Bool => {
                        if readable {
                            getters.push(quote! { #doc #[inline] pub fn #get(&self) -> bool { #read_raw != 0 } });
                        }
                        if writable {
                            let body = write_raw(quote!(u8::from(v)));
                            setters.push(quote! { #wdoc #[inline] pub fn #set(&mut self, v: bool) { #body } });
                        }
                        reflect_field = Some(reflect_scalar(
                            ctx,
                            &ty,
                            f,
                            readable,
                            writable,
                            quote!(u64::from(#ty::#get(&v))),
                            quote!(#ty::#set(&mut v, x & 1 != 0)),
                        ));
                    }
                    FieldType::Enum(e) => {
                        let ety = camel(e);
                        let raw = method("", fname, "_raw");
                        let set_raw = method("set_", fname, "_raw");
                        let try_raw = method("try_set_", fname, "_raw");
                        if readable {
                            let rdoc = format!(" `{fname}` as a raw number.");
                            getters.push(quote! {
                                #doc
                                #[doc = ""]
                                #[doc = " Returns `Err` with the raw number when the value is not one the enum names."]
                                #[inline]
                                pub fn #get(&self) -> Result<#ety, #rt::UnknownValue> {
                                    #ety::try_from_raw(u64::from(self.#raw()))
                                }
                                #[doc = #rdoc]
                                #[inline]
                                pub fn #raw(&self) -> #raw_t { #read_raw }
                            });
                        }
                        if writable {
                            setters.push(quote! {
                                #wdoc
                                #[inline]
                                pub fn #set(&mut self, v: #ety) { self.#set_raw(v.raw() as #raw_t) }
                            });
                            setters.extend(raw_setters(&set_raw, &try_raw));
                        }
                        let m = max_l.clone();
                        reflect_field = Some(reflect_scalar(
                            ctx,
                            &ty,
                            f,
                            readable,
                            writable,
                            quote!(u64::from(#ty::#raw(&v))),
                            quote!(#ty::#set_raw(&mut v, (x & #m) as #raw_t)),
                        ));
                    }
                    _ => {
                        if readable {
                            getters.push(quote! { #doc #[inline] pub fn #get(&self) -> #raw_t { #read_raw } });
                        }
                        if writable {
                            let try_set = method("try_set_", fname, "");
                            setters.extend(raw_setters(&set, &try_set));
                        }
                        let m = max_l.clone();
                        reflect_field = Some(reflect_scalar(
                            ctx,
                            &ty,
                            f,
                            readable,
                            writable,
                            quote!(u64::from(#ty::#get(&v))),
                            quote!(#ty::#set(&mut v, (x & #m) as #raw_t)),
                        ));
                    }
                }
            }
            Kind::Bytes => {
                let n = usize_lit(f.width / 8);
                let at = usize_lit(f.bit_offset / 8);
                if readable {
                    getters.push(quote! {
                        #doc
                        #[inline]
                        pub fn #get(&self) -> [u8; #n] {
                            let mut out = [0u8; #n];
                            self.buf.read_bytes(#at, &mut out);
                            out
                        }
                    });
                }
                if writable {
                    setters.push(quote! {
                        #wdoc
                        #[inline]
                        pub fn #set(&mut self, v: &[u8; #n]) { self.buf.write_bytes(#at, v) }
                    });
                }
                reflect_field = Some(reflect_bytes(ctx, f, readable, 1, false));
            }
            Kind::Nested(t) => {
                let nty = camel(t);
                let at = usize_lit(f.bit_offset / 8);
                let len = usize_lit(f.width / 8);
                let get_mut = method("", fname, "_mut");
                // A nested structure that ends this one and runs on past its own fixed part
                // (a trailing array, perhaps nested deeper) gets the rest of the buffer, so
                // that array is reachable, and bounds-checked, through the nested view.
                let open = _ir.open_nested(s).is_some_and(|o| o.name == f.name);
                let (span, odoc) = if open {
                    (
                        quote!(#rt::tail_len(self.buf.len(), #at, #len)),
                        quote! {
                            #[doc = ""]
                            #[doc = " The view runs to the end of the buffer, so the trailing array at its end is reachable through it."]
                        },
                    )
                } else {
                    (quote!(#len), quote!())
                };
                getters.push(quote! {
                    #doc
                    #odoc
                    #[inline]
                    pub fn #get(&self) -> #nty<B::Sub<'_>> { #nty::new_unchecked(self.buf.sub(#at, #span)) }
                });
                if writable {
                    setters.push(quote! {
                        #wdoc
                        #[inline]
                        pub fn #get_mut(&mut self) -> #nty<B::SubMut<'_>> { #nty::new_unchecked(self.buf.sub_mut(#at, #span)) }
                    });
                }
                reflect_nested = Some(reflect_nested_entry(
                    ctx,
                    &NestedReflect {
                        field: f,
                        parent: s,
                        runs_on: open,
                        view: quote! {
                            if i != 0 {
                                return None;
                            }
                            let sub = #ty::#get(&v);
                        },
                    },
                ));
            }
        }
        FieldCode {
            getters,
            setters,
            reflect_field,
            reflect_nested,
        }
    }
}

pub(super) fn reflect_scalar(
    ctx: &Ctx,
    ty: &proc_macro2::Ident,
    f: &Field,
    readable: bool,
    writable: bool,
    get: TokenStream,
    set: TokenStream,
) -> TokenStream {
    let rt = &ctx.rt;
    let name = &f.name;
    let bit = usize_lit(f.bit_offset);
    let w = Literal::u32_unsuffixed(f.width as u32);
    let krate = &ctx.krate;
    let get_fn = if readable {
        quote!(#krate::__prm_accessor!(|b, _| { let v = #ty::new_unchecked(b); #get }))
    } else {
        quote!(None)
    };
    let set_fn = if writable {
        quote!(#krate::__prm_accessor!(|b, _, x| { let mut v = #ty::new_unchecked(b); #set; }))
    } else {
        quote!(None)
    };
    let kind = value_kind(ctx, f);
    quote! {
        #rt::reflect::FieldAccess {
            name: #name, bit_offset: #bit, width: #w, count: 1, trailing: false,
            kind: #kind, readable: #readable, get: #get_fn, set: #set_fn,
        }
    }
}

/// The `rt::reflect::ValueKind` of a field: how its value is shown.
pub(super) fn value_kind(ctx: &Ctx, f: &Field) -> TokenStream {
    let rt = &ctx.rt;
    match &f.ty {
        FieldType::Bool => quote!(#rt::reflect::ValueKind::Flag),
        FieldType::Bytes => quote!(#rt::reflect::ValueKind::Bytes),
        FieldType::Enum(e) => {
            let ety = camel(e);
            quote! {
                #rt::reflect::ValueKind::Enum {
                    name: #e,
                    value_name: |r| match #ety::from_raw(r) {
                        Some(v) => Some(v.spec_name()),
                        None => None,
                    },
                }
            }
        }
        _ => quote!(#rt::reflect::ValueKind::Number),
    }
}

/// The table entry of opaque bytes (or an array of them): shown, never read as a number.
pub(super) fn reflect_bytes(
    ctx: &Ctx,
    f: &Field,
    readable: bool,
    count: u64,
    trailing: bool,
) -> TokenStream {
    let rt = &ctx.rt;
    let name = &f.name;
    let bit = usize_lit(f.bit_offset);
    let w = Literal::u32_unsuffixed(f.width as u32);
    let count = usize_lit(count);
    quote! {
        #rt::reflect::FieldAccess {
            name: #name, bit_offset: #bit, width: #w, count: #count, trailing: #trailing,
            kind: #rt::reflect::ValueKind::Bytes, readable: #readable, get: None, set: None,
        }
    }
}

/// What the reflection entry of a nested field (or array of them) says about it.
pub(super) struct NestedReflect<'a> {
    /// The field.
    pub(super) field: &'a Field,
    /// The structure that holds it.
    pub(super) parent: &'a Struct,
    /// True when its view runs on to the end of the buffer ([`Ir::open_nested`]).
    pub(super) runs_on: bool,
    /// Statements that bind `sub`, the sub-view of element `i` of the view `v`, or return
    /// `None` when there is no such element.
    pub(super) view: TokenStream,
}

/// The `rt::reflect::NestedAccess` of a nested field: its layout and kind, its elements, and a
/// function that finds element `i`'s sub-view through the generated accessor.
pub(super) fn reflect_nested_entry(ctx: &Ctx, n: &NestedReflect<'_>) -> TokenStream {
    let rt = &ctx.rt;
    let f = n.field;
    let ty = camel(&n.parent.name);
    let name = &f.name;
    let (layout, kind) = match &f.ty {
        FieldType::Union(t) => (t.as_str(), quote!(Union)),
        other => (other.name(), quote!(Struct)),
    };
    let table = super::names::shouty(&format!("{layout}_access"));
    let krate = &ctx.krate;
    let byte = usize_lit(f.bit_offset / 8);
    let size = usize_lit(f.width / 8);
    let (count, trailing) = match f.count {
        None => (usize_lit(1), false),
        Some(ArrayCount::Fixed(c)) => (usize_lit(c), false),
        Some(ArrayCount::Trailing) => (usize_lit(0), true),
    };
    let parent_size = usize_lit(n.parent.size);
    let runs_on = n.runs_on;
    let view = &n.view;
    quote! {
        #rt::reflect::NestedAccess {
            name: #name,
            layout: #layout,
            table: #rt::reflect::NestedTable::#kind(&#table),
            byte_offset: #byte,
            size: #size,
            count: #count,
            trailing: #trailing,
            stride: #size,
            runs_on: #runs_on,
            view_offset: #krate::__prm_accessor!(|b: &[u8], i: usize| -> Option<usize> {
                if b.len() < #parent_size {
                    return None;
                }
                let v = #ty::new_unchecked(b);
                #view
                Some(sub.storage().as_ptr() as usize - b.as_ptr() as usize)
            }),
        }
    }
}

/// Documentation for a setter: a pointer to the getter, or the full text when there is none.
pub(super) fn setter_doc(name: &str, readable: bool, doc: &TokenStream) -> TokenStream {
    if readable {
        // Intra-doc links cannot name raw identifiers: keywords get plain text.
        let text = if super::names::is_keyword(name) {
            format!(" Writes `{name}` (see its getter).")
        } else {
            format!(" Writes [`Self::{}`].", super::names::snake(name))
        };
        quote!(#[doc = #text])
    } else {
        let text = format!(" Writes `{name}`.");
        quote!(#doc #[doc = ""] #[doc = #text])
    }
}
