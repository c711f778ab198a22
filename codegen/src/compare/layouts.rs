//! Structures and unions both sides define: sizes, and each field's offset, width and count
//! (by name), each union member's type.

use super::{Difference, Report};
use crate::ir::{ArrayCount, Field, Ir, Struct};
use crate::position::prm_notation;
use std::collections::{BTreeMap, BTreeSet};

/// What is compared of a field: `(bit offset, width of one element, count)`.
type Shape = (u64, u64, Option<ArrayCount>);

fn shape(f: &Field) -> Shape {
    (f.bit_offset, f.width, f.count)
}

/// A field's place in words: PRM notation, the kernel's bit offset and width, the count.
fn describe((bit, width, count): Shape) -> String {
    let span = match count {
        Some(ArrayCount::Fixed(n)) => width * n,
        _ => width,
    };
    let at = prm_notation(bit, span.max(1)).unwrap_or_else(|| format!("bit 0x{bit:x}"));
    let count = match count {
        None => String::new(),
        Some(ArrayCount::Fixed(n)) => format!(" × {n}"),
        Some(ArrayCount::Trailing) => " × n (trailing)".into(),
    };
    format!("{at} (bit 0x{bit:x}, {width} bits{count})")
}

fn source(ir: &Ir, s: &Struct, f: &Field) -> Option<String> {
    let module = ir.modules.get(s.module)?;
    Some(format!("{}:{}", module.relative, f.spans.name.line))
}

fn diff(layout: &str, field: &str, kind: &str, detail: String, src: Option<String>) -> Difference {
    Difference {
        layout: layout.to_string(),
        field: field.to_string(),
        kind: kind.to_string(),
        detail,
        source: src,
    }
}

pub(super) fn compare(spec: &Ir, kernel: &Ir, keep: &dyn Fn(&str) -> bool, r: &mut Report) {
    for s in spec.structs.iter().filter(|s| keep(&s.name)) {
        let Some(k) = kernel.find_struct(&s.name) else {
            continue;
        };
        r.layouts += 1;
        let whole = spec
            .modules
            .get(s.module)
            .map(|m| format!("{}:{}", m.relative, s.span.line));
        if s.size != k.size {
            r.differences.push(diff(
                &s.name,
                "*",
                "size",
                format!("spec 0x{:x} bytes, header 0x{:x}", s.size, k.size),
                whole.clone(),
            ));
        }
        let ours: BTreeMap<&str, &Field> = s.fields.iter().map(|f| (f.name.as_str(), f)).collect();
        let theirs: BTreeMap<&str, &Field> =
            k.fields.iter().map(|f| (f.name.as_str(), f)).collect();
        for (name, t) in &theirs {
            match ours.get(name) {
                None => r.differences.push(diff(
                    &s.name,
                    name,
                    "missing",
                    format!("the header has it at {}", describe(shape(t))),
                    whole.clone(),
                )),
                Some(o) if shape(o) != shape(t) => r.differences.push(diff(
                    &s.name,
                    name,
                    "position",
                    format!("spec {}, header {}", describe(shape(o)), describe(shape(t))),
                    source(spec, s, o),
                )),
                Some(_) => r.fields += 1,
            }
        }
        for (name, o) in &ours {
            if !theirs.contains_key(name) {
                r.differences.push(diff(
                    &s.name,
                    name,
                    "extra",
                    format!(
                        "the spec has it at {}; the header does not",
                        describe(shape(o))
                    ),
                    source(spec, s, o),
                ));
            }
        }
    }
    for u in spec.unions.iter().filter(|u| keep(&u.name)) {
        let Some(k) = kernel.find_union(&u.name) else {
            continue;
        };
        r.layouts += 1;
        let at = |line: u32| {
            spec.modules
                .get(u.module)
                .map(|m| format!("{}:{line}", m.relative))
        };
        if u.size != k.size {
            r.differences.push(diff(
                &u.name,
                "*",
                "size",
                format!("spec 0x{:x} bytes, header 0x{:x}", u.size, k.size),
                at(u.span.line),
            ));
        }
        let theirs: BTreeMap<&str, &str> = k
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.ty.as_str()))
            .collect();
        for m in &u.members {
            match theirs.get(m.name.as_str()) {
                Some(t) if *t == m.ty => r.fields += 1,
                Some(t) => r.differences.push(diff(
                    &u.name,
                    &m.name,
                    "position",
                    format!("spec type {}, header {t}", m.ty),
                    at(m.span.line),
                )),
                None => r.differences.push(diff(
                    &u.name,
                    &m.name,
                    "extra",
                    "not a member in the header".into(),
                    at(m.span.line),
                )),
            }
        }
        let ours: BTreeSet<&str> = u.members.iter().map(|m| m.name.as_str()).collect();
        let left_out: Vec<&str> = theirs
            .keys()
            .filter(|n| !ours.contains(*n))
            .copied()
            .collect();
        if !left_out.is_empty() {
            r.differences.push(diff(
                &u.name,
                "*",
                "members",
                format!("header members not in the spec: {}", left_out.join(", ")),
                at(u.span.line),
            ));
        }
    }
}
