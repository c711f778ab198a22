//! A check on the code generated for one structure or union: no two of a type's inherent
//! methods (or associated constants) share a name, and no view gets a method that every view
//! already has.
//!
//! Each field becomes several methods whose names are built from the field's (`b`, `set_b`,
//! `try_set_b`, `b_raw`, `b_mut`, `b_len`, …), so fields `b` and `set_b` both make a method
//! `set_b`; and a field named `storage` or `zeroed` makes one that `ViewOf`, declared by the
//! runtime's `__prm_views!`, already has. Either way `gen` used to write code that did not
//! compile (E0592, "duplicate definitions"). The check reads the generated items themselves,
//! so it knows exactly which methods exist; the spec names are only looked up afterwards, to
//! say which fields to rename.

use super::names::camel;
use super::GenError;
use std::collections::BTreeMap;
use syn::ext::IdentExt as _;

/// The methods `__prm_views!` gives every view (`mlx5-prm/src/rt/view_of.rs`; a test in
/// `tests/` compares the two lists).
pub const VIEW_METHODS: &[&str] = &[
    "new_checked",
    "new_unchecked",
    "into_inner",
    "storage",
    "storage_mut",
    "zeroed",
    "from_slice",
    "from_slice_mut",
];

/// Method names a field can give its layout's view, for saying which fields a clash comes
/// from (the decision itself is made on the generated code).
fn made_by(field: &str, method: &str) -> bool {
    const PREFIXES: &[&str] = &["", "set_", "try_set_"];
    const SUFFIXES: &[&str] = &["", "_raw", "_mut", "_iter", "_len", "_as", "_as_mut"];
    PREFIXES.iter().any(|p| {
        SUFFIXES
            .iter()
            .any(|s| method.strip_prefix(p).and_then(|m| m.strip_suffix(s)) == Some(field))
    })
}

/// Checks the items generated for layout `kind` `name` (`"struct"` or `"union"`), whose
/// fields (or members) are named `fields`.
pub fn check(file: &syn::File, kind: &str, name: &str, fields: &[&str]) -> Result<(), GenError> {
    let view = camel(name).to_string();
    // Type → name → how many inherent items have it.
    let mut items: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for item in &file.items {
        let syn::Item::Impl(imp) = item else { continue };
        if imp.trait_.is_some() {
            continue;
        }
        let syn::Type::Path(ty) = &*imp.self_ty else {
            continue;
        };
        let Some(last) = ty.path.segments.last() else {
            continue;
        };
        let names = items.entry(last.ident.to_string()).or_default();
        for i in &imp.items {
            let ident = match i {
                syn::ImplItem::Fn(f) => &f.sig.ident,
                syn::ImplItem::Const(c) => &c.ident,
                _ => continue,
            };
            *names.entry(ident.unraw().to_string()).or_default() += 1;
        }
    }
    let fields_of = |method: &str| -> String {
        let from: Vec<String> = fields
            .iter()
            .filter(|f| made_by(f, method))
            .map(|f| format!("`{f}`"))
            .collect();
        match from.len() {
            0 => String::new(),
            1 => format!(" (from field {})", from[0]),
            _ => format!(" (from fields {})", from.join(" and ")),
        }
    };
    let mut clashes = Vec::new();
    for (ty, names) in &items {
        let owner = if *ty == view {
            format!("{kind} `{name}`")
        } else {
            format!("type `{ty}` of {kind} `{name}`")
        };
        for (method, &count) in names {
            if count > 1 {
                clashes.push(format!(
                    "{owner} would get {count} methods named `{method}`{}; rename a field",
                    fields_of(method)
                ));
            } else if *ty == view && VIEW_METHODS.contains(&method.as_str()) {
                clashes.push(format!(
                    "{owner} would get a method `{method}`{}, which every view already has \
                     (`ViewOf::{method}`); rename the field",
                    fields_of(method)
                ));
            }
        }
    }
    if clashes.is_empty() {
        Ok(())
    } else {
        Err(GenError::NameClash(clashes.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::made_by;

    #[test]
    fn which_fields_make_a_method() {
        assert!(made_by("b", "set_b"));
        assert!(made_by("set_b", "set_b"));
        assert!(made_by("mac", "mac_len"));
        assert!(made_by("x", "try_set_x_raw"));
        assert!(!made_by("b", "set_bb"));
        assert!(!made_by("b", "storage"));
    }
}
