//! What makes a layout a view: every structure and union is an alias of the one generic
//! `ViewOf<L, B>` that the runtime's `__prm_views!` declares once per generated crate, over a
//! marker type `layouts::Foo` whose `ViewLayout` impl carries the layout's constants. The
//! constructors, `Clone`/`Copy`/`PartialEq`/`Eq`, `Default` and `Debug` are then compiled
//! once per crate instead of once per layout (about a quarter of the whole kernel header's
//! clean build, `scripts/bench-build pac`).

use super::ctx::Ctx;
use super::names::camel;
use crate::ir::Ir;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// The line of a view's rustdoc that says where its constructors are (rustdoc lists only
/// the layout's own items on an alias's page).
pub fn doc_line(fixed: bool) -> String {
    let from_slice = if fixed { "`from_slice`, " } else { "" };
    format!(
        " Made and unwrapped through [`ViewOf`], as every view: `zeroed`, `new_checked`, {from_slice}`storage`, `into_inner`, `Clone`, `Debug`, …"
    )
}

/// The layout marker's `ViewLayout` impl. `debug` is the decoding `Debug`'s `fn debug`
/// (with its `cfg`), or nothing for the plain one.
pub fn layout_impl(
    ctx: &Ctx,
    ty: &Ident,
    name: &str,
    size: &TokenStream,
    debug: TokenStream,
) -> TokenStream {
    let rt = &ctx.rt;
    let type_name = ty.to_string();
    quote! {
        impl #rt::ViewLayout for layouts::#ty {
            const NAME: &'static str = #name;
            const TYPE: &'static str = #type_name;
            const SIZE: usize = #size;
            type Array = [u8; #size];
            #debug
        }
    }
}

/// The crate-level items: `ViewOf` (through the runtime's macro) and the `layouts` module
/// with a marker per structure and union.
pub fn crate_items(ctx: &Ctx, ir: &Ir) -> TokenStream {
    let krate = &ctx.krate;
    let markers = ir
        .structs
        .iter()
        .map(|s| &s.name)
        .chain(ir.unions.iter().map(|u| &u.name))
        .map(|name| {
            let ty = camel(name);
            let doc = format!(" Layout `{name}`: the view is [`{ty}`](super::{ty}).");
            quote!(#[doc = #doc] pub enum #ty {})
        });
    quote! {
        #krate::__prm_views!();

        /// One marker type per layout: the `L` of [`ViewOf<L, B>`](ViewOf) that each view
        /// is an alias of. They have no values.
        pub mod layouts {
            #(#markers)*
        }
    }
}
