//! The accessors of an array field of a view: fixed arrays and trailing arrays (sized by the
//! buffer, with `rt::trailing_len`) of numbers, flags, bytes and nested views, the latter also
//! readable at another layout's stride.

use super::ctx::Ctx;
use super::fields::{
    kind, reflect_bytes, reflect_nested_entry, scalar_type, setter_doc, usize_lit, value_kind,
    FieldCode, Kind, NestedReflect,
};
use super::names::{camel, method, uint_type};
use crate::ir::{ArrayCount, Field, FieldType, Ir, Struct};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

impl FieldCode {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn array(
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
                {
                    let krate = &ctx.krate;
                    let count_l = match count {
                        ArrayCount::Fixed(n) => usize_lit(n),
                        ArrayCount::Trailing => usize_lit(0),
                    };
                    let get_fn = if readable {
                        quote!(#krate::__prm_accessor!(|b: &[u8], i: usize| -> u64 { #ty::#get(&#ty::new_unchecked(b), i).map_or(0, u64::from) }))
                    } else {
                        quote!(None)
                    };
                    let set_back = if is_bool {
                        quote!(x & 1 != 0)
                    } else {
                        quote!((x & #max_l) as #raw_t)
                    };
                    let set_fn = if writable {
                        quote!(#krate::__prm_accessor!(|b: &mut [u8], i: usize, x: u64| { let _ = #ty::#set(&mut #ty::new_unchecked(b), i, #set_back); }))
                    } else {
                        quote!(None)
                    };
                    let value_kind = value_kind(ctx, f);
                    reflect_field = Some(quote! {
                        #rt::reflect::FieldAccess {
                            name: #fname, bit_offset: #bit, width: #w32, count: #count_l, trailing: #trailing,
                            kind: #value_kind, readable: #readable, get: #get_fn, set: #set_fn,
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
                let n = match count {
                    ArrayCount::Fixed(n) => n,
                    ArrayCount::Trailing => 0,
                };
                reflect_field = Some(reflect_bytes(ctx, f, readable, n, trailing));
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
                reflect_nested = Some(reflect_nested_entry(
                    ctx,
                    &NestedReflect {
                        field: f,
                        parent: s,
                        runs_on: false,
                        view: quote!(let sub = #ty::#get(&v, i)?;),
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
