//! The checked-in bindings in `mlx5-prm/src/generated` are exactly what the generator makes
//! from `spec/` today.

use prm_codegen::gen::{drift, Config, REGENERATE};

#[test]
fn generated_code_matches_the_spec() {
    let root = prm_tests::workspace_root();
    let files = Config::for_mlx5_prm()
        .generate_from_dir(&prm_tests::spec_dir())
        .unwrap_or_else(|e| panic!("{e}"));
    let differ = drift(&files, &root.join("mlx5-prm/src/generated")).unwrap();
    assert!(
        differ.is_empty(),
        "mlx5-prm/src/generated is out of date ({}); run `{REGENERATE}` and commit the result",
        differ
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[test]
fn generation_is_deterministic() {
    let a = Config::for_mlx5_prm()
        .generate_from_dir(&prm_tests::spec_dir())
        .unwrap();
    let b = Config::for_mlx5_prm()
        .generate_from_dir(&prm_tests::spec_dir())
        .unwrap();
    assert_eq!(a, b);
}
