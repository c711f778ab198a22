//! Enums, commands and constants.
//!
//! Named values (enum values, op_mods) pair by name; an old and a new name with the same
//! number are a rename. The generated Rust enums are exhaustive (no `#[non_exhaustive]`), so a
//! new value breaks a dependant's `match` without a wildcard: it is classified as breaking for
//! Rust, and compatible on the wire (old software meets a number it does not know, as it
//! could before through `UnknownValue`).

use super::{Change, ChangeKind, ItemKind, Rust, Wire};
use crate::gen::enums::repr_width;
use crate::gen::names::uint_type;
use crate::ir::Ir;

/// A name, a number and a doc: what enum values and op_mods have in common.
struct Named<'a> {
    name: &'a str,
    value: u64,
    doc: Option<&'a str>,
}

const EXHAUSTIVE: &str =
    "the generated enum is exhaustive: a `match` without a wildcard stops compiling";

/// Compares two lists of named values of one item.
fn values(kind: ItemKind, item: &str, old: &[Named], new: &[Named], out: &mut Vec<Change>) {
    let mut old_only: Vec<&Named> = old
        .iter()
        .filter(|o| !new.iter().any(|n| n.name == o.name))
        .collect();
    let new_only: Vec<&Named> = new
        .iter()
        .filter(|n| !old.iter().any(|o| o.name == n.name))
        .collect();
    let hex = |v: u64| Some(format!("{v:#x}"));
    for n in new {
        if let Some(o) = old.iter().find(|o| o.name == n.name) {
            if o.value != n.value {
                out.push(
                    Change::new(
                        kind,
                        item,
                        Some(n.name),
                        ChangeKind::ValueChanged,
                        hex(o.value),
                        hex(n.value),
                        Wire::Breaking,
                        Rust::Silent,
                    )
                    .with_note("same name, another number: code compiles and sends the new one"),
                );
            }
            if o.doc != n.doc {
                out.push(Change::new(
                    kind,
                    item,
                    Some(n.name),
                    ChangeKind::DocChanged,
                    None,
                    None,
                    Wire::None,
                    Rust::Doc,
                ));
            }
            continue;
        }
        // A rename only when exactly one old name had this number.
        let same: Vec<usize> = old_only
            .iter()
            .enumerate()
            .filter(|(_, o)| o.value == n.value)
            .map(|(i, _)| i)
            .collect();
        if same.len() == 1 && new_only.iter().filter(|x| x.value == n.value).count() == 1 {
            let o = old_only.remove(same[0]);
            out.push(Change::new(
                kind,
                item,
                Some(n.name),
                ChangeKind::Renamed,
                Some(format!("{} = {:#x}", o.name, o.value)),
                Some(format!("{} = {:#x}", n.name, n.value)),
                Wire::None,
                Rust::Breaking,
            ));
            continue;
        }
        out.push(
            Change::new(
                kind,
                item,
                Some(n.name),
                ChangeKind::Added,
                None,
                hex(n.value),
                Wire::Compatible,
                Rust::Breaking,
            )
            .with_note(EXHAUSTIVE),
        );
    }
    for o in old_only {
        out.push(Change::new(
            kind,
            item,
            Some(o.name),
            ChangeKind::Removed,
            hex(o.value),
            None,
            Wire::Breaking,
            Rust::Breaking,
        ));
    }
}

pub(super) fn item_added(kind: ItemKind, name: &str, what: Option<String>) -> Change {
    Change::new(
        kind,
        name,
        None,
        ChangeKind::Added,
        None,
        what,
        Wire::None,
        Rust::Additive,
    )
}

pub(super) fn item_removed(kind: ItemKind, name: &str, what: Option<String>) -> Change {
    Change::new(
        kind,
        name,
        None,
        ChangeKind::Removed,
        what,
        None,
        Wire::None,
        Rust::Breaking,
    )
}

/// Enumerations: values, width (the Rust `repr`), docs.
pub fn enums(old: &Ir, new: &Ir, out: &mut Vec<Change>) {
    let k = ItemKind::Enum;
    for e in &new.enums {
        let Some(o) = old.find_enum(&e.name) else {
            out.push(item_added(k, &e.name, None));
            continue;
        };
        if o.width != e.width {
            let (or, nr) = (uint_type(repr_width(o)), uint_type(repr_width(e)));
            let w = |w: Option<u64>| Some(w.map_or("no width".into(), |w| format!("{w} bits")));
            let c = Change::new(
                k,
                &e.name,
                None,
                ChangeKind::SizeChanged,
                w(o.width),
                w(e.width),
                Wire::None,
                if or == nr { Rust::None } else { Rust::Breaking },
            );
            out.push(if or == nr {
                c
            } else {
                c.with_note(format!("the enum's repr changes from {or} to {nr}"))
            });
        }
        if o.doc != e.doc {
            out.push(Change::new(
                k,
                &e.name,
                None,
                ChangeKind::DocChanged,
                None,
                None,
                Wire::None,
                Rust::Doc,
            ));
        }
        let named = |e: &'_ crate::ir::Enum| -> Vec<(String, u64, Option<String>)> {
            e.values
                .iter()
                .map(|v| (v.name.clone(), v.value, v.doc.clone()))
                .collect()
        };
        let (ov, nv) = (named(o), named(e));
        values(k, &e.name, &as_named(&ov), &as_named(&nv), out);
    }
    for o in old
        .enums
        .iter()
        .filter(|o| new.find_enum(&o.name).is_none())
    {
        out.push(item_removed(k, &o.name, None));
    }
}

fn as_named(v: &[(String, u64, Option<String>)]) -> Vec<Named<'_>> {
    v.iter()
        .map(|(n, value, doc)| Named {
            name: n,
            value: *value,
            doc: doc.as_deref(),
        })
        .collect()
}

/// Commands: opcode, input and output layouts, op_mods.
pub fn commands(old: &Ir, new: &Ir, out: &mut Vec<Change>) {
    let k = ItemKind::Command;
    for c in &new.commands {
        let Some(o) = old.find_command(&c.name) else {
            out.push(item_added(
                k,
                &c.name,
                Some(format!("opcode {:#x}", c.opcode)),
            ));
            continue;
        };
        if o.opcode != c.opcode {
            out.push(
                Change::new(
                    k,
                    &c.name,
                    None,
                    ChangeKind::OpcodeChanged,
                    Some(format!("{:#x}", o.opcode)),
                    Some(format!("{:#x}", c.opcode)),
                    Wire::Breaking,
                    Rust::Silent,
                )
                .with_note("the command's OPCODE constant changes; code compiles"),
            );
        }
        for (kind, ol, nl) in [
            (ChangeKind::InputChanged, &o.input, &c.input),
            (ChangeKind::OutputChanged, &o.output, &c.output),
        ] {
            if ol != nl {
                out.push(Change::new(
                    k,
                    &c.name,
                    None,
                    kind,
                    Some(ol.clone()),
                    Some(nl.clone()),
                    Wire::Breaking,
                    Rust::Breaking,
                ));
            }
        }
        if o.doc != c.doc {
            out.push(Change::new(
                k,
                &c.name,
                None,
                ChangeKind::DocChanged,
                None,
                None,
                Wire::None,
                Rust::Doc,
            ));
        }
        let ops = |c: &'_ crate::ir::Command| -> Vec<(String, u64, Option<String>)> {
            c.op_mods
                .iter()
                .map(|m| (format!("op_mod.{}", m.name), m.value, None))
                .collect()
        };
        let (ov, nv) = (ops(o), ops(c));
        values(k, &c.name, &as_named(&ov), &as_named(&nv), out);
    }
    for o in old
        .commands
        .iter()
        .filter(|o| new.find_command(&o.name).is_none())
    {
        out.push(item_removed(
            k,
            &o.name,
            Some(format!("opcode {:#x}", o.opcode)),
        ));
    }
}

/// Named constants.
pub fn constants(old: &Ir, new: &Ir, out: &mut Vec<Change>) {
    let k = ItemKind::Constant;
    let hex = |v: u64| Some(format!("{v:#x}"));
    for c in &new.constants {
        match old.constants.iter().find(|o| o.name == c.name) {
            None => out.push(item_added(k, &c.name, hex(c.value))),
            Some(o) if o.value != c.value => out.push(Change::new(
                k,
                &c.name,
                None,
                ChangeKind::ValueChanged,
                hex(o.value),
                hex(c.value),
                Wire::Breaking,
                Rust::Silent,
            )),
            Some(_) => {}
        }
    }
    for o in old
        .constants
        .iter()
        .filter(|o| !new.constants.iter().any(|c| c.name == o.name))
    {
        out.push(item_removed(k, &o.name, hex(o.value)));
    }
}
