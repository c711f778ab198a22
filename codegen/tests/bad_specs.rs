//! Bad specs: every fixture in `tests/bad/` has exactly one deliberate problem (said on its
//! first line). Each must fail with diagnostics of a single code, and its human rendering is
//! snapshotted so a change of message, column or caret shows up in review.
//!
//! Fixtures are found by listing the directory, so adding one needs no change here; adding a
//! check without a fixture fails `every_check_has_a_fixture`.

use prm_codegen::Compilation;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The fixture directory, relative to the crate root (the working directory of `cargo test`).
const DIR: &str = "tests/bad";

/// Codes raised while loading and lowering (not by a pass) that must each have a fixture.
const LOADER_CODES: &[&str] = &[
    "yaml",
    "yaml-indentation",
    "duplicate-key",
    "unknown-key",
    "missing-key",
    "position",
    "number",
    "unknown-reference",
    "position-width",
    "access",
];

/// Every fixture, sorted by file name: `(stem, relative path, text)`.
fn fixtures() -> Vec<(String, PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(DIR);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no fixtures in {}", dir.display());
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(&name))
                .unwrap_or_else(|e| panic!("reading {name}: {e}"));
            let stem = name.trim_end_matches(".yaml").to_string();
            (stem, PathBuf::from(DIR).join(&name), text)
        })
        .collect()
}

fn compile(path: &Path, text: &str) -> Compilation {
    prm_codegen::compile_sources(vec![(path.to_path_buf(), text.to_string())])
}

/// The one code a fixture's diagnostics carry; panics when there are none or several.
fn single_code(name: &str, c: &Compilation) -> &'static str {
    assert!(
        c.diagnostics.has_errors(),
        "{name}: expected an error, got none:\n{}",
        c.render_human()
    );
    let codes: BTreeSet<&'static str> = c.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes.len(),
        1,
        "{name}: a fixture has one problem, but diagnostics carry codes {codes:?}:\n{}",
        c.render_human()
    );
    codes.into_iter().next().expect("one code")
}

#[test]
fn each_fixture_has_one_problem_and_its_diagnostics_are_stable() {
    // Check every fixture before failing, so one run lists (and writes) every changed snapshot.
    let mut failed = Vec::new();
    for (name, path, text) in fixtures() {
        let result = std::panic::catch_unwind(|| {
            let first = text.lines().next().unwrap_or("");
            assert!(
                first.starts_with('#') && first.len() > 2,
                "{name}: line 1 must be a comment saying what is wrong"
            );
            let c = compile(&path, &text);
            single_code(&name, &c);
            insta::assert_snapshot!(name.as_str(), c.render_human());
        });
        if result.is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "failing fixtures: {failed:?}");
}

#[test]
fn json_rendering_is_stable() {
    let (name, path, text) = fixtures()
        .into_iter()
        .find(|(n, _, _)| n.ends_with("_overlap"))
        .expect("the overlap fixture");
    let c = compile(&path, &text);
    single_code(&name, &c);
    let json = c.render_json();
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("render_json is JSON");
    assert_eq!(parsed["errors"], 1);
    insta::assert_snapshot!("json_overlap", json);
}

#[test]
fn every_check_has_a_fixture() {
    let covered: BTreeSet<&'static str> = fixtures()
        .iter()
        .map(|(name, path, text)| single_code(name, &compile(path, text)))
        .collect();
    let required: BTreeSet<&'static str> = prm_codegen::passes::PASSES
        .iter()
        .map(|p| p.name)
        .chain(LOADER_CODES.iter().copied())
        .collect();
    let missing: Vec<_> = required.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "no fixture in {DIR}/ raises {missing:?}"
    );
}
