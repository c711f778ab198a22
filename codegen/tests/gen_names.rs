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
