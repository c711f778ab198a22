//! Emits the typestate of one state machine (module `<machine>_machine`, see the runtime's
//! `rt::typestate`): `Machine`; one zero-sized marker per state; per transition an argument
//! type with exactly its fields, typed by the spec, implementing `Transition` for each state
//! it leaves; and the extension trait `Transitions`, one method per transition, for any
//! driver handle implementing `Handle`.

use super::ctx::{doc_lines, Ctx};
use super::names::{camel, camel_with, method, snake, uint_type};
use super::GenError;
use crate::ir::{ArrayCount, Field, FieldRef, FieldType, Ir, StateMachine, Struct, Transition};
use crate::lower::find_field_path;
use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;
use std::collections::{BTreeSet, HashMap};

/// Names a marker may not take: the prelude's (a unit struct `Err` would shadow
/// `Result::Err` for every user of the module) and the module's own items.
const TAKEN: &[&str] = &[
    "Err",
    "Ok",
    "Some",
    "None",
    "Option",
    "Result",
    "Default",
    "Machine",
    "Transitions",
];

/// The module holding a machine's typestate: `qp` → `qp_machine`.
pub fn module_name(m: &StateMachine) -> Ident {
    snake(&format!("{}_machine", m.name))
}

/// The marker type of state `state`: its CamelCase name, or with `State` appended when that
/// name is taken (`err` → `ErrState`).
pub fn marker(state: &str) -> Ident {
    let c = camel(state);
    if TAKEN.contains(&c.to_string().as_str()) {
        camel_with(state, "State")
    } else {
        c
    }
}

/// Argument-field names for `paths`: the last segment of each, extended to the left, one
/// segment at a time, for those that would otherwise clash (`a.x`, `b.x` → `a_x`, `b_x`).
/// Deterministic: it depends only on the paths.
pub fn field_names(paths: &[&str]) -> Vec<String> {
    let segs: Vec<Vec<&str>> = paths.iter().map(|p| p.split('.').collect()).collect();
    let mut take = vec![1usize; paths.len()];
    let name = |i: usize, take: &[usize]| {
        let s = &segs[i];
        s[s.len().saturating_sub(take[i])..].join("_")
    };
    loop {
        let mut count: HashMap<String, usize> = HashMap::new();
        for i in 0..paths.len() {
            *count.entry(name(i, &take)).or_default() += 1;
        }
        let mut grew = false;
        for i in 0..paths.len() {
            let n = name(i, &take);
            let clash = count[&n] > 1 || n == "optional";
            if clash && take[i] < segs[i].len() {
                take[i] += 1;
                grew = true;
            }
        }
        if !grew {
            return (0..paths.len()).map(|i| name(i, &take)).collect();
        }
    }
}

/// One field a transition carries.
struct Arg<'a> {
    name: Ident,
    path: &'a FieldRef,
    field: &'a Field,
    /// The Rust type of the value.
    ty: TokenStream,
    /// The mask bit, for an optional field.
    mask: Option<u64>,
}

fn hex(v: u64) -> TokenStream {
    format!("0x{v:x}").parse().expect("hex literal")
}

/// The Rust type of a transition field's value.
fn value_type(f: &Field, what: &str) -> Result<TokenStream, GenError> {
    match f.count {
        None => {}
        // A fixed array of numbers or flags: all its elements, as an array.
        Some(ArrayCount::Fixed(n)) if matches!(f.ty, FieldType::Uint | FieldType::Bool | FieldType::Enum(_)) => {
            let n = Literal::usize_unsuffixed(n as usize);
            let t = if f.ty == FieldType::Bool {
                quote!(bool)
            } else {
                let t = uint_type(f.width);
                quote!(#t)
            };
            return Ok(quote!([#t; #n]));
        }
        Some(_) => {
            return Err(GenError::NameClash(format!(
                "{what} is a trailing array or an array of layouts; transition fields must be numbers, flags, enums, bytes, structures or fixed arrays of numbers"
            )))
        }
    }
    Ok(match &f.ty {
        FieldType::Bool => quote!(bool),
        FieldType::Enum(e) => {
            let t = camel(e);
            quote!(#t)
        }
        FieldType::Uint => {
            let t = uint_type(f.width);
            quote!(#t)
        }
        FieldType::Bytes => {
            let n = Literal::usize_unsuffixed((f.width / 8) as usize);
            quote!([u8; #n])
        }
        FieldType::Struct(t) => {
            let t = camel(t);
            quote!(#t)
        }
        FieldType::Union(_) => {
            return Err(GenError::NameClash(format!(
                "{what} is a union; transition fields must be numbers, flags, enums, bytes or structures"
            )))
        }
    })
}

/// The statement that writes `value` into the field at `path` of `input` (`?` on overflow).
fn write_field(rt: &TokenStream, path: &str, f: &Field, value: TokenStream) -> TokenStream {
    let parts: Vec<&str> = path.split('.').collect();
    let (leaf, outer) = parts.split_last().expect("a path has a segment");
    let chain = outer.iter().map(|p| method("", p, "_mut"));
    let target = quote!(input #(.#chain())*);
    if f.count.is_some() {
        let set = method("set_", leaf, "");
        // The element setter checks the index; a narrow element's value is checked here, as
        // the `try_set_*` of a plain field would.
        let fits = if f.ty != FieldType::Bool && !matches!(f.width, 8 | 16 | 32 | 64) {
            let max = hex((1u64 << f.width) - 1);
            let name = &f.name;
            quote!(#rt::check_fits(#name, u64::from(e), #max)?;)
        } else {
            quote!()
        };
        return quote! {
            for (i, e) in #value.into_iter().enumerate() {
                #fits
                #target.#set(i, e)?;
            }
        };
    }
    match &f.ty {
        FieldType::Uint if !matches!(f.width, 8 | 16 | 32 | 64) => {
            let set = method("try_set_", leaf, "");
            quote!(#target.#set(#value)?;)
        }
        FieldType::Bytes => {
            let set = method("set_", leaf, "");
            quote!(#target.#set(&#value);)
        }
        FieldType::Struct(_) => {
            let get = method("", leaf, "_mut");
            quote!(#target.#get().storage_mut().write_bytes(0, &#value.storage()[..]);)
        }
        _ => {
            let set = method("set_", leaf, "");
            quote!(#target.#set(#value);)
        }
    }
}

/// The input structure of a transition's command.
fn input<'a>(ir: &'a Ir, t: &Transition) -> Result<&'a Struct, GenError> {
    ir.find_command(&t.command)
        .and_then(|c| ir.find_struct(&c.input))
        .ok_or_else(|| GenError::NameClash(format!("transition `{}`: no input layout", t.name)))
}

/// Everything generated for one state machine's typestate.
pub fn emit(ctx: &Ctx, ir: &Ir, m: &StateMachine) -> Result<TokenStream, GenError> {
    let rt = &ctx.rt_full;
    let module = module_name(m);
    let states_ty = camel(&m.states);
    let table = super::names::shouty(&format!("{}_state_machine", m.name));
    let Some(states) = ir.find_enum(&m.states) else {
        return Ok(quote!());
    };
    let name = &m.name;

    // The object field's type, from the first transition's input (the check makes every
    // input agree).
    let object = match &m.object_field {
        Some(of) => {
            let t = m.transitions.first().ok_or_else(|| {
                GenError::NameClash(format!("state machine `{name}` has no transition"))
            })?;
            let (_, f) = find_field_path(ir, input(ir, t)?, of).ok_or_else(|| {
                GenError::NameClash(format!("state machine `{name}`: no object field `{of}`"))
            })?;
            Some((of.as_str(), f.clone()))
        }
        None => None,
    };
    let object_ty = match &object {
        Some((_, f)) => {
            let t = uint_type(f.width);
            quote!(#t)
        }
        None => quote!(()),
    };

    let mut items = Vec::new();
    let mut taken: BTreeSet<String> = ["Machine", "Transitions"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut claim = |n: &Ident, what: String| -> Result<(), GenError> {
        if taken.insert(n.to_string()) {
            Ok(())
        } else {
            Err(GenError::NameClash(format!(
                "{what} would be named `{module}::{n}`, a name the module already uses; rename it in the spec"
            )))
        }
    };

    for v in &states.values {
        let ty = marker(&v.name);
        claim(&ty, format!("state `{}` of `{name}`", v.name))?;
        let variant = camel(&v.name);
        let sname = &v.name;
        let mut doc = doc_lines(v.doc.as_deref());
        if !doc.is_empty() {
            doc.push(String::new());
        }
        doc.push(format!(
            " State `{sname}` of state machine `{name}` ([`{states_ty}::{variant}`]), as a type."
        ));
        items.push(quote! {
            #(#[doc = #doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct #ty;

            impl #ty {
                /// The state's value, as the device reports it.
                pub const RAW: #states_ty = #states_ty::#variant;
            }

            impl #rt::typestate::State for #ty {
                type Machine = Machine;
                const RAW: #states_ty = #states_ty::#variant;
                const NAME: &'static str = #sname;
            }
        });
    }

    let mut methods = Vec::new();
    for (index, t) in m.transitions.iter().enumerate() {
        let input_s = input(ir, t)?;
        let cmd = ir
            .find_command(&t.command)
            .ok_or_else(|| GenError::NameClash(format!("no command `{}`", t.command)))?;
        if !cmd.op_mods.is_empty() {
            return Err(GenError::NameClash(format!(
                "transition `{}` uses command `{}`, which has named op_mod values; the typestate sends op_mod 0 and supports only commands without them",
                t.name, t.command
            )));
        }
        let ty = camel(&t.name);
        claim(&ty, format!("transition `{}` of `{name}`", t.name))?;
        let opt_ty = camel_with(&t.name, "Optional");
        if !t.optional.is_empty() {
            claim(
                &opt_ty,
                format!("the optional fields of transition `{}`", t.name),
            )?;
        }
        let paths: Vec<&str> = t
            .requires
            .iter()
            .map(|r| r.path.as_str())
            .chain(t.optional.iter().map(|(r, _)| r.path.as_str()))
            .collect();
        let names = field_names(&paths);
        let mut args = Vec::new();
        let all = t
            .requires
            .iter()
            .map(|r| (r, None))
            .chain(t.optional.iter().map(|(r, b)| (r, Some(b.value))));
        for ((r, mask), n) in all.zip(&names) {
            let (_, f) = find_field_path(ir, input_s, &r.path).ok_or_else(|| {
                GenError::NameClash(format!("transition `{}`: no field `{}`", t.name, r.path))
            })?;
            let what = format!("field `{}` of transition `{}`", r.path, t.name);
            args.push(Arg {
                name: snake(n),
                path: r,
                field: f,
                ty: value_type(f, &what)?,
                mask,
            });
        }
        let required: Vec<&Arg> = args.iter().filter(|a| a.mask.is_none()).collect();
        let optional: Vec<&Arg> = args.iter().filter(|a| a.mask.is_some()).collect();

        let field_doc = |a: &Arg| {
            let mut d = doc_lines(a.field.doc.as_deref());
            if !d.is_empty() {
                d.push(String::new());
            }
            d.push(match a.mask {
                None => format!(" `{}` of the input (required).", a.path.path),
                Some(bit) => format!(
                    " `{}` of the input; when given, bit 0x{bit:x} of the optional-parameter mask is set.",
                    a.path.path
                ),
            });
            d
        };
        let req_fields = required.iter().map(|a| {
            let (n, ty, d) = (&a.name, &a.ty, field_doc(a));
            quote!(#(#[doc = #d])* pub #n: #ty,)
        });
        let opt_fields = optional.iter().map(|a| {
            let (n, ty, d) = (&a.name, &a.ty, field_doc(a));
            quote!(#(#[doc = #d])* pub #n: Option<#ty>,)
        });
        let optional_member = if optional.is_empty() {
            quote!()
        } else {
            quote! {
                /// The fields the transition may change; each one given sets its mask bit.
                pub optional: #opt_ty,
            }
        };
        let tname = &t.name;
        let mut tdoc = doc_lines(t.doc.as_deref());
        if !tdoc.is_empty() {
            tdoc.push(String::new());
        }
        let from_text = if t.from.is_empty() {
            "any state".to_string()
        } else {
            t.from
                .iter()
                .map(|s| format!("[`{}`]", marker(s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        tdoc.push(format!(
            " Transition `{tname}` of state machine `{name}`: from {from_text} to [`{}`], by command `{}`.",
            marker(&t.to),
            t.command
        ));
        // Views implement `Debug` only with the `debug` feature: a type holding one derives
        // the rest.
        let has_view = |list: &[&Arg]| {
            list.iter()
                .any(|a| matches!(a.field.ty, FieldType::Struct(_)))
        };
        let debug = |list: &[&Arg]| {
            if has_view(list) {
                quote!()
            } else {
                quote!(Debug,)
            }
        };
        let all_args: Vec<&Arg> = args.iter().collect();
        let d = debug(&all_args);
        let derives = if required.is_empty() {
            quote!(#[derive(#d Clone, Copy, PartialEq, Eq, Default)])
        } else {
            quote!(#[derive(#d Clone, Copy, PartialEq, Eq)])
        };
        let opt_debug = debug(&optional);
        let body = if required.is_empty() && optional.is_empty() {
            quote!(;)
        } else {
            quote!({ #(#req_fields)* #optional_member })
        };
        items.push(quote! {
            #(#[doc = #tdoc])*
            #derives
            pub struct #ty #body
        });
        if !optional.is_empty() {
            let odoc =
                format!(" The optional fields of transition `{tname}` (all `None` by default).");
            items.push(quote! {
                #[doc = #odoc]
                #[derive(#opt_debug Clone, Copy, PartialEq, Eq, Default)]
                pub struct #opt_ty { #(#opt_fields)* }
            });
        }

        // The body of `write`.
        let mut stmts = Vec::new();
        if let Some((of, f)) = &object {
            stmts.push(write_field(rt, of, f, quote!(object)));
        }
        for a in &required {
            let n = &a.name;
            stmts.push(write_field(rt, &a.path.path, a.field, quote!(self.#n)));
        }
        if !optional.is_empty() {
            stmts.push(quote!(let mut mask: u64 = 0;));
            for a in &optional {
                let n = &a.name;
                let bit = hex(a.mask.unwrap_or(0));
                let w = write_field(rt, &a.path.path, a.field, quote!(v));
                // Every value type is `Copy` (views of owned arrays included).
                stmts.push(quote! {
                    if let Some(v) = self.optional.#n {
                        #w
                        mask |= #bit;
                    }
                });
            }
            let mf = m.mask_field.as_deref().unwrap_or("opt_param_mask");
            let (_, f) = find_field_path(ir, input_s, mf).ok_or_else(|| {
                GenError::NameClash(format!("transition `{tname}`: no mask field `{mf}`"))
            })?;
            let mt = uint_type(f.width);
            stmts.push(write_field(rt, mf, f, quote!(mask as #mt)));
        }
        let object_arg = if object.is_some() {
            quote!(object)
        } else {
            quote!(_object)
        };
        let cmd_ty = camel(&t.command);
        let to = marker(&t.to);
        let index_l = Literal::usize_unsuffixed(index);
        let impl_body = quote! {
            type To = #to;
            type Command = super::cmd::#cmd_ty;
            const OP_MOD: u16 = 0;
            const ROW: &'static #rt::sm::Transition<#states_ty> = &#table.transitions[#index_l];
            #[allow(unused_variables, unused_mut)]
            fn write<B: #rt::BytesMut>(
                &self,
                #object_arg: #object_ty,
                input: &mut <Self::Command as #rt::Command>::Input<B>,
            ) -> Result<(), #rt::Overflow> {
                #(#stmts)*
                Ok(())
            }
        };
        if t.from.is_empty() {
            items.push(quote! {
                impl<S: #rt::typestate::State<Machine = Machine>> #rt::typestate::Transition<S> for #ty {
                    #impl_body
                }
            });
        } else {
            for f in &t.from {
                let from = marker(f);
                items.push(quote! {
                    impl #rt::typestate::Transition<#from> for #ty {
                        #impl_body
                    }
                });
            }
        }

        // The method of `Transitions`.
        let mname = snake(&t.name);
        if mname == "apply" {
            return Err(GenError::NameClash(format!(
                "transition `{tname}` would shadow `Handle::apply`; rename it"
            )));
        }
        let mdoc = tdoc.clone();
        let (param, value) = if required.is_empty() && optional.is_empty() {
            (quote!(), quote!(#ty))
        } else {
            (quote!(args: #ty), quote!(args))
        };
        methods.push(quote! {
            #(#[doc = #mdoc])*
            #[inline]
            fn #mname(self, #param) -> Result<Self::Next<#to>, Self::Error>
            where
                #ty: #rt::typestate::Transition<Self::State, To = #to>,
            {
                self.apply(#value)
            }
        });
    }

    let mdoc = format!(
        " The typestate of state machine `{name}` (see `rt::typestate`): its states as types, one argument type per transition, and [`Transitions`]({module}::Transitions)."
    );
    let machine_doc = format!(" State machine `{name}`, as a type.");
    let tr_doc = format!(
        " The transitions of state machine `{name}` as methods of any `rt::typestate::Handle` in one of its states: each is callable where the handle's state is one the transition leaves, and returns the handle in the state it reaches."
    );
    Ok(quote! {
        #[doc = #mdoc]
        pub mod #module {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use #rt::{Bytes as _, BytesMut as _};

            #[doc = #machine_doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct Machine;

            impl #rt::typestate::Machine for Machine {
                type State = #states_ty;
                type Object = #object_ty;
                const TABLE: &'static #rt::sm::StateMachine<#states_ty> = &#table;
            }

            #(#items)*

            #[doc = #tr_doc]
            pub trait Transitions: #rt::typestate::Handle<Machine = Machine> {
                #(#methods)*
            }

            impl<H: #rt::typestate::Handle<Machine = Machine>> Transitions for H {}
        }
    })
}
