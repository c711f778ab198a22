//! Lowering a union: its selector field (found by dotted path in a structure) and members.

use super::{find_field_path, unknown};
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::load::suggest;
use crate::syntax::{self, Spanned};

pub(super) fn lower_union(
    ir: &Ir,
    module: usize,
    u: &syntax::UnionDecl,
    size: &Spanned<u64>,
    type_names: &[&str],
    diags: &mut Diagnostics,
) -> Union {
    let path = format!("unions.{}", u.name.value);
    let mut selector_enum: Option<&Enum> = None;
    let selector = u.selector.as_ref().and_then(|sel| {
        let spath = format!("{path}.selector.field");
        let text = &sel.field.value;
        let Some((sname, fpath)) = text.split_once('.') else {
            diags.push(
                Diagnostic::error(
                    "unknown-reference",
                    sel.field.span,
                    format!("selector `{text}` must name a structure and a field, like `query_hca_cap_in.op_mod`"),
                )
                .with_path(spath),
            );
            return None;
        };
        let Some(st) = ir.find_struct(sname) else {
            let names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
            let sp = Spanned {
                value: sname.to_string(),
                span: sel.field.span,
            };
            diags.push(unknown("structure", &sp, &names, &spath));
            return None;
        };
        let Some((bit_offset, field)) = find_field_path(ir, st, fpath) else {
            let names: Vec<&str> = st.fields.iter().map(|f| f.name.as_str()).collect();
            let sp = Spanned {
                value: format!("{sname}.{fpath}"),
                span: sel.field.span,
            };
            let mut d = unknown("selector field", &sp, &[], &spath);
            if let Some(s) = suggest(fpath, &names) {
                d = d.with_hint(format!("did you mean `{sname}.{s}`?"));
            }
            diags.push(d);
            return None;
        };
        if let FieldType::Enum(e) = &field.ty {
            selector_enum = ir.find_enum(e);
        }
        Some(Selector {
            structure: sname.to_string(),
            field: fpath.to_string(),
            bit_offset,
            width: field.width,
            shift: sel.shift.as_ref().map_or(0, |s| s.value),
            span: sel.field.span,
        })
    });
    let struct_names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
    let members = u
        .members
        .iter()
        .filter_map(|m| {
            let mpath = format!("{path}.members.{}", m.name.value);
            if ir.find_struct(&m.ty.value).is_none() {
                let mut d = unknown("structure", &m.ty, &struct_names, &format!("{mpath}.type"));
                if type_names.contains(&m.ty.value.as_str()) {
                    d = d.with_hint("union members are structures; wrap other types in a struct");
                }
                diags.push(d);
                return None;
            }
            let when = m.when.as_ref().and_then(|w| {
                if let Ok(v) = crate::num::parse_uint(&w.value) {
                    return Some(v);
                }
                if u.selector.is_some() && selector.is_none() {
                    // The selector itself did not resolve (reported); do not pile on.
                    return None;
                }
                if let Some(e) = selector_enum {
                    if let Some(v) = e.values.iter().find(|v| v.name == w.value) {
                        return Some(v.value);
                    }
                    let names: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
                    diags.push(unknown(
                        &format!("value of enum `{}`", e.name),
                        w,
                        &names,
                        &format!("{mpath}.when"),
                    ));
                    return None;
                }
                diags.push(
                    Diagnostic::error(
                        "unknown-reference",
                        w.span,
                        format!(
                            "`when: {}` is neither a number nor a value of the selector's enum",
                            w.value
                        ),
                    )
                    .with_path(format!("{mpath}.when")),
                );
                None
            });
            Some(UnionMember {
                name: m.name.value.clone(),
                ty: m.ty.value.clone(),
                when,
                doc: m.doc.clone(),
                span: m.name.span,
                ty_span: m.ty.span,
                when_span: m.when.as_ref().map(|w| w.span),
            })
        })
        .collect();
    Union {
        name: u.name.value.clone(),
        module,
        doc: u.doc.clone(),
        size: size.value,
        selector,
        selector_declared: u.selector.is_some(),
        members,
        span: u.name.span,
        size_span: size.span,
    }
}
