//! `prmc gen` refuses a field whose methods would clash with those every view has
//! (`prm_codegen::gen::item_names::VIEW_METHODS`); the runtime's `__prm_views!` declares them.
//! The two lists must agree, or a clash would again surface as a compile error in the
//! generated code instead of a message naming the field.

#[test]
fn the_generator_knows_every_method_the_runtime_gives_a_view() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../mlx5-prm/src/rt/view_of.rs");
    let text = std::fs::read_to_string(path).expect("the runtime's view_of.rs");
    let mut declared: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("pub fn ")
                .or_else(|| l.strip_prefix("pub const fn "))?;
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
        })
        .collect();
    declared.sort_unstable();
    let mut known = prm_codegen::gen::item_names::VIEW_METHODS.to_vec();
    known.sort_unstable();
    assert!(!declared.is_empty(), "no `pub fn` found in {path}");
    assert_eq!(
        declared, known,
        "update VIEW_METHODS in codegen/src/gen/item_names.rs"
    );
}
