//! State machines are consistent: mask bits are distinct and fit the mask field, every
//! transition that names optional fields has that mask field in its command's input, no field
//! is both required and optional, the state field can hold every state, and the object field
//! is a number of one width in every transition's input.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{FieldType, Ir};
use crate::lower::find_field_path;
use std::collections::HashMap;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for m in &ir.state_machines {
        let path = format!("state_machines.{}", m.name);
        let mut seen: HashMap<u64, &str> = HashMap::new();
        for b in &m.optional_bits {
            if b.value == 0 {
                diags.push(
                    Diagnostic::error(
                        "state-machine",
                        b.span,
                        format!("mask bit `{}` is zero", b.name),
                    )
                    .with_path(format!("{path}.optional_bits.{}", b.name)),
                );
            } else if let Some(other) = seen.insert(b.value, &b.name) {
                diags.push(
                    Diagnostic::error(
                        "state-machine",
                        b.span,
                        format!(
                            "mask bits `{other}` and `{}` are both 0x{:x}",
                            b.name, b.value
                        ),
                    )
                    .with_path(format!("{path}.optional_bits.{}", b.name)),
                );
            }
        }
        if let (Some((s, field)), Some(e)) = (&m.state_field, ir.find_enum(&m.states)) {
            for v in e
                .values
                .iter()
                .filter(|v| field.width < 64 && v.value >> field.width != 0)
            {
                diags.push(
                    Diagnostic::error(
                        "state-machine",
                        field.span,
                        format!(
                            "`{s}.{}` is {} bits wide, too narrow for state `{}` = 0x{:x}",
                            field.path, field.width, v.name, v.value
                        ),
                    )
                    .with_path(format!("{path}.state_field")),
                );
            }
        }
        // The object field: a number in every transition's input, of one width.
        if let Some(of) = &m.object_field {
            let mut width = None;
            for t in &m.transitions {
                let Some(input) = ir
                    .find_command(&t.command)
                    .and_then(|c| ir.find_struct(&c.input))
                else {
                    continue;
                };
                let found = find_field_path(ir, input, of);
                let ok = found.is_some_and(|(_, f)| {
                    f.count.is_none() && f.ty == FieldType::Uint && f.width <= 64
                });
                if !ok {
                    diags.push(
                        Diagnostic::error(
                            "state-machine",
                            t.span,
                            format!(
                                "`{}` (the input of `{}`) has no number `{of}` to name the object by",
                                input.name, t.command
                            ),
                        )
                        .with_path(format!("{path}.object_field")),
                    );
                } else if let Some((_, f)) = found {
                    if *width.get_or_insert(f.width) != f.width {
                        diags.push(
                            Diagnostic::error(
                                "state-machine",
                                t.span,
                                format!(
                                    "`{of}` is {} bits in `{}` but {} bits in an earlier transition's input",
                                    f.width,
                                    input.name,
                                    width.unwrap_or(0)
                                ),
                            )
                            .with_path(format!("{path}.object_field")),
                        );
                    }
                }
            }
        }
        for t in &m.transitions {
            let tpath = format!("{path}.transitions.{}", t.name);
            for (r, _) in &t.optional {
                if t.requires.iter().any(|q| q.path == r.path) {
                    diags.push(
                        Diagnostic::error(
                            "state-machine",
                            r.span,
                            format!("`{}` is both required and optional in `{}`", r.path, t.name),
                        )
                        .with_path(format!("{tpath}.optional")),
                    );
                }
            }
            if t.optional.is_empty() {
                continue;
            }
            let Some(mask) = &m.mask_field else {
                diags.push(
                    Diagnostic::error(
                        "state-machine",
                        t.span,
                        format!("transition `{}` has optional fields but state machine `{}` names no `mask_field`", t.name, m.name),
                    )
                    .with_path(tpath)
                    .with_hint("add `mask_field: <the input field that holds the optional-parameter mask>`"),
                );
                continue;
            };
            let input = ir
                .find_command(&t.command)
                .and_then(|c| ir.find_struct(&c.input));
            let Some(input) = input else { continue };
            match find_field_path(ir, input, mask) {
                None => diags.push(
                    Diagnostic::error(
                        "state-machine",
                        t.span,
                        format!(
                            "`{}` (the input of `{}`) has no mask field `{mask}`",
                            input.name, t.command
                        ),
                    )
                    .with_path(tpath),
                ),
                Some((_, f)) => {
                    for (_, bit) in t
                        .optional
                        .iter()
                        .filter(|(_, b)| f.width < 64 && b.value >> f.width != 0)
                    {
                        diags.push(
                            Diagnostic::error(
                                "state-machine",
                                bit.span,
                                format!(
                                    "mask bit `{}` = 0x{:x} does not fit `{mask}` ({} bits)",
                                    bit.name, bit.value, f.width
                                ),
                            )
                            .with_path(format!("{tpath}.optional")),
                        );
                    }
                }
            }
        }
    }
}
