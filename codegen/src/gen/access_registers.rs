//! Emits one marker type per access register, implementing `rt::AccessReg` with the
//! register's id, image layout, access and index fields, plus `rt::Readable` / `rt::Writable`
//! as the spec allows; and the table of every register by value ([`table`]).

use super::ctx::{doc_lines, Ctx};
use super::names::camel;
use crate::ir::{AccessRegister, Ir, RegAccess};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

fn hex(v: u64) -> TokenStream {
    format!("0x{v:x}").parse::<TokenStream>().expect("hex")
}

fn access(rt: &TokenStream, a: RegAccess) -> TokenStream {
    match a {
        RegAccess::Read => quote!(#rt::RegAccess::Read),
        RegAccess::Write => quote!(#rt::RegAccess::Write),
        RegAccess::ReadWrite => quote!(#rt::RegAccess::ReadWrite),
    }
}

/// Everything generated for one register (placed inside the module's `reg` submodule).
pub fn emit(ctx: &Ctx, r: &AccessRegister) -> TokenStream {
    let rt = &ctx.rt;
    let ty = camel(&r.name);
    let name = &r.name;
    let id = hex(r.id);
    let image = camel(&r.layout);
    let mut doc = doc_lines(r.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    let index = if r.index.is_empty() {
        String::new()
    } else {
        format!(
            ", selected by {}",
            r.index
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    doc.push(format!(
        " PRM access register `{name}`: id 0x{:x}, {}, image [`{image}`](super::{image}){index}.",
        r.id,
        r.access.name().replace('_', "/"),
    ));
    let acc = access(rt, r.access);
    let fields = &r.index;
    let read = r
        .access
        .readable()
        .then(|| quote!(impl #rt::Readable for #ty {}));
    let write = r
        .access
        .writable()
        .then(|| quote!(impl #rt::Writable for #ty {}));
    quote! {
        #(#[doc = #doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct #ty;

        impl #rt::AccessReg for #ty {
            const NAME: &'static str = #name;
            const ID: u16 = #id;
            const ACCESS: #rt::RegAccess = #acc;
            const INDEX: &'static [&'static str] = &[#(#fields),*];
            type Image<B: #rt::Bytes> = super::#image<B>;
        }
        #read
        #write
    }
}

/// The crate-wide register table for `mod.rs`'s `reg` module: `ALL` (every register as an
/// `rt::RegisterInfo`, in spec order), `by_id` (a `match` on the id: ids are unique, the
/// `access-register` check) and `by_name`.
pub fn table(ctx: &Ctx, ir: &Ir) -> TokenStream {
    let rt = &ctx.rt_full;
    let regs: Vec<&AccessRegister> = (0..ir.modules.len())
        .flat_map(|m| ir.access_registers.iter().filter(move |r| r.module == m))
        .collect();
    let entries = regs.iter().map(|r| {
        let (name, layout, index) = (&r.name, &r.layout, &r.index);
        let id = hex(r.id);
        let size = ir.find_struct(&r.layout).map_or(0, |s| s.size as usize);
        let size = Literal::usize_unsuffixed(size);
        let acc = access(rt, r.access);
        let summary = summary(r.doc.as_deref());
        quote! {
            #rt::RegisterInfo {
                name: #name,
                id: #id,
                layout: #layout,
                size: #size,
                access: #acc,
                index: &[#(#index),*],
                summary: #summary,
            }
        }
    });
    let arms = regs.iter().enumerate().map(|(i, r)| {
        let id = hex(r.id);
        let i = Literal::usize_unsuffixed(i);
        quote!(#id => #i)
    });
    let lookup = if regs.is_empty() {
        quote!(let _ = id; None)
    } else {
        quote! {
            let i = match id {
                #(#arms,)*
                _ => return None,
            };
            ALL.get(i)
        }
    };
    quote! {
        /// Every access register of the spec as a value (name, id, layout, access, index
        /// fields), in spec order: for tools that take a register's name or id at run time.
        pub static ALL: &[#rt::RegisterInfo] = &[#(#entries),*];

        /// The register with `id`, if the spec has one.
        pub fn by_id(id: u16) -> Option<&'static #rt::RegisterInfo> {
            #lookup
        }

        /// The register the spec calls `name`, if any.
        pub fn by_name(name: &str) -> Option<&'static #rt::RegisterInfo> {
            ALL.iter().find(|r| r.name == name)
        }
    }
}

/// The first sentence of a doc, on one line.
fn summary(doc: Option<&str>) -> String {
    let text = doc
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match text.find(". ") {
        Some(i) => text[..=i].to_string(),
        None => text,
    }
}
