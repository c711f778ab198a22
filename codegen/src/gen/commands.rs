//! Emits one marker type per command, implementing `rt::Command` with the command's opcode,
//! input and output views and op_mod values; and an op_mod enum where the spec names values.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, camel_with};
use crate::ir::Command;
use proc_macro2::TokenStream;
use quote::quote;

/// Everything generated for one command (placed inside the module's `cmd` submodule).
pub fn emit(ctx: &Ctx, c: &Command) -> TokenStream {
    let rt = &ctx.rt;
    let ty = camel(&c.name);
    let name = &c.name;
    let opcode = format!("0x{:x}", c.opcode)
        .parse::<TokenStream>()
        .expect("hex");
    let input = camel(&c.input);
    let output = camel(&c.output);
    let mut doc: Vec<String> = doc_lines(c.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!(
        " PRM command `{name}`: opcode 0x{:x}, input [`{input}`](super::{input}), output [`{output}`](super::{output}).",
        c.opcode
    ));

    let (op_mod_ty, op_mod_enum) = if c.op_mods.is_empty() {
        (quote!(u16), quote!())
    } else {
        let ety = camel_with(&c.name, "OpMod");
        let variants = c.op_mods.iter().map(|m| {
            let v = camel(&m.name);
            let lit = format!("0x{:x}", m.value)
                .parse::<TokenStream>()
                .expect("hex");
            let d = format!(" op_mod `{}` = 0x{:x}.", m.name, m.value);
            quote!(#[doc = #d] #v = #lit)
        });
        let edoc = format!(" The op_mod values of `{name}`.");
        (
            quote!(#ety),
            quote! {
                #[doc = #edoc]
                #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
                #[repr(u16)]
                pub enum #ety {
                    #(#variants),*
                }

                impl #rt::OpMod for #ety {
                    fn raw(self) -> u16 {
                        self as u16
                    }
                }
            },
        )
    };

    quote! {
        #(#[doc = #doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct #ty;

        impl #rt::Command for #ty {
            const NAME: &'static str = #name;
            const OPCODE: u16 = #opcode;
            type OpMod = #op_mod_ty;
            type Input<B: #rt::Bytes> = super::#input<B>;
            type Output<B: #rt::Bytes> = super::#output<B>;
        }

        #op_mod_enum
    }
}
