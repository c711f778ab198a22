//! Emits one marker type per command, implementing `rt::Command` with the command's opcode,
//! input and output views and op_mod values; an op_mod enum where the spec names values; and
//! the table of every command by value ([`table`]).

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, camel_with};
use crate::ir::{Command, Ir};
use proc_macro2::{Literal, TokenStream};
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

/// The crate-wide command table for `mod.rs`'s `cmd` module: `ALL` (every command as an
/// `rt::CommandInfo`, in spec order) and `by_opcode`, a `match` on the opcode (opcodes are
/// unique: the `duplicate-opcode` check). Always generated: it is one small entry per command.
pub fn table(ctx: &Ctx, ir: &Ir) -> TokenStream {
    let rt = &ctx.rt_full;
    let hex = |v: u64| format!("0x{v:x}").parse::<TokenStream>().expect("hex");
    // Spec order is module order, then order within the module, as the marker types are.
    let commands: Vec<&Command> = (0..ir.modules.len())
        .flat_map(|m| ir.commands.iter().filter(move |c| c.module == m))
        .collect();
    let entries = commands.iter().map(|c| {
        let (name, input, output) = (&c.name, &c.input, &c.output);
        let opcode = hex(c.opcode);
        let op_mods = c.op_mods.iter().map(|m| {
            let (mname, value) = (&m.name, hex(m.value));
            quote!(#rt::OpModInfo { name: #mname, value: #value })
        });
        quote! {
            #rt::CommandInfo {
                name: #name,
                opcode: #opcode,
                input: #input,
                output: #output,
                op_mods: &[#(#op_mods),*],
            }
        }
    });
    let arms = commands.iter().enumerate().map(|(i, c)| {
        let opcode = hex(c.opcode);
        let i = Literal::usize_unsuffixed(i);
        quote!(#opcode => #i)
    });
    let lookup = if commands.is_empty() {
        quote!(let _ = opcode; None)
    } else {
        quote! {
            let i = match opcode {
                #(#arms,)*
                _ => return None,
            };
            ALL.get(i)
        }
    };
    quote! {
        /// Every command of the spec as a value (name, opcode, layouts, op_mod names), in spec
        /// order: for tools that meet raw opcodes.
        pub static ALL: &[#rt::CommandInfo] = &[#(#entries),*];

        /// The command with `opcode`, if the spec has one.
        pub fn by_opcode(opcode: u16) -> Option<&'static #rt::CommandInfo> {
            #lookup
        }
    }
}
