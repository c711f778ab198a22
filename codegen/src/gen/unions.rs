//! Emits one view per union: an accessor per member, and, where the spec names a selector,
//! `select` (by the selector's raw value) and `select_by` (from the structure that holds the
//! selector) returning the member the selector picks.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, camel_with, method, shouty, snake};
use crate::ir::{FieldType, Ir, Union};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// Everything generated for one union.
pub fn emit(ctx: &Ctx, ir: &Ir, u: &Union) -> TokenStream {
    let rt = &ctx.rt;
    let ty = camel(&u.name);
    let name = &u.name;
    let size = Literal::usize_unsuffixed(u.size as usize);
    let mut doc: Vec<String> = doc_lines(u.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!(
        " PRM union `{name}`: 0x{:x} bytes, read as one of its members.",
        u.size
    ));
    doc.push(String::new());
    doc.push(super::views::doc_line(true));
    if let Some(sel) = &u.selector {
        let shift = if sel.shift > 0 {
            format!(" >> {}", sel.shift)
        } else {
            String::new()
        };
        doc.push(format!(
            " The member is picked by `{}.{}{shift}`.",
            sel.structure, sel.field
        ));
    }

    let mut members = Vec::new();
    for m in &u.members {
        let Some(st) = ir.find_struct(&m.ty) else {
            continue;
        };
        let mty = camel(&m.ty);
        let get = snake(&m.name);
        let get_mut = method("", &m.name, "_mut");
        let len = Literal::usize_unsuffixed(st.size as usize);
        let mdoc: Vec<String> = doc_lines(m.doc.as_deref());
        let when = match m.when {
            Some(w) => format!(" Selected by 0x{w:x}."),
            None => String::new(),
        };
        let adoc = format!(" The bytes read as `{}`.{when}", m.ty);
        members.push((
            quote! {
                #(#[doc = #mdoc])*
                #[doc = #adoc]
                #[inline]
                pub fn #get(&self) -> #mty<B::Sub<'_>> { #mty::new_unchecked(self.buf.sub(0, #len)) }
            },
            quote! {
                #[doc = #adoc]
                #[inline]
                pub fn #get_mut(&mut self) -> #mty<B::SubMut<'_>> { #mty::new_unchecked(self.buf.sub_mut(0, #len)) }
            },
        ));
    }
    let (getters, setters): (Vec<_>, Vec<_>) = members.into_iter().unzip();

    let selection = u.selector.as_ref().map(|sel| {
        let refty = camel_with(&u.name, "Ref");
        let shift = Literal::u32_unsuffixed(sel.shift as u32);
        let mut variants = Vec::new();
        let mut arms = Vec::new();
        let mut arms_mut = Vec::new();
        for m in &u.members {
            let (Some(w), Some(_)) = (m.when, ir.find_struct(&m.ty)) else { continue };
            let v = camel(&m.name);
            let mty = camel(&m.ty);
            let get = snake(&m.name);
            let get_mut = method("", &m.name, "_mut");
            let w = format!("0x{w:x}").parse::<TokenStream>().expect("hex");
            variants.push(quote!(#v(#mty<S>)));
            arms.push(quote!(#w => Ok(#refty::#v(self.#get()))));
            arms_mut.push(quote!(#w => Ok(#refty::#v(self.#get_mut()))));
        }
        let refdoc = format!(" The member of `{}` a selector value picks.", u.name);
        // `select_by`: read the selector from its structure, following nested sub-views.
        let select_by = ir.find_struct(&sel.structure).and_then(|st| {
            let sty = camel(&st.name);
            let mut chain = quote!(selector);
            let mut current = st;
            let parts: Vec<&str> = sel.field.split('.').collect();
            for (i, part) in parts.iter().enumerate() {
                let f = current.fields.iter().find(|f| f.name == *part)?;
                let id = snake(part);
                // Path calls, not method calls: a field named like a trait method that takes
                // `self` (`into`) would otherwise call the trait's.
                let cty = camel(&current.name);
                if i + 1 == parts.len() {
                    chain = match &f.ty {
                        FieldType::Enum(_) => {
                            let raw = method("", part, "_raw");
                            quote!(#cty::#raw(&#chain))
                        }
                        FieldType::Uint | FieldType::Bool => quote!(#cty::#id(&#chain)),
                        _ => return None,
                    };
                } else {
                    let FieldType::Struct(t) = &f.ty else { return None };
                    chain = quote!(#cty::#id(&#chain));
                    current = ir.find_struct(t)?;
                }
            }
            let bdoc = format!(" The member that `{}.{}` in `selector` picks.", sel.structure, sel.field);
            Some(quote! {
                #[doc = #bdoc]
                #[inline]
                pub fn select_by<S: #rt::Bytes>(&self, selector: &#sty<S>) -> Result<#refty<B::Sub<'_>>, #rt::UnknownValue> {
                    self.select(u64::from(#chain))
                }
            })
        });
        let sdoc = format!(
            " The member that `selector` (the raw value of `{}.{}`) picks, or an error carrying the value when no member has it.",
            sel.structure, sel.field
        );
        (
            quote! {
                #[doc = #refdoc]
                #[derive(Clone, Copy, PartialEq, Eq)]
                pub enum #refty<S> {
                    #(#[allow(missing_docs)] #variants),*
                }
            },
            quote! {
                #[doc = #sdoc]
                #[inline]
                pub fn select(&self, selector: u64) -> Result<#refty<B::Sub<'_>>, #rt::UnknownValue> {
                    match selector >> #shift {
                        #(#arms,)*
                        _ => Err(#rt::UnknownValue { enumeration: #name, raw: selector }),
                    }
                }
                #select_by
            },
            quote! {
                #[doc = #sdoc]
                #[inline]
                pub fn select_mut(&mut self, selector: u64) -> Result<#refty<B::SubMut<'_>>, #rt::UnknownValue> {
                    match selector >> #shift {
                        #(#arms_mut,)*
                        _ => Err(#rt::UnknownValue { enumeration: #name, raw: selector }),
                    }
                }
            },
        )
    });
    let (ref_enum, select, select_mut) = match selection {
        Some((a, b, c)) => (a, b, c),
        None => (quote!(), quote!(), quote!()),
    };

    let rname = shouty(&format!("{name}_access"));
    let debug_fn = match &ctx.debug_cfg {
        None => quote!(),
        Some(cfg) => quote! {
            #cfg
            fn debug<B: #rt::Bytes>(f: &mut ::core::fmt::Formatter<'_>, buf: &B) -> ::core::fmt::Result {
                #rt::reflect::debug_union(f, &#rname, buf)
            }
        },
    };
    let layout = super::views::layout_impl(ctx, &ty, name, &quote!(#size), debug_fn);

    let reflect = reflect_table(ctx, u);

    quote! {
        #(#[doc = #doc])*
        pub type #ty<B = [u8; #size]> = ViewOf<layouts::#ty, B>;
        #layout
        impl #rt::FixedLayout for layouts::#ty {}

        impl<B: #rt::Bytes> #ty<B> {
            #(#getters)*
            #select
        }

        impl<B: #rt::BytesMut> #ty<B> {
            #(#setters)*
            #select_mut
        }

        #ref_enum
        #reflect
    }
}

/// The union's `rt::reflect::UnionAccess` (`FOO_ACCESS`, like a structure's table), when
/// reflection is generated.
fn reflect_table(ctx: &Ctx, u: &Union) -> TokenStream {
    let Some(cfg) = &ctx.table_cfg else {
        return quote!();
    };
    let type_name = camel(&u.name).to_string();
    let rt = &ctx.rt;
    let name = &u.name;
    let size = Literal::usize_unsuffixed(u.size as usize);
    let rname = shouty(&format!("{name}_access"));
    let members = u.members.iter().map(|m| {
        let (mname, layout) = (&m.name, &m.ty);
        let when = match m.when {
            Some(w) => {
                let w = format!("0x{w:x}").parse::<TokenStream>().expect("hex");
                quote!(Some(#w))
            }
            None => quote!(None),
        };
        let table = shouty(&format!("{layout}_access"));
        quote!(#rt::reflect::UnionMemberAccess { name: #mname, layout: #layout, table: &#table, when: #when })
    });
    let selector = match &u.selector {
        Some(sel) => {
            let (layout, field) = (&sel.structure, &sel.field);
            let bit = Literal::usize_unsuffixed(sel.bit_offset as usize);
            let width = Literal::u32_unsuffixed(sel.width as u32);
            let shift = Literal::u32_unsuffixed(sel.shift as u32);
            quote! {
                Some(#rt::reflect::SelectorAccess {
                    layout: #layout, field: #field, bit_offset: #bit, width: #width, shift: #shift,
                })
            }
        }
        None => quote!(None),
    };
    let rdoc = format!(
        " The members of union `{name}` and the field that selects one: what the decoding `Debug` and generic tools read."
    );
    quote! {
        #cfg
        #[doc = #rdoc]
        pub const #rname: #rt::reflect::UnionAccess = #rt::reflect::UnionAccess {
            name: #name,
            type_name: #type_name,
            size: #size,
            members: &[#(#members),*],
            selector: #selector,
        };
    }
}
