//! Rust names for spec names: `create_cq_in` → `CreateCqIn`, `type` → `r#type`.

use heck::{ToShoutySnakeCase, ToUpperCamelCase};
use proc_macro2::{Ident, Span};

/// Words that cannot be raw identifiers either.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// Reserved words of Rust 2021 (strict and reserved).
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof",
    "unsized", "virtual", "yield", "gen",
];

/// A method or module name: the spec name, raw when it is a keyword.
pub fn snake(name: &str) -> Ident {
    if NOT_RAW.contains(&name) {
        Ident::new(&format!("{name}_"), Span::call_site())
    } else if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// A method name built from parts (`set_` + name), never a keyword.
pub fn method(prefix: &str, name: &str, suffix: &str) -> Ident {
    let s = format!("{prefix}{name}{suffix}");
    if prefix.is_empty() && suffix.is_empty() {
        return snake(name);
    }
    Ident::new(&s, Span::call_site())
}

/// A type or variant name.
pub fn camel(name: &str) -> Ident {
    let s = name.to_upper_camel_case();
    let s = if s == "Self" { "Self_".to_string() } else { s };
    Ident::new(&s, Span::call_site())
}

/// A type name with a suffix: `camel_with("toy", "Ref")` → `ToyRef`.
pub fn camel_with(name: &str, suffix: &str) -> Ident {
    Ident::new(
        &format!("{}{suffix}", name.to_upper_camel_case()),
        Span::call_site(),
    )
}

/// A constant name.
pub fn shouty(name: &str) -> Ident {
    Ident::new(&name.to_shouty_snake_case(), Span::call_site())
}

/// The narrowest unsigned type holding `width` bits.
pub fn uint_type(width: u64) -> Ident {
    let t = match width {
        0..=8 => "u8",
        9..=16 => "u16",
        17..=32 => "u32",
        _ => "u64",
    };
    Ident::new(t, Span::call_site())
}

/// One line of spec documentation as a rustdoc line: a leading space, and square brackets
/// outside code spans escaped, so that text like `0x04[30]` is not taken for a link.
pub fn doc_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 1);
    out.push(' ');
    let mut in_code = false;
    for c in line.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '[' | ']' if !in_code => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// True for names that must be written as raw identifiers (`r#type`).
pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}
