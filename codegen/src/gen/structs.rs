//! Emits one view type per structure or register block: `Foo<B>` over storage `B`, with
//! getters, setters, sub-views, array accessors, field constants, `Debug` and the reflection
//! table.

use super::ctx::{doc_lines, Ctx};
use super::fields::{hex_u32, usize_lit, FieldCode};
use super::names::{camel, shouty};
use crate::ir::{Access, ArrayCount, Field, FieldType, Ir, Struct};
use crate::position::prm_notation;
use proc_macro2::{Literal, TokenStream};
use quote::quote;

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
    doc.push(String::new());
    doc.push(super::views::doc_line(ir.tail_field(s).is_none()));
    layout_table(s, &mut doc);

    let mut consts = Vec::new();
    let mut const_names = Vec::new();
    let mut getters = Vec::new();
    let mut setters = Vec::new();
    let mut reflect_fields = Vec::new();
    let mut reflect_nested = Vec::new();

    for f in &s.fields {
        let fname = &f.name;
        let mut cname = shouty(fname);
        if cname == "SIZE" || cname == "FIELDS" || cname == "LAYOUT" {
            cname = shouty(&format!("{fname}_field"));
        }
        let bit = usize_lit(f.bit_offset);
        let width = Literal::u32_unsuffixed(f.width as u32);
        // A plain string, not `concat!`: expanding one macro per field cost the whole-header
        // crate about 5 % of its build (`scripts/bench-build pac`).
        let cdoc = format!(" Position of `{fname}`.");
        consts.push(quote! {
            #[doc = #cdoc]
            pub const #cname: #rt::Field = #rt::Field::new(#fname, #bit, #width);
        });
        const_names.push(cname);

        let readable = f.access != Some(Access::Wo);
        let writable = f.access != Some(Access::Ro);
        let doc = field_doc(f, ir);
        let out = FieldCode::build(ctx, ir, s, f, readable, writable, &doc);
        getters.extend(out.getters);
        setters.extend(out.setters);
        if let Some(r) = out.reflect_field {
            reflect_fields.push(r);
        }
        if let Some(r) = out.reflect_nested {
            reflect_nested.push(r);
        }
    }

    let rname = shouty(&format!("{name}_access"));
    let debug_fn = match &ctx.debug_cfg {
        Some(cfg) => quote! {
            #cfg
            fn debug<B: #rt::Bytes>(f: &mut ::core::fmt::Formatter<'_>, buf: &B) -> ::core::fmt::Result {
                ::core::fmt::Debug::fmt(&#rt::reflect::Decoded::new(&#rname, buf), f)
            }
        },
        None => quote!(),
    };

    let table = match &ctx.table_cfg {
        Some(cfg) => {
            let rdoc = format!(
                " Every field of `{name}`: what the decoding `Debug` shows and generic tools read."
            );
            let type_name = ty.to_string();
            let reserved = if s.register_block {
                Vec::new()
            } else {
                reserved_masks(s)
            };
            let reserved = reserved.iter().map(|(at, m)| {
                let at = Literal::u32_unsuffixed(*at);
                let m = hex_u32(*m);
                quote!((#at, #m))
            });
            quote! {
                #cfg
                #[doc = #rdoc]
                pub const #rname: #rt::reflect::LayoutAccess = #rt::reflect::LayoutAccess {
                    name: #name,
                    type_name: #type_name,
                    size: #size,
                    fields: &[#(#reflect_fields),*],
                    nested: &[#(#reflect_nested),*],
                    reserved: &[#(#reserved),*],
                };
            }
        }
        None => quote!(),
    };

    let (word_items, word_writers) = super::words::emit(ctx, ir, s);
    setters.extend(word_writers);

    // A layout whose storage runs on past its fixed part gets no constructors over exactly
    // `SIZE` bytes (`from_slice`): its trailing elements would be cut off (see `FixedLayout`).
    let fixed = if ir.tail_field(s).is_some() {
        quote!()
    } else {
        quote!(impl #rt::FixedLayout for layouts::#ty {})
    };
    let layout = super::views::layout_impl(ctx, &ty, name, &quote!(#size), debug_fn);
    let fields_doc = format!(" The position of every field of `{name}`, by offset.");
    quote! {
        #(#[doc = #doc])*
        pub type #ty<B = [u8; #size]> = ViewOf<layouts::#ty, B>;
        #layout
        #fixed

        impl #ty<[u8; #size]> {
            #(#consts)*
            #[doc = #fields_doc]
            pub const FIELDS: &'static [#rt::Field] = &[#(Self::#const_names),*];
            /// The layout as a stable text table (`{}`), for snapshot tests of dependants.
            pub const LAYOUT: #rt::Layout = #rt::Layout {
                name: #name,
                size: #size,
                fields: Self::FIELDS,
            };
        }

        impl<B: #rt::Bytes> #ty<B> {
            #(#getters)*
        }

        impl<B: #rt::BytesMut> #ty<B> {
            #(#setters)*
        }

        #table
        #word_items
    }
}

/// Appends a compact `| offset | bits | field |` table of the fields to a view's rustdoc, so
/// readers of `cargo doc` see the whole layout before the accessors (reserved gaps are the
/// rows that are not there; `LAYOUT` has the same facts as text).
fn layout_table(s: &Struct, doc: &mut Vec<String>) {
    if s.fields.is_empty() {
        return;
    }
    doc.push(String::new());
    doc.push(" | offset | bits | field |".into());
    doc.push(" |-------:|-----:|:------|".into());
    for f in &s.fields {
        let (offset, bits) = match f.count {
            Some(ArrayCount::Trailing) => (format!("0x{:02x}", f.bit_offset / 8), "…".into()),
            _ => match prm_notation(f.bit_offset, f.span_bits().max(1)) {
                Some(n) => match n.split_once('[') {
                    Some((off, bits)) => (off.to_string(), bits.trim_end_matches(']').to_string()),
                    None => (n, "—".into()),
                },
                None => (
                    format!("bit 0x{:x}", f.bit_offset),
                    format!("+{}", f.span_bits()),
                ),
            },
        };
        let name = match f.count {
            None => f.name.clone(),
            Some(ArrayCount::Fixed(n)) => format!("{}[{n}]", f.name),
            Some(ArrayCount::Trailing) => format!("{}[]", f.name),
        };
        doc.push(format!(" | {offset} | {bits} | `{name}` |"));
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
