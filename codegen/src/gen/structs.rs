//! Emits one view type per structure or register block: `Foo<B>` over storage `B`, with
//! getters, setters, sub-views, array accessors, field constants, `Debug` and the reflection
//! table.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, method, shouty, uint_type};
use crate::ir::{Access, ArrayCount, Field, FieldType, Ir, Struct};
use crate::position::prm_notation;
use proc_macro2::{Literal, TokenStream};
use quote::quote;

fn usize_lit(v: u64) -> Literal {
    Literal::usize_unsuffixed(v as usize)
}

fn hex_u32(v: u32) -> TokenStream {
    format!("0x{v:x}").parse().expect("hex literal")
}

/// How a field is reached, by the kind of data it holds.
enum Kind<'a> {
    /// A number, flag or enum within one dword (`Dword`) or a whole 64-bit quantity.
    Scalar,
    /// Opaque bytes.
    Bytes,
    /// A nested structure or union view.
    Nested(&'a str),
}

fn kind(f: &Field) -> Kind<'_> {
    match &f.ty {
        FieldType::Bytes => Kind::Bytes,
        FieldType::Struct(t) | FieldType::Union(t) => Kind::Nested(t),
        _ => Kind::Scalar,
    }
}

/// The Rust type of a scalar element.
fn scalar_type(ir: &Ir, f: &Field) -> TokenStream {
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
fn dword_parts(bit: u64, width: u64) -> (u64, u32, u32) {
    let byte = bit / 32 * 4;
    let shift = (32 - width - bit % 32) as u32;
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    (byte, shift, mask)
}

/// Rustdoc for a field: the spec's words, then where the PRM puts it.
fn field_doc(f: &Field, ir: &Ir) -> TokenStream {
    let mut lines: Vec<String> = doc_lines(f.doc.as_deref());
    if !lines.is_empty() {
        lines.push(String::new());
    }
    let canonical = prm_notation(f.bit_offset, f.width).unwrap_or_else(|| f.position.clone());
    let mut place = format!(
        " PRM `{canonical}`: bit offset 0x{:x}, {} bit{}",
        f.bit_offset,
        f.width,
        if f.width == 1 { "" } else { "s" }
    );
    match f.count {
        Some(ArrayCount::Fixed(n)) => place.push_str(&format!(" per element, {n} elements")),
        Some(ArrayCount::Trailing) => place.push_str(" per element, as many as the buffer holds"),
        None => {}
    }
    if let FieldType::Enum(e) | FieldType::Struct(e) | FieldType::Union(e) = &f.ty {
        let _ = ir;
        place.push_str(&format!("; type `{e}`"));
    }
    if let Some(a) = f.access {
        place.push_str(match a {
            Access::Ro => "; read-only",
            Access::Rw => "; read-write",
            Access::Wo => "; write-only",
        });
    }
    place.push('.');
    lines.push(place);
    quote!(#(#[doc = #lines])*)
}

/// Everything generated for one structure.
pub fn emit(ctx: &Ctx, ir: &Ir, s: &Struct) -> TokenStream {
    let rt = &ctx.rt;
    let krate = &ctx.krate;
    let ty = camel(&s.name);
    let name = &s.name;
    let size = usize_lit(s.size);
    let mut doc: Vec<String> = doc_lines(s.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    let kind_word = if s.register_block {
        "register block"
    } else {
        "layout"
    };
    doc.push(format!(" PRM {kind_word} `{name}`: 0x{:x} bytes.", s.size));
    if s.register_block {
        doc.push(String::new());
        doc.push(format!(
            " Use it over [`{}::MmioBytes`] so that every access is a 32-bit big-endian register access.",
            "rt"
        ));
    }

    let mut consts = Vec::new();
    let mut const_names = Vec::new();
    let mut getters = Vec::new();
    let mut setters = Vec::new();
    let mut debug = Vec::new();
    let mut reflect_fields = Vec::new();
    let mut reflect_nested = Vec::new();

    for f in &s.fields {
        let fname = &f.name;
        let mut cname = shouty(fname);
        if cname == "SIZE" || cname == "FIELDS" {
            cname = shouty(&format!("{fname}_field"));
        }
        let bit = usize_lit(f.bit_offset);
        let width = Literal::u32_unsuffixed(f.width as u32);
        consts.push(quote! {
            #[doc = concat!(" Position of `", #fname, "`.")]
            pub const #cname: #rt::Field = #rt::Field::new(#fname, #bit, #width);
        });
        const_names.push(cname);

        let readable = f.access != Some(Access::Wo);
        let writable = f.access != Some(Access::Ro);
        let doc = field_doc(f, ir);
        let out = FieldCode::build(ctx, ir, s, f, readable, writable, &doc);
        getters.extend(out.getters);
        setters.extend(out.setters);
        if readable {
            if let Some(d) = out.debug {
                debug.push(quote!(d.field(#fname, &#d);));
            }
        }
        if let Some(r) = out.reflect_field {
            reflect_fields.push(r);
        }
        if let Some(r) = out.reflect_nested {
            reflect_nested.push(r);
        }
    }

    let debug_impl = if let Some(cfg) = &ctx.debug_cfg {
        let reserved = if s.register_block {
            quote!()
        } else {
            let masks = reserved_masks(s);
            if masks.is_empty() {
                quote!()
            } else {
                let entries = masks.iter().map(|(at, m)| {
                    let at = Literal::u32_unsuffixed(*at);
                    let m = hex_u32(*m);
                    quote!((#at, #m))
                });
                quote! {
                    let reserved = #rt::fmt::ReservedSet { buf: &self.buf, masks: &[#(#entries),*] };
                    if reserved.any() {
                        d.field("reserved_bits_set", &reserved);
                    }
                }
            }
        };
        quote! {
            #cfg
            impl<B: #rt::Bytes> ::core::fmt::Debug for #ty<B> {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    let mut d = f.debug_struct(stringify!(#ty));
                    #(#debug)*
                    #reserved
                    d.finish()
                }
            }
        }
    } else {
        quote!()
    };

    let reflect = match &ctx.reflect_cfg {
        Some(cfg) => {
            let rname = shouty(&format!("{name}_access"));
            let rdoc = format!(
                " Every field of `{name}` with its accessors, for generic tools and tests."
            );
            quote! {
                #cfg
                #[doc = #rdoc]
                pub const #rname: #rt::reflect::LayoutAccess = #rt::reflect::LayoutAccess {
                    name: #name,
                    size: #size,
                    fields: &[#(#reflect_fields),*],
                    nested: &[#(#reflect_nested),*],
                };
            }
        }
        None => quote!(),
    };

    let (word_items, word_writers) = super::words::emit(ctx, ir, s);
    setters.extend(word_writers);

    let fields_doc = format!(" The position of every field of `{name}`, by offset.");
    quote! {
        #(#[doc = #doc])*
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub struct #ty<B = [u8; #size]> {
            buf: B,
        }

        #krate::__prm_view!(#ty, #name, #size);

        impl #ty<[u8; #size]> {
            #(#consts)*
            #[doc = #fields_doc]
            pub const FIELDS: &'static [#rt::Field] = &[#(Self::#const_names),*];
        }

        impl<B: #rt::Bytes> #ty<B> {
            #(#getters)*
        }

        impl<B: #rt::BytesMut> #ty<B> {
            #(#setters)*
        }

        #debug_impl
        #reflect
        #word_items
    }
}

/// Reserved bits of the fixed part, per dword: `(byte offset, mask)` for dwords with any bit
/// that no field covers.
fn reserved_masks(s: &Struct) -> Vec<(u32, u32)> {
    let dwords = (s.size / 4) as usize;
    let mut covered = vec![0u32; dwords];
    for f in &s.fields {
        let (start, end) = (f.bit_offset, f.end_bit().min(s.size * 8));
        let mut b = start;
        while b < end {
            let dw = (b / 32) as usize;
            let lo = b % 32;
            let hi = ((dw as u64 + 1) * 32).min(end) - dw as u64 * 32;
            let bits = hi - lo;
            let mask = if bits == 32 {
                u32::MAX
            } else {
                ((1u32 << bits) - 1) << (32 - hi)
            };
            if let Some(c) = covered.get_mut(dw) {
                *c |= mask;
            }
            b = dw as u64 * 32 + hi;
        }
    }
    covered
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != u32::MAX)
        .map(|(i, c)| ((i * 4) as u32, !c))
        .collect()
}

/// The code for one field.
struct FieldCode {
    getters: Vec<TokenStream>,
    setters: Vec<TokenStream>,
    debug: Option<TokenStream>,
    reflect_field: Option<TokenStream>,
    reflect_nested: Option<TokenStream>,
}

impl FieldCode {
    fn build(
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
        let debug;
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
                        debug = Some(quote!(self.#get()));
                        reflect_field = Some(reflect_scalar(
                            ctx,
                            &ty,
                            f,
                            readable,
                            writable,
                            quote!(u64::from(v.#get())),
                            quote!(v.#set(x & 1 != 0)),
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
                        debug = Some(quote!(#rt::fmt::EnumValue(self.#get())));
                        let m = max_l.clone();
                        reflect_field = Some(reflect_scalar(
                            ctx,
                            &ty,
                            f,
                            readable,
                            writable,
                            quote!(u64::from(v.#raw())),
                            quote!(v.#set_raw((x & #m) as #raw_t)),
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
                        debug = Some(quote!(#rt::fmt::Hex(self.#get().into())));
                        let m = max_l.clone();
                        reflect_field = Some(reflect_scalar(
                            ctx,
                            &ty,
                            f,
                            readable,
                            writable,
                            quote!(u64::from(v.#get())),
                            quote!(v.#set((x & #m) as #raw_t)),
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
                debug = Some(quote!(#rt::fmt::HexBytes(&self.#get())));
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
                debug = Some(quote!(self.#get()));
                reflect_nested = Some(reflect_nested_entry(
                    ctx,
                    &ty,
                    fname,
                    f.bit_offset / 8,
                    f.width / 8,
                    quote!(v.#get()),
                ));
            }
        }
        FieldCode {
            getters,
            setters,
            debug,
            reflect_field,
            reflect_nested,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn array(
        ctx: &Ctx,
        ir: &Ir,
        s: &Struct,
        f: &Field,
        count: ArrayCount,
        readable: bool,
        writable: bool,
        doc: &TokenStream,
    ) -> FieldCode {
        let rt = &ctx.rt;
        let ty = camel(&s.name);
        let fname = &f.name;
        let get = method("", fname, "");
        let set = method("set_", fname, "");
        let wdoc = &setter_doc(fname, readable, doc);
        let iter = method("", fname, "_iter");
        let len_fn = method("", fname, "_len");
        let bit = usize_lit(f.bit_offset);
        let w = usize_lit(f.width);
        let w32 = Literal::u32_unsuffixed(f.width as u32);
        let mut getters = Vec::new();
        let mut setters = Vec::new();
        let (len_expr, len_doc) = match count {
            ArrayCount::Fixed(n) => {
                let n_l = usize_lit(n);
                (
                    quote!(#n_l),
                    format!(" Number of elements of `{fname}`: {n}."),
                )
            }
            ArrayCount::Trailing => (
                // A trailing array starts at the struct's size, a whole byte.
                {
                    let start = usize_lit(f.bit_offset / 8);
                    quote!(#rt::trailing_len(self.buf.len(), #start, #w))
                },
                format!(" Number of elements of `{fname}` the buffer holds after the fixed part."),
            ),
        };
        getters.push(quote! {
            #[doc = #len_doc]
            #[inline]
            pub fn #len_fn(&self) -> usize { #len_expr }
        });
        let mut reflect_field = None;
        let mut reflect_nested = None;
        let trailing = count == ArrayCount::Trailing;
        let debug;
        match kind(f) {
            Kind::Scalar => {
                let elem_t = scalar_type(ir, f);
                let is_bool = f.ty == FieldType::Bool;
                let raw_t = uint_type(f.width);
                let conv_get = if is_bool {
                    quote!(v != 0)
                } else {
                    quote!(v as #raw_t)
                };
                let conv_set = quote!(u64::from(v));
                let max = if f.width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << f.width) - 1
                };
                let max_l = format!("0x{max:x}").parse::<TokenStream>().expect("hex");
                if readable {
                    getters.push(quote! {
                        #doc
                        #[doc = ""]
                        #[doc = " Element `i`, or `None` past the end."]
                        #[inline]
                        pub fn #get(&self, i: usize) -> Option<#elem_t> {
                            if i >= self.#len_fn() {
                                return None;
                            }
                            let v = #rt::get_bits(&self.buf, #bit + i * #w, #w32);
                            Some(#conv_get)
                        }
                        #[doc = " Every element, in order."]
                        #[inline]
                        pub fn #iter(&self) -> impl Iterator<Item = #elem_t> + '_ {
                            (0..self.#len_fn()).map(move |i| {
                                let v = #rt::get_bits(&self.buf, #bit + i * #w, #w32);
                                #conv_get
                            })
                        }
                    });
                }
                if writable {
                    let msg = format!("value too wide for `{fname}` ({} bits)", f.width);
                    let overflow_check = if is_bool || matches!(f.width, 8 | 16 | 32 | 64) {
                        quote!()
                    } else {
                        quote!(debug_assert!(v <= #max_l, #msg);)
                    };
                    setters.push(quote! {
                        #wdoc
                        #[doc = ""]
                        #[doc = " Writes element `i`; returns an error when `i` is past the end. Bits beyond the element's width are dropped (a `debug_assert!` catches them in debug builds)."]
                        #[inline]
                        pub fn #set(&mut self, i: usize, v: #elem_t) -> Result<(), #rt::Overflow> {
                            let len = self.#len_fn();
                            if i >= len {
                                return Err(#rt::Overflow { field: #fname, value: i as u64, max: len.saturating_sub(1) as u64 });
                            }
                            let v = #conv_set;
                            #overflow_check
                            #rt::set_bits(&mut self.buf, #bit + i * #w, #w32, v);
                            Ok(())
                        }
                    });
                }
                debug = Some(
                    quote!(#rt::fmt::With(|f| #rt::fmt::list(f, self.#len_fn(), self.#iter().map(|v| #rt::fmt::Hex(u64::from(v)))))),
                );
                if let Some(cfg) = &ctx.reflect_cfg {
                    let _ = cfg;
                    let count_l = match count {
                        ArrayCount::Fixed(n) => usize_lit(n),
                        ArrayCount::Trailing => usize_lit(0),
                    };
                    let get_fn = if readable {
                        quote!(Some(|b: &[u8], i: usize| -> u64 { #ty::new_unchecked(b).#get(i).map_or(0, u64::from) }))
                    } else {
                        quote!(None)
                    };
                    let set_back = if is_bool {
                        quote!(x & 1 != 0)
                    } else {
                        quote!((x & #max_l) as #raw_t)
                    };
                    let set_fn = if writable {
                        quote!(Some(|b: &mut [u8], i: usize, x: u64| { let _ = #ty::new_unchecked(b).#set(i, #set_back); }))
                    } else {
                        quote!(None)
                    };
                    reflect_field = Some(quote! {
                        #rt::reflect::FieldAccess {
                            name: #fname, bit_offset: #bit, width: #w32, count: #count_l, trailing: #trailing,
                            get: #get_fn, set: #set_fn,
                        }
                    });
                }
            }
            Kind::Bytes => {
                let n = usize_lit(f.width / 8);
                let base = usize_lit(f.bit_offset / 8);
                if readable {
                    getters.push(quote! {
                        #doc
                        #[doc = ""]
                        #[doc = " Element `i`, or `None` past the end."]
                        #[inline]
                        pub fn #get(&self, i: usize) -> Option<[u8; #n]> {
                            if i >= self.#len_fn() {
                                return None;
                            }
                            let mut out = [0u8; #n];
                            self.buf.read_bytes(#base + i * #n, &mut out);
                            Some(out)
                        }
                        #[doc = " Every element, in order."]
                        #[inline]
                        pub fn #iter(&self) -> impl Iterator<Item = [u8; #n]> + '_ {
                            (0..self.#len_fn()).filter_map(move |i| self.#get(i))
                        }
                    });
                }
                if writable {
                    setters.push(quote! {
                        #wdoc
                        #[doc = ""]
                        #[doc = " Writes element `i`; returns an error when `i` is past the end."]
                        #[inline]
                        pub fn #set(&mut self, i: usize, v: &[u8; #n]) -> Result<(), #rt::Overflow> {
                            let len = self.#len_fn();
                            if i >= len {
                                return Err(#rt::Overflow { field: #fname, value: i as u64, max: len.saturating_sub(1) as u64 });
                            }
                            self.buf.write_bytes(#base + i * #n, v);
                            Ok(())
                        }
                    });
                }
                debug = Some(
                    quote!(#rt::fmt::With(|f| #rt::fmt::list(f, self.#len_fn(), self.#iter().map(|v| #rt::fmt::Hex(v.iter().fold(0u64, |a, b| a << 8 | u64::from(*b))))))),
                );
            }
            Kind::Nested(t) => {
                let nty = camel(t);
                let n = usize_lit(f.width / 8);
                let base = usize_lit(f.bit_offset / 8);
                let get_mut = method("", fname, "_mut");
                getters.push(quote! {
                    #doc
                    #[doc = ""]
                    #[doc = " Element `i`, or `None` past the end."]
                    #[inline]
                    pub fn #get(&self, i: usize) -> Option<#nty<B::Sub<'_>>> {
                        if i >= self.#len_fn() {
                            return None;
                        }
                        Some(#nty::new_unchecked(self.buf.sub(#base + i * #n, #n)))
                    }
                    #[doc = " Every element, in order."]
                    #[inline]
                    pub fn #iter(&self) -> impl Iterator<Item = #nty<B::Sub<'_>>> + '_ {
                        (0..self.#len_fn()).map(move |i| #nty::new_unchecked(self.buf.sub(#base + i * #n, #n)))
                    }
                });
                if writable {
                    setters.push(quote! {
                        #wdoc
                        #[doc = ""]
                        #[doc = " Element `i`, writable, or `None` past the end."]
                        #[inline]
                        pub fn #get_mut(&mut self, i: usize) -> Option<#nty<B::SubMut<'_>>> {
                            if i >= self.#len_fn() {
                                return None;
                            }
                            Some(#nty::new_unchecked(self.buf.sub_mut(#base + i * #n, #n)))
                        }
                    });
                }
                if trailing {
                    // The entries of some trailing lists are laid out at a stride the element
                    // type does not give (SET_FTE's destinations are 8 or 16 bytes apart, by
                    // a flag): any layout can read them, at its own size.
                    let get_as = method("", fname, "_as");
                    let get_as_mut = method("", fname, "_as_mut");
                    let adoc = format!(" Element `i` of `{fname}` read as layout `V`, the elements `V::SIZE` bytes apart from the array's start, or `None` past the end of the buffer.");
                    getters.push(quote! {
                        #[doc = #adoc]
                        #[inline]
                        pub fn #get_as<'a, V: #rt::View<B::Sub<'a>>>(&'a self, i: usize) -> Option<V> {
                            if i >= #rt::trailing_len(self.buf.len(), #base, V::SIZE * 8) {
                                return None;
                            }
                            Some(V::new_unchecked(self.buf.sub(#base + i * V::SIZE, V::SIZE)))
                        }
                    });
                    if writable {
                        let adoc = format!(
                            " Element `i` of `{fname}` as layout `V`, writable (see `{fname}_as`)."
                        );
                        setters.push(quote! {
                            #[doc = #adoc]
                            #[inline]
                            pub fn #get_as_mut<'a, V: #rt::View<B::SubMut<'a>>>(&'a mut self, i: usize) -> Option<V> {
                                if i >= #rt::trailing_len(self.buf.len(), #base, V::SIZE * 8) {
                                    return None;
                                }
                                Some(V::new_unchecked(self.buf.sub_mut(#base + i * V::SIZE, V::SIZE)))
                            }
                        });
                    }
                }
                debug = Some(
                    quote!(#rt::fmt::With(|f| #rt::fmt::list(f, self.#len_fn(), self.#iter()))),
                );
                if !trailing {
                    reflect_nested = Some(reflect_nested_entry(
                        ctx,
                        &ty,
                        fname,
                        f.bit_offset / 8,
                        f.width / 8,
                        quote!(v.#get(0).expect("element 0")),
                    ));
                }
            }
        }
        FieldCode {
            getters,
            setters,
            debug,
            reflect_field,
            reflect_nested,
        }
    }
}

fn reflect_scalar(
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
    let get_fn = if readable {
        quote!(Some(|b, _| { let v = #ty::new_unchecked(b); #get }))
    } else {
        quote!(None)
    };
    let set_fn = if writable {
        quote!(Some(|b, _, x| { let mut v = #ty::new_unchecked(b); #set; }))
    } else {
        quote!(None)
    };
    quote! {
        #rt::reflect::FieldAccess { name: #name, bit_offset: #bit, width: #w, count: 1, trailing: false, get: #get_fn, set: #set_fn }
    }
}

fn reflect_nested_entry(
    ctx: &Ctx,
    ty: &proc_macro2::Ident,
    name: &str,
    byte: u64,
    size: u64,
    view: TokenStream,
) -> TokenStream {
    let rt = &ctx.rt;
    let byte = usize_lit(byte);
    let size = usize_lit(size);
    quote! {
        #rt::reflect::NestedAccess {
            name: #name,
            byte_offset: #byte,
            size: #size,
            view_offset: |b: &[u8]| -> usize {
                let v = #ty::new_unchecked(b);
                let sub = #view;
                sub.storage().as_ptr() as usize - b.as_ptr() as usize
            },
        }
    }
}

/// Documentation for a setter: a pointer to the getter, or the full text when there is none.
fn setter_doc(name: &str, readable: bool, doc: &TokenStream) -> TokenStream {
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
