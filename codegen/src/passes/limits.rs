//! Layouts stay within what `gen` may turn into code (docs/spec-format.md, "Limits").
//!
//! `gen`'s output for a layout grows with its size (a reserved-bit mask per dword in its
//! reflection table) and with its items (accessors and reflection rows per field, enum value
//! or union member). A five-line spec declaring a 16 MiB structure once made `gen` write a
//! 165 MB file with 7.4 GB of memory; checking the bounds here makes such a spec an error of
//! `check`, so `gen` never starts on it. The bounds are in [`crate::load::limits`].

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use crate::load::limits::{MAX_ITEMS, MAX_LAYOUT_BYTES, MAX_TOTAL_LAYOUT_BYTES};
use crate::source::Span;

/// Runs the check.
pub fn run(ir: &Ir, diags: &mut Diagnostics) {
    for s in &ir.structs {
        let kind = if s.register_block {
            "register block"
        } else {
            "structure"
        };
        let path = super::struct_path(s);
        size(
            kind,
            &s.name,
            s.size,
            s.size_span.unwrap_or(s.span),
            &path,
            diags,
        );
        items(
            kind,
            &s.name,
            "fields",
            s.fields.len(),
            s.span,
            &path,
            diags,
        );
    }
    for u in &ir.unions {
        let path = format!("unions.{}", u.name);
        size("union", &u.name, u.size, u.size_span, &path, diags);
        items(
            "union",
            &u.name,
            "members",
            u.members.len(),
            u.span,
            &path,
            diags,
        );
    }
    total(ir, diags);
    for e in &ir.enums {
        let path = format!("enums.{}", e.name);
        items(
            "enum",
            &e.name,
            "values",
            e.values.len(),
            e.span,
            &path,
            diags,
        );
    }
}

fn size(kind: &str, name: &str, size: u64, span: Span, path: &str, diags: &mut Diagnostics) {
    if size <= MAX_LAYOUT_BYTES {
        return;
    }
    diags.push(
        Diagnostic::error(
            "layout-limit",
            span,
            format!(
                "{kind} `{name}` is 0x{size:x} bytes, more than the 0x{MAX_LAYOUT_BYTES:x} \
                 (64 KiB) a layout may span"
            ),
        )
        .with_path(format!("{path}.size"))
        .with_hint(
            "the largest PRM layout is 0x400c bytes; is the size in bits, or a digit too many? \
             (the limit bounds what `gen` writes per layout)",
        ),
    );
}

fn items(
    kind: &str,
    name: &str,
    what: &str,
    count: usize,
    span: Span,
    path: &str,
    diags: &mut Diagnostics,
) {
    if count <= MAX_ITEMS {
        return;
    }
    diags.push(
        Diagnostic::error(
            "layout-limit",
            span,
            format!(
                "{kind} `{name}` has {count} {what}, more than the {MAX_ITEMS} one layout may have"
            ),
        )
        .with_path(format!("{path}.{what}"))
        .with_hint(
            "split it into nested structures (the limit bounds what `gen` writes per layout)",
        ),
    );
}

/// The sum of all layout sizes: one error, at the layout that takes the sum past the limit.
fn total(ir: &Ir, diags: &mut Diagnostics) {
    let layouts = ir
        .structs
        .iter()
        .map(|s| (s.size, s.size_span.unwrap_or(s.span), super::struct_path(s)))
        .chain(
            ir.unions
                .iter()
                .map(|u| (u.size, u.size_span, format!("unions.{}", u.name))),
        );
    let mut sum = 0u64;
    for (size, span, path) in layouts {
        // A layout over its own limit is reported by `size` and counts here at that limit.
        sum = sum.saturating_add(size.min(MAX_LAYOUT_BYTES));
        if sum > MAX_TOTAL_LAYOUT_BYTES {
            diags.push(
                Diagnostic::error(
                    "layout-limit",
                    span,
                    format!(
                        "with this layout the spec's layouts span more than the \
                         0x{MAX_TOTAL_LAYOUT_BYTES:x} bytes (1 MiB) all layouts may span together"
                    ),
                )
                .with_path(format!("{path}.size"))
                .with_hint(
                    "the PRM's layouts span about 120 KiB in all; check the sizes (the limit \
                     bounds what `gen` writes)",
                ),
            );
            return;
        }
    }
}
