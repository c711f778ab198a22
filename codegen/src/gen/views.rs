//! What makes a layout a view: every structure and union is an alias of the generic
//! `ViewOf<L, B>` that the runtime's `__prm_views!` declares once per generated module, over a
//! marker type `layouts::Foo` whose `ViewLayout` impl carries the layout's constants. The
//! constructors, `Clone`/`Copy`/`PartialEq`/`Eq`, `Default` and `Debug` are then compiled
//! once per module instead of once per layout (a third of the whole kernel header's
//! clean build: 15.9 -> 10.4 s in `scripts/bench-build pac`, 2026-12-07).

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

/// A module's `ViewOf`, through the runtime's macro. Each module has its own, so that a call
/// of `status()` on a view weighs only that module's layouts named alike: rustc considers
/// every inherent impl of the type that has an item of that name. With one `ViewOf` per
/// crate, the driver and the model took 8–15 % longer to compile than with a struct per
/// layout, and the synthetic spec of `scripts/bench-build` (700 layouts that all share
/// their field names) twice as long; with one per module both are faster than before.
pub fn module_items(ctx: &Ctx) -> TokenStream {
    let krate = &ctx.krate;
    quote!(#krate::__prm_views!();)
}

/// The crate-level `layouts` module, with a marker per structure and union.
pub fn crate_items(ir: &Ir) -> TokenStream {
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
        /// One marker type per layout: the `L` of [`ViewOf<L, B>`](ViewOf) that each view
        /// is an alias of. They have no values.
        pub mod layouts {
            #(#markers)*
        }
    }
}
