//! Lowering a state machine: its state enum, the field that holds the state, and each
//! transition's command and required or optional input fields.

use super::{find_field_path, unknown};
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::load::suggest;
use crate::syntax::{self, Spanned};

pub(super) fn lower_state_machine(
    ir: &Ir,
    module: usize,
    m: &syntax::StateMachineDecl,
    diags: &mut Diagnostics,
) -> Option<StateMachine> {
    let path = format!("state_machines.{}", m.name.value);
    let states = m.states.as_ref()?;
    let Some(e) = ir.find_enum(&states.value) else {
        let names: Vec<&str> = ir.enums.iter().map(|e| e.name.as_str()).collect();
        diags.push(unknown("enum", states, &names, &format!("{path}.states")));
        return None;
    };
    let values: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
    let state = |s: &Spanned<String>, at: &str, diags: &mut Diagnostics| -> Option<String> {
        if values.contains(&s.value.as_str()) {
            Some(s.value.clone())
        } else {
            diags.push(unknown(
                &format!("state (a value of enum `{}`)", e.name),
                s,
                &values,
                at,
            ));
            None
        }
    };
    let state_field = m.state_field.as_ref().and_then(|sf| {
        let (sname, fpath) = sf.value.split_once('.').unwrap_or((sf.value.as_str(), ""));
        let Some(st) = ir.find_struct(sname) else {
            let names: Vec<&str> = ir.structs.iter().map(|s| s.name.as_str()).collect();
            let sp = Spanned {
                value: sname.to_string(),
                span: sf.span,
            };
            diags.push(unknown(
                "structure",
                &sp,
                &names,
                &format!("{path}.state_field"),
            ));
            return None;
        };
        let fp = Spanned {
            value: fpath.to_string(),
            span: sf.span,
        };
        field_ref(ir, st, &fp, &format!("{path}.state_field"), diags)
            .map(|r| (sname.to_string(), r))
    });
    let optional_bits: Vec<OpMod> = m
        .optional_bits
        .iter()
        .map(|(n, v)| OpMod {
            name: n.value.clone(),
            value: v.value,
            span: n.span,
        })
        .collect();
    let mut transitions = Vec::new();
    for t in &m.transitions {
        let tpath = format!("{path}.transitions.{}", t.name.value);
        let from: Vec<String> = t
            .from
            .iter()
            .filter_map(|s| state(s, &format!("{tpath}.from"), diags))
            .collect();
        let to =
            t.to.as_ref()
                .and_then(|s| state(s, &format!("{tpath}.to"), diags));
        let command = t.command.as_ref().and_then(|c| {
            let found = ir.find_command(&c.value);
            if found.is_none() {
                let names: Vec<&str> = ir.commands.iter().map(|c| c.name.as_str()).collect();
                diags.push(unknown("command", c, &names, &format!("{tpath}.command")));
            }
            found
        });
        let (Some(to), Some(command)) = (to, command) else {
            continue;
        };
        if from.len() != t.from.len() {
            continue;
        }
        let Some(input) = ir.find_struct(&command.input) else {
            continue;
        };
        let requires = t
            .requires
            .iter()
            .filter_map(|p| field_ref(ir, input, p, &format!("{tpath}.requires"), diags))
            .collect();
        let optional = t
            .optional
            .iter()
            .filter_map(|(p, bit)| {
                let r = field_ref(ir, input, p, &format!("{tpath}.optional"), diags)?;
                let Some(b) = optional_bits.iter().find(|b| b.name == bit.value) else {
                    let names: Vec<&str> = optional_bits.iter().map(|b| b.name.as_str()).collect();
                    diags.push(unknown(
                        "mask bit",
                        bit,
                        &names,
                        &format!("{tpath}.optional.{}", p.value),
                    ));
                    return None;
                };
                Some((
                    r,
                    OpMod {
                        span: bit.span,
                        ..b.clone()
                    },
                ))
            })
            .collect();
        transitions.push(Transition {
            name: t.name.value.clone(),
            doc: t.doc.clone(),
            from,
            to,
            command: command.name.clone(),
            requires,
            optional,
            span: t.name.span,
        });
    }
    Some(StateMachine {
        name: m.name.value.clone(),
        module,
        doc: m.doc.clone(),
        states: e.name.clone(),
        state_field,
        mask_field: m.mask_field.as_ref().map(|f| f.value.clone()),
        object_field: m.object_field.as_ref().map(|f| f.value.clone()),
        optional_bits,
        transitions,
        span: m.name.span,
    })
}

/// Resolves `a.b.c` inside structure `s` to a [`FieldRef`], reporting a path that does not
/// resolve.
pub(super) fn field_ref(
    ir: &Ir,
    s: &Struct,
    path: &Spanned<String>,
    at: &str,
    diags: &mut Diagnostics,
) -> Option<FieldRef> {
    match find_field_path(ir, s, &path.value) {
        Some((bit_offset, f)) => Some(FieldRef {
            path: path.value.clone(),
            bit_offset,
            width: f.span_bits(),
            span: path.span,
        }),
        None => {
            let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
            let first = path.value.split('.').next().unwrap_or("");
            let mut d = Diagnostic::error(
                "unknown-reference",
                path.span,
                format!("`{}` is not a field of `{}`", path.value, s.name),
            )
            .with_path(at);
            if let Some(sug) = suggest(first, &names) {
                d = d.with_hint(format!("`{}` has a field `{sug}`", s.name));
            }
            diags.push(d);
            None
        }
    }
}
