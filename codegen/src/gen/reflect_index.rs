//! Emits the crate-wide reflection index into `mod.rs`: `ALL_LAYOUTS` and `ALL_UNIONS` (every
//! table, in spec order) and `layout_by_name` / `union_by_name`, which binary-search an index
//! sorted here, at generation time, so a lookup costs no start-up work and no allocation.
//! The lists are statics, so each table has one address (a lookup returns that one).

use super::ctx::Ctx;
use super::names::{shouty, snake};
use crate::ir::Ir;
use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// `module::FOO_ACCESS` paths of `items` (spec name, module index), and the positions of
/// `items` in name order.
fn paths_and_order<'a>(
    ir: &Ir,
    items: impl Iterator<Item = (&'a str, usize)>,
) -> (Vec<TokenStream>, Vec<Literal>) {
    let items: Vec<(&str, usize)> = items.collect();
    let paths = items
        .iter()
        .map(|(name, module)| {
            let m = snake(&ir.modules[*module].name);
            let t = shouty(&format!("{name}_access"));
            quote!(#m::#t)
        })
        .collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    // `str`'s order is bytewise, as `Ord for str` compares in the generated lookup.
    order.sort_by(|&a, &b| items[a].0.cmp(items[b].0));
    let order = order
        .into_iter()
        .map(|i| Literal::u32_unsuffixed(i as u32))
        .collect();
    (paths, order)
}

/// The index, or nothing when reflection is not generated.
pub fn emit(ctx: &Ctx, ir: &Ir) -> TokenStream {
    let Some(cfg) = &ctx.reflect_cfg else {
        return quote!();
    };
    let rt = &ctx.rt_full;
    // Tables are listed module by module, each module's items in spec order.
    let structs = (0..ir.modules.len()).flat_map(|m| {
        ir.structs
            .iter()
            .filter(move |s| s.module == m)
            .map(|s| (s.name.as_str(), s.module))
    });
    let unions = (0..ir.modules.len()).flat_map(|m| {
        ir.unions
            .iter()
            .filter(move |u| u.module == m)
            .map(|u| (u.name.as_str(), u.module))
    });
    let (layouts, layout_order) = paths_and_order(ir, structs);
    let (unions, union_order) = paths_and_order(ir, unions);
    quote! {
        /// Every layout's reflection table, in spec order.
        #cfg
        pub static ALL_LAYOUTS: &[#rt::reflect::LayoutAccess] = &[#(#layouts),*];

        /// Every union's reflection table, in spec order.
        #cfg
        pub static ALL_UNIONS: &[#rt::reflect::UnionAccess] = &[#(#unions),*];

        /// Positions in [`ALL_LAYOUTS`] in name order, for [`layout_by_name`].
        #cfg
        static LAYOUTS_BY_NAME: &[u32] = &[#(#layout_order),*];

        /// Positions in [`ALL_UNIONS`] in name order, for [`union_by_name`].
        #cfg
        static UNIONS_BY_NAME: &[u32] = &[#(#union_order),*];

        /// The reflection table of the layout (structure or register block) called `name`.
        #cfg
        pub fn layout_by_name(name: &str) -> Option<&'static #rt::reflect::LayoutAccess> {
            #rt::reflect::by_name(ALL_LAYOUTS, LAYOUTS_BY_NAME, name)
        }

        /// The reflection table of the union called `name`.
        #cfg
        pub fn union_by_name(name: &str) -> Option<&'static #rt::reflect::UnionAccess> {
            #rt::reflect::by_name(ALL_UNIONS, UNIONS_BY_NAME, name)
        }
    }
}
