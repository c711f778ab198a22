//! `prm-codegen`: the compiler for PRM layout specs.
//!
//! The pipeline, one module per stage:
//!
//! 1. [`load`] reads YAML spec files into [`syntax`] trees, keeping the line and column of
//!    every value, and parses positions with the pest grammar in [`position`];
//! 2. [`lower`] resolves names and positions into the [`ir`] (absolute MSB-first bit offsets);
//! 3. [`passes`] check the IR, one rule per file, collecting every problem as a
//!    [`diag::Diagnostic`];
//! 4. tools read the IR: [`show`] prints PRM-style tables, [`layout`] the JSON contract.
//!
//! Nothing in the pipeline panics on bad input: problems are diagnostics.

pub mod decode;
pub mod diag;
pub mod gen;
pub mod import;
pub mod ir;
pub mod layout;
pub mod load;
pub mod lower;
pub mod num;
pub mod passes;
pub mod position;
pub mod show;
pub mod source;
pub mod syntax;
pub mod synth;

use diag::Diagnostics;
use ir::Ir;
use source::SourceMap;
use std::path::{Path, PathBuf};

/// The result of compiling a set of spec files.
#[derive(Debug, Clone, Default)]
pub struct Compilation {
    /// The files read.
    pub sources: SourceMap,
    /// The resolved layouts (complete only when there are no errors).
    pub ir: Ir,
    /// Every problem found.
    pub diagnostics: Diagnostics,
}

impl Compilation {
    /// True when the specs have no errors.
    pub fn is_ok(&self) -> bool {
        !self.diagnostics.has_errors()
    }

    /// All diagnostics rendered for a terminal, with a summary line.
    pub fn render_human(&self) -> String {
        diag::render_all_human(&self.diagnostics, &self.sources)
    }

    /// All diagnostics as one JSON document.
    pub fn render_json(&self) -> String {
        diag::render_json(&self.diagnostics, &self.sources)
    }
}

/// Compiles every `*.yaml` spec file under `dir` (recursively, in path order).
pub fn compile_dir(dir: &Path) -> std::io::Result<Compilation> {
    let mut files = Vec::new();
    for path in load::spec_files(dir)? {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        files.push((path, text));
    }
    let mut c = compile_sources(files);
    for m in &mut c.ir.modules {
        if let Ok(rel) = std::path::Path::new(&m.path).strip_prefix(dir) {
            m.relative = rel.display().to_string();
        }
    }
    Ok(c)
}

/// Compiles in-memory spec files given as `(path, text)`.
pub fn compile_sources(files: Vec<(PathBuf, String)>) -> Compilation {
    let mut sources = SourceMap::default();
    for (path, text) in files {
        sources.add(&path, text);
    }
    let mut diagnostics = Diagnostics::default();
    let parsed: Vec<_> = (0..sources.files.len())
        .map(|i| load::parse_file(&sources, i, &mut diagnostics))
        .collect();
    let ir = lower::lower(&sources, &parsed, &mut diagnostics);
    passes::run_all(&ir, &mut diagnostics);
    Compilation {
        sources,
        ir,
        diagnostics,
    }
}

/// Compiles one spec text (handy for tests and fuzzing).
pub fn compile_str(path: &str, text: &str) -> Compilation {
    compile_sources(vec![(PathBuf::from(path), text.to_string())])
}
