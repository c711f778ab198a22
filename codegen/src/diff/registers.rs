//! Access registers: id, image layout, access directions and index fields.

use super::items::{item_added, item_removed};
use super::{Change, ChangeKind, ItemKind, Rust, Wire};
use crate::ir::{AccessRegister, Ir, RegAccess};

fn find<'a>(ir: &'a Ir, name: &str) -> Option<&'a AccessRegister> {
    ir.access_registers.iter().find(|r| r.name == name)
}

/// What a change of access does to code: losing a direction stops code that used it from
/// compiling (the `Readable`/`Writable` impl goes); gaining one adds an impl.
fn access_impact(old: RegAccess, new: RegAccess) -> Rust {
    if (old.readable() && !new.readable()) || (old.writable() && !new.writable()) {
        Rust::Breaking
    } else {
        Rust::Additive
    }
}

/// Compares the access registers of two IRs.
pub fn access_registers(old: &Ir, new: &Ir, out: &mut Vec<Change>) {
    let k = ItemKind::AccessRegister;
    for r in &new.access_registers {
        let Some(o) = find(old, &r.name) else {
            out.push(item_added(k, &r.name, Some(format!("id {:#x}", r.id))));
            continue;
        };
        let change = |kind, from: String, to: String, wire, rust| {
            Change::new(k, &r.name, None, kind, Some(from), Some(to), wire, rust)
        };
        if o.id != r.id {
            out.push(
                change(
                    ChangeKind::IdChanged,
                    format!("{:#x}", o.id),
                    format!("{:#x}", r.id),
                    Wire::Breaking,
                    Rust::Silent,
                )
                .with_note("the register's ID constant changes; code compiles"),
            );
        }
        if o.layout != r.layout {
            out.push(change(
                ChangeKind::LayoutChanged,
                o.layout.clone(),
                r.layout.clone(),
                Wire::Breaking,
                Rust::Breaking,
            ));
        }
        if o.access != r.access {
            out.push(change(
                ChangeKind::AccessChanged,
                o.access.name().to_string(),
                r.access.name().to_string(),
                Wire::None,
                access_impact(o.access, r.access),
            ));
        }
        if o.index != r.index {
            out.push(
                change(
                    ChangeKind::IndexChanged,
                    o.index.join(", "),
                    r.index.join(", "),
                    Wire::None,
                    Rust::Doc,
                )
                .with_note("only the INDEX list (what tools ask a user for) changes"),
            );
        }
        if o.doc != r.doc {
            out.push(Change::new(
                k,
                &r.name,
                None,
                ChangeKind::DocChanged,
                None,
                None,
                Wire::None,
                Rust::Doc,
            ));
        }
    }
    for o in &old.access_registers {
        if find(new, &o.name).is_none() {
            out.push(item_removed(k, &o.name, Some(format!("id {:#x}", o.id))));
        }
    }
}
