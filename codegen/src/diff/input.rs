//! Reading one side of a diff: a spec directory, or a kernel-style header (`*.h`) imported in
//! memory with [`crate::import`] and compiled like a spec, so both kinds compare the same way.

use crate::diag::{self, Severity};
use crate::Compilation;
use std::path::{Path, PathBuf};

/// Why a side could not be read.
#[derive(Debug)]
pub enum InputError {
    /// The path is not there, or not a directory or header: a usage error (exit 2).
    Usage(String),
    /// The input was read but has errors, rendered with locations (exit 1).
    Invalid(String),
}

/// Reads `path`: a directory of spec files, or a header file (any file; `.h` is the usual).
pub fn load(path: &Path) -> Result<Compilation, InputError> {
    if path.is_dir() {
        let c = crate::compile_dir(path)
            .map_err(|e| InputError::Usage(format!("cannot read `{}`: {e}", path.display())))?;
        if c.sources.files.is_empty() {
            return Err(InputError::Usage(format!(
                "no spec files (*.yaml, *.yml) under `{}`",
                path.display()
            )));
        }
        return checked(c);
    }
    if !path.is_file() {
        return Err(InputError::Usage(format!(
            "`{}` is neither a spec directory nor a header file",
            path.display()
        )));
    }
    let imp = crate::import::import(&[path.to_path_buf()])
        .map_err(|e| InputError::Usage(format!("cannot read `{}`: {e}", path.display())))?;
    if imp.diagnostics.has_errors() {
        let mut text = String::new();
        for d in imp.diagnostics.sorted() {
            if d.severity == Severity::Error {
                text.push_str(&diag::render_human(d, &imp.sources));
            }
        }
        text.push_str(&format!(
            "prmc: `{}` does not import: {} error(s)\n",
            path.display(),
            imp.diagnostics.error_count()
        ));
        return Err(InputError::Invalid(text));
    }
    // The imported YAML lives only here; name it after the header so messages point at it.
    let files = imp
        .files
        .into_iter()
        .map(|(name, text)| (PathBuf::from(format!("{}:{name}", path.display())), text))
        .collect();
    checked(crate::compile_sources(files))
}

fn checked(c: Compilation) -> Result<Compilation, InputError> {
    if c.is_ok() {
        Ok(c)
    } else {
        Err(InputError::Invalid(c.render_human()))
    }
}
