//! Names that the generated crate declares itself (the generic view type `ViewOf`, the
//! `layouts` module of layout markers) cannot be taken by a spec: `gen` refuses with a
//! message that names the spec item, instead of emitting code that does not compile.

use prm_codegen::gen::Config;
use std::path::PathBuf;

fn gen_error(file: &str, text: &str) -> String {
    let c = prm_codegen::compile_sources(vec![(PathBuf::from(file), text.to_string())]);
    assert!(c.diagnostics.is_empty(), "{}", c.render_human());
    match Config::for_mlx5_prm().generate(&c.ir) {
        Ok(_) => panic!("{file}: generated without complaint"),
        Err(e) => e.to_string(),
    }
}

const ONE_LAYOUT: &str =
    "structs:\n  NAME:\n    size: 0x4\n    fields:\n      a: { at: \"0x00[7:0]\" }\n";

#[test]
fn a_layout_named_like_the_generic_view_type_is_refused() {
    let e = gen_error("a.yaml", &ONE_LAYOUT.replace("NAME", "view_of"));
    assert!(
        e.contains("struct `view_of`") && e.contains("`ViewOf`") && e.contains("generic view type"),
        "{e}"
    );
    // The same spec under another name generates.
    let ok = ONE_LAYOUT.replace("NAME", "view_off");
    let c = prm_codegen::compile_sources(vec![(PathBuf::from("a.yaml"), ok)]);
    Config::for_mlx5_prm().generate(&c.ir).expect("generates");
}

#[test]
fn a_spec_file_named_like_the_markers_module_is_refused() {
    let e = gen_error("layouts.yaml", &ONE_LAYOUT.replace("NAME", "foo"));
    assert!(
        e.contains("`layouts`") && e.contains("rename the file"),
        "{e}"
    );
}

/// A field whose getter, setter or other accessor would have the name of another field's
/// accessor (`b` and `set_b` both make `set_b`), or of a method every view has (`storage`,
/// `zeroed`, …), is refused with the fields named: `gen` used to write code that did not
/// compile (E0592, "duplicate definitions").
#[test]
fn fields_whose_methods_would_clash_are_refused() {
    let spec = |fields: &str| format!("structs:\n  foo:\n    size: 0x8\n    fields:\n{fields}");
    let e = gen_error(
        "a.yaml",
        &spec("      b: { at: \"0x00[7:0]\" }\n      set_b: { at: \"0x00[15:8]\" }\n"),
    );
    assert_eq!(
        e,
        "struct `foo` would get 2 methods named `set_b` (from fields `set_b` and `b`); rename one"
    );
    let e = gen_error(
        "a.yaml",
        &spec("      storage: { at: \"0x00[7:0]\" }\n      zeroed: { at: \"0x04[7:0]\" }\n"),
    );
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(lines[0].contains("a method `storage` (from field `storage`), which every view already has (`ViewOf::storage`); rename it"), "{e}");
    assert!(lines[1].contains("`ViewOf::zeroed`"), "{e}");
    // An array makes `mac_len`: a field of that name clashes with it.
    let e = gen_error(
        "a.yaml",
        &spec("      mac: { at: \"0x00[7:0]\", count: 4 }\n      mac_len: { at: \"0x04[7:0]\" }\n"),
    );
    assert!(e.contains("2 methods named `mac_len`"), "{e}");
    // Names that only look alike generate.
    let ok = spec("      b: { at: \"0x00[7:0]\" }\n      set_bb: { at: \"0x00[15:8]\" }\n      stored: { at: \"0x04[7:0]\" }\n");
    let c = prm_codegen::compile_sources(vec![(PathBuf::from("a.yaml"), ok)]);
    assert!(c.diagnostics.is_empty(), "{}", c.render_human());
    Config::for_mlx5_prm().generate(&c.ir).expect("generates");
}

/// Enum values whose Rust names meet (`x1` and `x_1` are both `X1`), and fields whose
/// position constants do (`size` is `SIZE_FIELD`, as `SIZE` is the view's), likewise; all
/// clashes of a spec are listed at once.
#[test]
fn enum_values_and_constants_that_would_clash_are_refused() {
    let spec = "enums:\n  mode:\n    width: 3\n    values:\n      x1: { value: 0 }\n      x_1: { value: 1 }\nstructs:\n  foo:\n    size: 0x4\n    fields:\n      size_field: { at: \"0x00[7:0]\" }\n      size: { at: \"0x00[15:8]\" }\n";
    let e = gen_error("a.yaml", spec);
    assert_eq!(
        e.lines().collect::<Vec<_>>(),
        [
            "enum `mode` would get 2 variants named `X1` (from values `x1` and `x_1`); rename one",
            "struct `foo` would get 2 constants named `SIZE_FIELD` (from fields `size` and `size_field`); rename one",
        ]
    );
}

/// A union member clashes the same way.
#[test]
fn union_members_whose_methods_would_clash_are_refused() {
    let spec = "structs:\n  s:\n    size: 0x4\n    fields:\n      a: { at: \"0x00[7:0]\" }\nunions:\n  u:\n    size: 0x4\n    members:\n      storage: s\n";
    let e = gen_error("a.yaml", spec);
    assert!(
        e.starts_with("union `u` would get a method `storage`"),
        "{e}"
    );
}
