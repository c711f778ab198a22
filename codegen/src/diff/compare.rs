//! Structures and unions, compared field by field on their own fields (not the expanded
//! paths), so each layout's changes are reported once however many layouts embed it.
//!
//! Fields are paired by name first. Of what is left, an old and a new field at the same offset
//! with the same width and count are a rename: a rename is only called one when the bits
//! prove it, never from a similar name. The rest are removals and additions.

use super::classify::{describe, in_reserved_space, place, resize, retype, rust_type};
use super::{Change, ChangeKind, Embedding, ItemKind, Rust, Wire};
use crate::ir::{Access, Field, FieldType, Ir, Struct, Union};
use std::collections::{BTreeSet, HashMap};

/// Every structure's and union's changes, in NEW's order, removed layouts last.
pub fn layouts(old: &Ir, new: &Ir, out: &mut Vec<Change>) {
    for s in &new.structs {
        match old.find_struct(&s.name) {
            Some(o) => structure(o, s, out),
            None => out.push(Change::new(
                ItemKind::Struct,
                &s.name,
                None,
                ChangeKind::Added,
                None,
                Some(format!("{} bytes", s.size)),
                Wire::None,
                Rust::Additive,
            )),
        }
    }
    for o in old
        .structs
        .iter()
        .filter(|o| new.find_struct(&o.name).is_none())
    {
        out.push(Change::new(
            ItemKind::Struct,
            &o.name,
            None,
            ChangeKind::Removed,
            Some(format!("{} bytes", o.size)),
            None,
            Wire::None,
            Rust::Breaking,
        ));
    }
    for u in &new.unions {
        match old.find_union(&u.name) {
            Some(o) => union(o, u, out),
            None => out.push(Change::new(
                ItemKind::Union,
                &u.name,
                None,
                ChangeKind::Added,
                None,
                Some(format!("{} bytes", u.size)),
                Wire::None,
                Rust::Additive,
            )),
        }
    }
    for o in old
        .unions
        .iter()
        .filter(|o| new.find_union(&o.name).is_none())
    {
        out.push(Change::new(
            ItemKind::Union,
            &o.name,
            None,
            ChangeKind::Removed,
            Some(format!("{} bytes", o.size)),
            None,
            Wire::None,
            Rust::Breaking,
        ));
    }
}

/// A layout's size change: growing adds room (old buffers are too short for the new views,
/// but no bit moves), shrinking drops bits old users write.
fn size_change(kind: ItemKind, name: &str, old: u64, new: u64) -> Change {
    let (wire, rust) = if new > old {
        (Wire::Compatible, Rust::Additive)
    } else {
        (Wire::Breaking, Rust::Silent)
    };
    let c = Change::new(
        kind,
        name,
        None,
        ChangeKind::SizeChanged,
        Some(format!("{old:#x} bytes")),
        Some(format!("{new:#x} bytes")),
        wire,
        rust,
    );
    if new > old {
        c.with_note("the view's SIZE grows: buffers sized for the old layout are too short")
    } else {
        c.with_note("the layout shrank: bits past the new end are no longer described")
    }
}

fn doc_change(kind: ItemKind, item: &str, member: Option<&str>) -> Change {
    Change::new(
        kind,
        item,
        member,
        ChangeKind::DocChanged,
        None,
        None,
        Wire::None,
        Rust::Doc,
    )
}

fn structure(o: &Struct, n: &Struct, out: &mut Vec<Change>) {
    let name = n.name.as_str();
    let k = ItemKind::Struct;
    if o.size != n.size {
        out.push(size_change(k, name, o.size, n.size));
    }
    if o.doc != n.doc {
        out.push(doc_change(k, name, None));
    }
    let old_by_name: HashMap<&str, &Field> =
        o.fields.iter().map(|f| (f.name.as_str(), f)).collect();
    let new_names: BTreeSet<&str> = n.fields.iter().map(|f| f.name.as_str()).collect();
    let mut old_only: Vec<&Field> = o
        .fields
        .iter()
        .filter(|f| !new_names.contains(f.name.as_str()))
        .collect();
    for f in &n.fields {
        if let Some(of) = old_by_name.get(f.name.as_str()) {
            field(name, of, f, out);
            continue;
        }
        let renamed = old_only.iter().position(|of| {
            of.bit_offset == f.bit_offset && of.width == f.width && of.count == f.count
        });
        if let Some(i) = renamed {
            let of = old_only.remove(i);
            let (wire, _) = retype(of, f);
            let mut c = Change::new(
                k,
                name,
                Some(&f.name),
                ChangeKind::Renamed,
                Some(format!("{} {}", of.name, describe(of))),
                Some(format!("{} {}", f.name, describe(f))),
                wire,
                Rust::Breaking,
            )
            .at(Some(of), Some(f));
            if rust_type(of) != rust_type(f) {
                c = c.with_note("the type changed too");
            }
            out.push(c);
            continue;
        }
        let (start, end) = (f.bit_offset, f.end_bit());
        let (wire, note) = if in_reserved_space(&o.fields, start, end) {
            (Wire::Compatible, None)
        } else {
            let hit: Vec<&str> = o
                .fields
                .iter()
                .filter(|of| of.span_bits() > 0 && of.bit_offset < end && of.end_bit() > start)
                .map(|of| of.name.as_str())
                .collect();
            (
                Wire::Breaking,
                Some(format!("overlaps old field(s) {}", hit.join(", "))),
            )
        };
        let mut c = Change::new(
            k,
            name,
            Some(&f.name),
            ChangeKind::Added,
            None,
            Some(describe(f)),
            wire,
            Rust::Additive,
        )
        .at(None, Some(f));
        if let Some(note) = note {
            c = c.with_note(note);
        }
        out.push(c);
    }
    for of in old_only {
        out.push(
            Change::new(
                k,
                name,
                Some(&of.name),
                ChangeKind::Removed,
                Some(describe(of)),
                None,
                Wire::Breaking,
                Rust::Breaking,
            )
            .at(Some(of), None),
        );
    }
}

/// One field present on both sides under the same name.
fn field(item: &str, o: &Field, n: &Field, out: &mut Vec<Change>) {
    let k = ItemKind::Struct;
    let m = Some(n.name.as_str());
    // A width change moves the MSB-first offset too; it is reported once, as a resize.
    if o.bit_offset != n.bit_offset && o.span_bits() == n.span_bits() {
        out.push(
            Change::new(
                k,
                item,
                m,
                ChangeKind::Moved,
                Some(place(o.bit_offset, o.span_bits())),
                Some(place(n.bit_offset, n.span_bits())),
                Wire::Breaking,
                Rust::None,
            )
            .at(Some(o), Some(n))
            .with_note("same accessor, other bits"),
        );
    }
    if o.ty != n.ty {
        let (_, rust) = retype(o, n);
        // A width change that comes with the new type is part of the same change.
        let wire = if o.span_bits() == n.span_bits() {
            Wire::None
        } else {
            Wire::Breaking
        };
        out.push(
            Change::new(
                k,
                item,
                m,
                ChangeKind::Retyped,
                Some(describe(o)),
                Some(describe(n)),
                wire,
                rust,
            )
            .at(Some(o), Some(n)),
        );
    } else if nested_resize(o, n) {
        // The nested layout's own size changed: reported once, under that layout, with where
        // it is embedded.
    } else if o.width != n.width || o.count != n.count {
        let (wire, rust, note) = resize(o, n);
        let mut c = Change::new(
            k,
            item,
            m,
            ChangeKind::Resized,
            Some(describe(o)),
            Some(describe(n)),
            wire,
            rust,
        )
        .at(Some(o), Some(n));
        if let Some(note) = note {
            c = c.with_note(note);
        }
        out.push(c);
    }
    // As the generator reads it: no access means read and write.
    let dirs = |f: &Field| (f.access != Some(Access::Wo), f.access != Some(Access::Ro));
    let (od, nd) = (dirs(o), dirs(n));
    if od != nd {
        let name = |(r, w): (bool, bool)| match (r, w) {
            (true, false) => "access ro",
            (false, true) => "access wo",
            _ => "access rw",
        };
        // Losing a direction removes getters or setters; gaining one only adds.
        let lost = (od.0 && !nd.0) || (od.1 && !nd.1);
        out.push(Change::new(
            k,
            item,
            m,
            ChangeKind::Retyped,
            Some(name(od).to_string()),
            Some(name(nd).to_string()),
            Wire::None,
            if lost { Rust::Breaking } else { Rust::Additive },
        ));
    }
    if o.doc != n.doc {
        out.push(doc_change(k, item, m));
    }
}

/// True for a nested structure or union whose width changed only because its type's size did.
fn nested_resize(o: &Field, n: &Field) -> bool {
    matches!(n.ty, FieldType::Struct(_) | FieldType::Union(_)) && o.count == n.count
}

fn union(o: &Union, n: &Union, out: &mut Vec<Change>) {
    let k = ItemKind::Union;
    let name = n.name.as_str();
    if o.size != n.size {
        out.push(size_change(k, name, o.size, n.size));
    }
    if o.doc != n.doc {
        out.push(doc_change(k, name, None));
    }
    let sel = |u: &Union| {
        u.selector
            .as_ref()
            .map(|s| format!("{}.{} >> {}", s.structure, s.field, s.shift))
    };
    if sel(o) != sel(n) {
        out.push(
            Change::new(
                k,
                name,
                None,
                ChangeKind::SelectorChanged,
                sel(o),
                sel(n),
                Wire::Breaking,
                Rust::None,
            )
            .with_note("another field picks the member"),
        );
    }
    for m in &n.members {
        let Some(om) = o.members.iter().find(|om| om.name == m.name) else {
            out.push(Change::new(
                k,
                name,
                Some(&m.name),
                ChangeKind::Added,
                None,
                Some(m.ty.clone()),
                Wire::Compatible,
                Rust::Additive,
            ));
            continue;
        };
        if om.ty != m.ty {
            out.push(Change::new(
                k,
                name,
                Some(&m.name),
                ChangeKind::Retyped,
                Some(om.ty.clone()),
                Some(m.ty.clone()),
                Wire::Breaking,
                Rust::Breaking,
            ));
        }
        if om.when != m.when {
            let w = |v: Option<u64>| v.map(|v| format!("when {v:#x}"));
            out.push(Change::new(
                k,
                name,
                Some(&m.name),
                ChangeKind::ValueChanged,
                w(om.when),
                w(m.when),
                Wire::Breaking,
                Rust::Silent,
            ));
        }
        if om.doc != m.doc {
            out.push(doc_change(k, name, Some(&m.name)));
        }
    }
    for om in o
        .members
        .iter()
        .filter(|om| !n.members.iter().any(|m| m.name == om.name))
    {
        out.push(Change::new(
            k,
            name,
            Some(&om.name),
            ChangeKind::Removed,
            Some(om.ty.clone()),
            None,
            Wire::Breaking,
            Rust::Breaking,
        ));
    }
}

/// Where each changed layout is embedded, one level up (`parent.field` or `union.member`),
/// looked up in NEW, or in OLD for a layout NEW no longer has.
pub fn embeddings(old: &Ir, new: &Ir, changes: &[Change]) -> Vec<Embedding> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for c in changes {
        if !matches!(c.item_kind, ItemKind::Struct | ItemKind::Union) {
            continue;
        }
        if !seen.insert(c.item.as_str()) {
            continue;
        }
        let in_new = new.find_struct(&c.item).is_some() || new.find_union(&c.item).is_some();
        let ir = if in_new { new } else { old };
        let places = holders(ir, &c.item);
        if !places.is_empty() {
            out.push(Embedding {
                layout: c.item.clone(),
                embedded_in: places,
            });
        }
    }
    out
}

fn holders(ir: &Ir, name: &str) -> Vec<String> {
    let mut places = Vec::new();
    for s in &ir.structs {
        for f in &s.fields {
            if let FieldType::Struct(t) | FieldType::Union(t) = &f.ty {
                if t == name {
                    places.push(format!("{}.{}", s.name, f.name));
                }
            }
        }
    }
    for u in &ir.unions {
        for m in u.members.iter().filter(|m| m.ty == name) {
            places.push(format!("{}.{}", u.name, m.name));
        }
    }
    places
}
