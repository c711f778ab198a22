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

pub mod compare;
pub mod decode;
pub mod diag;
pub mod diff;
pub mod doc;
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
pub mod show_items;
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
    /// Keeps only the diagnostics located in the file read from `path` (the others are
    /// checked but not reported: `prmc check FILE`); returns how many errors were dropped, or
    /// `None` when no file of the compilation has that path.
    pub fn only_file(&mut self, path: &Path) -> Option<usize> {
        let same = |p: &Path| p == path || p.canonicalize().ok() == path.canonicalize().ok();
        let file = self.sources.files.iter().position(|f| same(&f.path))?;
        Some(self.diagnostics.retain(|d| d.span.file == file))
    }

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
    let (files, problems) = load::walk::read_specs(dir)?;
    let mut c = compile_bytes(files);
    load::walk::report(&mut c, problems);
    for m in &mut c.ir.modules {
        if let Ok(rel) = std::path::Path::new(&m.path).strip_prefix(dir) {
            m.relative = rel.display().to_string();
        }
    }
    Ok(c)
}

/// Compiles in-memory spec files given as `(path, text)`.
pub fn compile_sources(files: Vec<(PathBuf, String)>) -> Compilation {
    compile_bytes(
        files
            .into_iter()
            .map(|(p, t)| (p, t.into_bytes()))
            .collect(),
    )
}

/// Compiles spec files given as `(path, bytes)`. A file that is not UTF-8 is one diagnostic at
/// its first bad byte and is left out; the others are checked as usual.
pub fn compile_bytes(files: Vec<(PathBuf, Vec<u8>)>) -> Compilation {
    let mut sources = SourceMap::default();
    let mut bad = Vec::new();
    for (path, bytes) in files {
        match String::from_utf8(bytes) {
            Ok(text) => {
                sources.add(&path, text);
            }
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let bytes = e.into_bytes();
                let byte = bytes.get(at).copied().unwrap_or(0);
                let prefix = String::from_utf8_lossy(&bytes[..at]).into_owned();
                let line = prefix.matches('\n').count() as u32 + 1;
                let col = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
                let file = sources.add(&path, String::from_utf8_lossy(&bytes).into_owned());
                bad.push((file, line, col, byte));
            }
        }
    }
    let mut diagnostics = Diagnostics::default();
    for &(file, line, col, byte) in &bad {
        let span = source::Span {
            file,
            line,
            col,
            len: 1,
        };
        diagnostics.push(
            diag::Diagnostic::error(
                "not-utf8",
                span,
                format!("byte 0x{byte:02x} is not UTF-8: spec files are UTF-8 text, so this file is not checked"),
            )
            .with_hint("save the file as UTF-8 (or remove the byte)"),
        );
    }
    let parsed: Vec<_> = (0..sources.files.len())
        .map(|i| {
            if bad.iter().any(|b| b.0 == i) {
                syntax::SpecFile {
                    file: i,
                    ..syntax::SpecFile::default()
                }
            } else {
                load::parse_file(&sources, i, &mut diagnostics)
            }
        })
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
