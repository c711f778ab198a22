//! The real spec in `spec/` compiles with no diagnostics at all, and every command in it pairs
//! an input and an output layout that carry the PRM's common headers.

#[test]
fn real_spec_is_clean() {
    let c = prm_codegen::compile_dir(&prm_tests::spec_dir()).expect("spec/ is readable");
    assert!(!c.sources.files.is_empty(), "spec/ holds no spec files");
    assert!(c.diagnostics.is_empty(), "{}", c.render_human());
    assert!(!c.ir.commands.is_empty());
}
