//! Emits one constant table per state machine (`rt::sm::StateMachine`) and the names of its
//! optional-parameter mask bits.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, shouty};
use crate::ir::{FieldRef, Ir, StateMachine};
use crate::lower::find_field_path;
use proc_macro2::{Literal, TokenStream};
use quote::quote;

fn field_ref(ctx: &Ctx, r: &FieldRef) -> TokenStream {
    let rt = &ctx.rt_full;
    let path = &r.path;
    let bit = Literal::usize_unsuffixed(r.bit_offset as usize);
    let width = Literal::u32_unsuffixed(r.width as u32);
    quote!(#rt::sm::FieldRef { path: #path, bit_offset: #bit, width: #width })
}

fn hex(v: u64) -> TokenStream {
    format!("0x{v:x}").parse().expect("hex")
}

/// Everything generated for one state machine.
pub fn emit(ctx: &Ctx, ir: &Ir, m: &StateMachine) -> TokenStream {
    let rt = &ctx.rt_full;
    let states = camel(&m.states);
    let name = &m.name;
    let table = shouty(&format!("{}_state_machine", m.name));
    let mut doc: Vec<String> = doc_lines(m.doc.as_deref());
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!(
        " PRM state machine `{name}` over the states of [`{states}`]."
    ));

    let bits = m.optional_bits.iter().map(|b| {
        let c = shouty(&format!("{}_opt_{}", m.name, b.name));
        let v = hex(b.value);
        let d = format!(
            " Optional-parameter mask bit `{}` of state machine `{name}`.",
            b.name
        );
        quote!(#[doc = #d] pub const #c: u64 = #v;)
    });

    let transitions = m.transitions.iter().map(|t| {
        let tname = &t.name;
        let from = t.from.iter().map(|s| {
            let v = camel(s);
            quote!(#states::#v)
        });
        let to = camel(&t.to);
        let command = &t.command;
        let opcode = ir.find_command(&t.command).map_or(0, |c| c.opcode);
        let opcode = hex(opcode);
        let requires = t.requires.iter().map(|r| field_ref(ctx, r));
        let optional = t.optional.iter().map(|(r, b)| {
            let f = field_ref(ctx, r);
            let bit = &b.name;
            let mask = hex(b.value);
            quote!(#rt::sm::OptionalField { field: #f, bit: #bit, mask: #mask })
        });
        quote! {
            #rt::sm::Transition {
                name: #tname,
                from: &[#(#from),*],
                to: #states::#to,
                command: #command,
                opcode: #opcode,
                requires: &[#(#requires),*],
                optional: &[#(#optional),*],
            }
        }
    });

    // The mask field's position, taken from the first transition whose input has it.
    let mask_field = m
        .mask_field
        .as_ref()
        .and_then(|mf| {
            m.transitions.iter().find_map(|t| {
                let input = ir
                    .find_command(&t.command)
                    .and_then(|c| ir.find_struct(&c.input))?;
                let (bit, f) = find_field_path(ir, input, mf)?;
                let r = FieldRef {
                    path: mf.clone(),
                    bit_offset: bit,
                    width: f.span_bits(),
                    span: Default::default(),
                };
                Some(field_ref(ctx, &r))
            })
        })
        .map_or(quote!(None), |f| quote!(Some(#f)));

    quote! {
        #(#bits)*
        #(#[doc = #doc])*
        pub const #table: #rt::sm::StateMachine<#states> = #rt::sm::StateMachine {
            name: #name,
            mask_field: #mask_field,
            transitions: &[#(#transitions),*],
        };
    }
}
