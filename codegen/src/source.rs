//! Source files and positions in them.
//!
//! Every diagnostic points into a [`SourceMap`] entry by file index, line and column, so the
//! renderer can print the offending line and a caret without re-reading the disk.

use std::path::{Path, PathBuf};

/// A location in a spec file: 1-based line and column (in characters) and the length to
/// underline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    /// Index into [`SourceMap::files`].
    pub file: usize,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub col: u32,
    /// How many characters to underline (at least one is shown).
    pub len: u32,
}

impl Span {
    /// The one character at `line`, `col` (both 1-based) of `file`.
    pub fn point(file: usize, line: u32, col: u32) -> Span {
        Span {
            file,
            line,
            col,
            len: 1,
        }
    }

    /// A span `offset` characters to the right on the same line, `len` long.
    pub fn shifted(self, offset: u32, len: u32) -> Span {
        Span {
            col: self.col + offset,
            len,
            ..self
        }
    }
}

/// One loaded spec file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as given on the command line (used verbatim in diagnostics).
    pub path: PathBuf,
    /// The module name: the file stem.
    pub module: String,
    /// The whole text.
    pub text: String,
    /// Byte offset where each line starts, so a line is found without rescanning the file.
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// The text of 1-based `line`, without its line terminator.
    pub fn line(&self, line: u32) -> Option<&str> {
        let i = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(i)?;
        let end = self
            .line_starts
            .get(i + 1)
            .copied()
            .unwrap_or(self.text.len());
        let l = self.text.get(start..end)?;
        let l = l.strip_suffix('\n').unwrap_or(l);
        Some(l.strip_suffix('\r').unwrap_or(l))
    }
}

/// All files of one compilation.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// Files in load order (sorted by path).
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    /// Adds a file and returns its index.
    pub fn add(&mut self, path: &Path, text: String) -> usize {
        let module = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .filter(|&i| i < text.len() || i == 0)
            .collect();
        self.files.push(SourceFile {
            path: path.to_path_buf(),
            module,
            text,
            line_starts,
        });
        self.files.len() - 1
    }

    /// The file a span points into.
    pub fn file(&self, span: Span) -> Option<&SourceFile> {
        self.files.get(span.file)
    }

    /// `path:line:col` for a span.
    pub fn location(&self, span: Span) -> String {
        match self.file(span) {
            Some(f) => format!("{}:{}:{}", f.path.display(), span.line, span.col),
            None => "<unknown>".to_string(),
        }
    }
}
