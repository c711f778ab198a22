//! A check on the code generated for one structure, union or enum: no two of a type's
//! inherent methods or associated constants share a name, no two variants of an enum do, and
//! no view gets a method that every view already has.
//!
//! Rust names are built from spec names, so distinct spec names can meet: a field becomes
//! several methods (`b`, `set_b`, `try_set_b`, `b_raw`, `b_mut`, `b_len`, …), so fields `b`
//! and `set_b` both make a method `set_b`; fields `size` and `size_field` both make the
//! constant `SIZE_FIELD`; enum values `x1` and `x_1` both become the variant `X1`; and a field
//! named `storage` or `zeroed` makes a method that `ViewOf`, declared by the runtime's
//! `__prm_views!`, already has. Each way `gen` used to write code that did not compile
//! (E0592, E0428). The check reads the generated items themselves, so it knows exactly which
//! names exist; the spec names are only looked up afterwards, to say which to rename.

use super::names::{camel, shouty};
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

/// True if spec name `field` can give its layout's view the method `method` (for saying which
/// fields a clash comes from; the decision itself is made on the generated code).
fn makes_method(field: &str, method: &str) -> bool {
    const PREFIXES: &[&str] = &["", "set_", "try_set_"];
    const SUFFIXES: &[&str] = &["", "_raw", "_mut", "_iter", "_len", "_as", "_as_mut"];
    PREFIXES.iter().any(|p| {
        SUFFIXES
            .iter()
            .any(|s| method.strip_prefix(p).and_then(|m| m.strip_suffix(s)) == Some(field))
    })
}

/// True if spec name `field` gives the constant `name`: its position, renamed when it would
/// take a name the view has (as `structs::emit` names it).
fn makes_const(field: &str, name: &str) -> bool {
    let c = shouty(field).to_string();
    let c = match c.as_str() {
        "SIZE" | "FIELDS" | "LAYOUT" => shouty(&format!("{field}_field")).to_string(),
        _ => c,
    };
    c == name
}

/// The kinds of generated names a clash can be among.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Method,
    Constant,
    Variant,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Method => "methods",
            Kind::Constant => "constants",
            Kind::Variant => "variants",
        }
    }
    fn made_by(self, spec: &str, rust: &str) -> bool {
        match self {
            Kind::Method => makes_method(spec, rust),
            Kind::Constant => makes_const(spec, rust),
            Kind::Variant => camel(spec) == rust,
        }
    }
}

/// Checks the items generated for spec item `kind` `name` (`"struct"`, `"union"` or
/// `"enum"`), whose fields, members or values are named `parts`.
pub fn check(file: &syn::File, kind: &str, name: &str, parts: &[&str]) -> Result<(), GenError> {
    let own = camel(name).to_string();
    // (type, kind of name) → name → how many items have it.
    let mut seen: BTreeMap<(String, Kind), BTreeMap<String, usize>> = BTreeMap::new();
    let mut count = |ty: String, kind: Kind, ident: &syn::Ident| {
        *seen
            .entry((ty, kind))
            .or_default()
            .entry(ident.unraw().to_string())
            .or_default() += 1;
    };
    for item in &file.items {
        match item {
            syn::Item::Impl(imp) if imp.trait_.is_none() => {
                let syn::Type::Path(ty) = &*imp.self_ty else {
                    continue;
                };
                let Some(last) = ty.path.segments.last() else {
                    continue;
                };
                for i in &imp.items {
                    match i {
                        syn::ImplItem::Fn(f) => {
                            count(last.ident.to_string(), Kind::Method, &f.sig.ident)
                        }
                        syn::ImplItem::Const(c) => {
                            count(last.ident.to_string(), Kind::Constant, &c.ident)
                        }
                        _ => {}
                    }
                }
            }
            syn::Item::Enum(e) => {
                for v in &e.variants {
                    count(e.ident.to_string(), Kind::Variant, &v.ident);
                }
            }
            _ => {}
        }
    }
    let from = |what: Kind, rust: &str| -> String {
        let from: Vec<String> = parts
            .iter()
            .filter(|p| what.made_by(p, rust))
            .map(|p| format!("`{p}`"))
            .collect();
        let (one, many) = match kind {
            "enum" => ("value", "values"),
            "union" => ("member", "members"),
            _ => ("field", "fields"),
        };
        match from.len() {
            0 => String::new(),
            1 => format!(" (from {one} {})", from[0]),
            _ => format!(" (from {many} {})", from.join(" and ")),
        }
    };
    let mut clashes = Vec::new();
    for ((ty, what), names) in &seen {
        let owner = if *ty == own {
            format!("{kind} `{name}`")
        } else {
            format!("type `{ty}` of {kind} `{name}`")
        };
        for (rust, &n) in names {
            if n > 1 {
                clashes.push(format!(
                    "{owner} would get {n} {} named `{rust}`{}; rename one",
                    what.plural(),
                    from(*what, rust)
                ));
            } else if *what == Kind::Method && *ty == own && VIEW_METHODS.contains(&rust.as_str()) {
                clashes.push(format!(
                    "{owner} would get a method `{rust}`{}, which every view already has \
                     (`ViewOf::{rust}`); rename it",
                    from(*what, rust)
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
    use super::{makes_const, makes_method};

    #[test]
    fn which_spec_names_make_a_rust_name() {
        assert!(makes_method("b", "set_b"));
        assert!(makes_method("set_b", "set_b"));
        assert!(makes_method("mac", "mac_len"));
        assert!(makes_method("x", "try_set_x_raw"));
        assert!(!makes_method("b", "set_bb"));
        assert!(!makes_method("b", "storage"));
        assert!(makes_const("size", "SIZE_FIELD"));
        assert!(makes_const("size_field", "SIZE_FIELD"));
        assert!(!makes_const("size", "SIZE"));
    }
}
