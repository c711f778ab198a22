//! The code generator: IR → Rust source for the `mlx5-prm` crate (or any crate that depends
//! on its runtime), one module per spec file.
//!
//! Code is built with `quote` and formatted with `prettyplease`; output is deterministic (spec
//! order, no hash-map iteration). Like prost-build, [`Config`] works from a `build.rs` as well
//! as from `prmc gen`.
//!
//! One emitter per IR kind: [`structs`] (views, also register blocks), [`enums`], [`unions`],
//! [`commands`], [`access_registers`], [`state_machines`]; [`ctx`] holds what they share; [`module`] assembles files,
//! with the crate-wide reflection index of [`reflect_index`].

pub mod access_registers;
pub mod arrays;
pub mod commands;
pub mod ctx;
pub mod enums;
pub mod fields;
pub mod item_names;
pub mod module;
pub mod names;
pub mod reflect_index;
pub mod state_machines;
pub mod structs;
pub mod typestate;
pub mod unions;
pub mod views;
pub mod words;

use crate::ir::Ir;
use std::path::{Path, PathBuf};

/// The command that regenerates the checked-in bindings; named in every preamble and in the
/// drift test's failure message.
pub const REGENERATE: &str = "cargo run -p prm-codegen -- gen spec --out mlx5-prm/src/generated";

/// Whether an optional part of the output is generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    /// Not generated.
    Never,
    /// Generated unconditionally.
    Always,
    /// Generated behind `#[cfg(feature = "...")]` of the crate that includes the code.
    Feature(String),
}

/// Generator settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Path of the crate that provides the runtime (`rt` module and view macro):
    /// `crate` inside `mlx5-prm`, `::mlx5_prm` elsewhere.
    pub runtime_crate: String,
    /// `Debug` implementations that decode every field.
    pub debug: Emit,
    /// Reflection tables (`rt::reflect`; needs `mlx5-prm`'s `reflect` feature).
    pub reflect: Emit,
    /// Put every module inline in one file (for `include!` from `OUT_DIR`), instead of one file
    /// per spec file plus `mod.rs`.
    pub single_file: bool,
    /// The command named in the preamble.
    pub regenerate: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            runtime_crate: "::mlx5_prm".into(),
            debug: Emit::Always,
            reflect: Emit::Never,
            single_file: true,
            regenerate: "cargo build (build.rs)".into(),
        }
    }
}

/// One generated file: a path relative to the output directory and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Relative path, e.g. `cq.rs`.
    pub path: PathBuf,
    /// Formatted source.
    pub contents: String,
}

/// Why generation failed.
#[derive(Debug)]
pub enum GenError {
    /// The specs have errors; the rendered diagnostics.
    Spec(String),
    /// Two spec items would get the same Rust name.
    NameClash(String),
    /// Reading specs or writing files failed.
    Io(std::io::Error),
}

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GenError::Spec(d) => write!(f, "the specs have errors:\n{d}"),
            GenError::NameClash(m) => write!(f, "{m}"),
            GenError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for GenError {}

impl From<std::io::Error> for GenError {
    fn from(e: std::io::Error) -> Self {
        GenError::Io(e)
    }
}

impl Config {
    /// The settings `mlx5-prm` itself is generated with.
    pub fn for_mlx5_prm() -> Self {
        Config {
            runtime_crate: "crate".into(),
            debug: Emit::Feature("debug".into()),
            reflect: Emit::Feature("reflect".into()),
            single_file: false,
            regenerate: REGENERATE.into(),
        }
    }

    /// A config for a `build.rs`: runtime from `::mlx5_prm`, `Debug` always, one file
    /// (`<out_dir>/prm.rs`) to `include!`.
    pub fn new() -> Self {
        Config::default()
    }

    /// Sets the runtime crate path.
    pub fn runtime_crate(mut self, path: &str) -> Self {
        self.runtime_crate = path.into();
        self
    }

    /// Sets whether `Debug` implementations are generated.
    pub fn debug(mut self, emit: Emit) -> Self {
        self.debug = emit;
        self
    }

    /// Sets whether reflection tables are generated.
    pub fn reflect(mut self, emit: Emit) -> Self {
        self.reflect = emit;
        self
    }

    /// Sets one-file output.
    pub fn single_file(mut self, single: bool) -> Self {
        self.single_file = single;
        self
    }

    /// Generates Rust for an already checked IR.
    pub fn generate(&self, ir: &Ir) -> Result<Vec<GeneratedFile>, GenError> {
        module::check_names(ir)?;
        module::files(self, ir)
    }

    /// Compiles the specs in `spec_dir` and generates Rust from them.
    pub fn generate_from_dir(&self, spec_dir: &Path) -> Result<Vec<GeneratedFile>, GenError> {
        let c = crate::compile_dir(spec_dir)?;
        if !c.is_ok() {
            return Err(GenError::Spec(c.render_human()));
        }
        self.generate(&c.ir)
    }

    /// Compiles `spec_dir` and writes the generated files into `out_dir`, removing `*.rs`
    /// files there that generation no longer produces. For a `build.rs`: also prints
    /// `cargo:rerun-if-changed` lines for the spec files when `CARGO` is set.
    pub fn write(&self, spec_dir: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, GenError> {
        let files = self.generate_from_dir(spec_dir)?;
        if std::env::var_os("CARGO").is_some() && std::env::var_os("OUT_DIR").is_some() {
            for p in crate::load::spec_files(spec_dir)? {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        write_files(&files, out_dir)
    }
}

/// Writes `files` under `out_dir` (only those whose contents changed) and deletes stale
/// `*.rs` files. Returns the paths written.
pub fn write_files(files: &[GeneratedFile], out_dir: &Path) -> Result<Vec<PathBuf>, GenError> {
    std::fs::create_dir_all(out_dir)?;
    let mut written = Vec::new();
    for f in files {
        let path = out_dir.join(&f.path);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(f.contents.as_str()) {
            std::fs::write(&path, &f.contents)?;
            written.push(path);
        }
    }
    for entry in std::fs::read_dir(out_dir)? {
        let path = entry?.path();
        let stale = path.extension().is_some_and(|e| e == "rs")
            && !files.iter().any(|f| out_dir.join(&f.path) == path);
        if stale {
            std::fs::remove_file(&path)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// Compares `files` with what `out_dir` holds; returns the relative paths that differ, are
/// missing, or are stale.
pub fn drift(files: &[GeneratedFile], out_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut differ = Vec::new();
    for f in files {
        if std::fs::read_to_string(out_dir.join(&f.path))
            .ok()
            .as_deref()
            != Some(f.contents.as_str())
        {
            differ.push(f.path.clone());
        }
    }
    if out_dir.is_dir() {
        for entry in std::fs::read_dir(out_dir)? {
            let name = PathBuf::from(entry?.file_name());
            if name.extension().is_some_and(|e| e == "rs") && !files.iter().any(|f| f.path == name)
            {
                differ.push(name);
            }
        }
    }
    differ.sort();
    Ok(differ)
}
