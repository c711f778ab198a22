//! Diagnostics: collected, never thrown, so one run reports every problem.
//!
//! The human form follows the compiler convention that editors already understand
//! (`file:line:col: error: message`), then shows the source line with a caret under the
//! offending text, secondary locations as notes, and a hint where one helps. The JSON form
//! carries the same facts for tools.

use crate::source::{SourceMap, Span};
use serde::Serialize;
use std::fmt::Write as _;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The spec is wrong; nothing is generated from it.
    Error,
    /// Suspicious but usable.
    Warning,
}

/// A secondary location that explains the main one ("first declared here").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Where, if the note has a place.
    pub span: Option<Span>,
    /// What it says.
    pub message: String,
}

/// One problem found in the specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A stable, kebab-case identifier of the check that raised it (`overlap`, `enum-fit`, ...).
    pub code: &'static str,
    /// One sentence saying what is wrong.
    pub message: String,
    /// Where.
    pub span: Span,
    /// The YAML path of the offending node, e.g. `structs.cqe64.fields.opcode.at`.
    pub path: Option<String>,
    /// Related places.
    pub notes: Vec<Note>,
    /// How to fix it, when the fix is not obvious from the message.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A new error.
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            path: None,
            notes: Vec::new(),
            hint: None,
        }
    }

    /// A new warning.
    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    /// Sets the YAML path.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Adds a note at a place.
    pub fn with_note(mut self, span: Span, message: impl Into<String>) -> Self {
        self.notes.push(Note {
            span: Some(span),
            message: message.into(),
        });
        self
    }

    /// Sets the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// The problems of one run, in the order found.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Records a problem.
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    /// Keeps only the problems `keep` accepts; returns how many errors it dropped.
    pub fn retain(&mut self, keep: impl Fn(&Diagnostic) -> bool) -> usize {
        let before = self.error_count();
        self.items.retain(|d| keep(d));
        before - self.error_count()
    }

    /// All problems, sorted by file, line and column (stable for equal positions).
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.items.iter().collect();
        v.sort_by_key(|d| (d.span.file, d.span.line, d.span.col));
        v
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    /// Number of warnings.
    pub fn warning_count(&self) -> usize {
        self.items.len() - self.error_count()
    }

    /// True when there is at least one error.
    pub fn has_errors(&self) -> bool {
        self.error_count() > 0
    }

    /// True when nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Iterates in the order found.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }
}

/// Renders one diagnostic for a terminal.
pub fn render_human(d: &Diagnostic, sources: &SourceMap) -> String {
    let sev = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut out = format!("{}: {sev}: {}\n", sources.location(d.span), d.message);
    write_snippet(&mut out, d.span, sources);
    for note in &d.notes {
        match note.span {
            Some(s) => {
                let _ = writeln!(out, "  note: {}: {}", sources.location(s), note.message);
                write_snippet(&mut out, s, sources);
            }
            None => {
                let _ = writeln!(out, "  note: {}", note.message);
            }
        }
    }
    if let Some(h) = &d.hint {
        let _ = writeln!(out, "  hint: {h}");
    }
    if let Some(p) = &d.path {
        let _ = writeln!(out, "  in: {p}");
    }
    out
}

fn write_snippet(out: &mut String, span: Span, sources: &SourceMap) {
    let Some(file) = sources.file(span) else {
        return;
    };
    // A file with no text (one that was not read: too large, a link loop) has no line to show.
    let Some(line) = file.line(span.line).filter(|_| !file.text.is_empty()) else {
        return;
    };
    let num = span.line.to_string();
    let pad = " ".repeat(num.len());
    let at = (span.col.max(1) - 1) as usize;
    // A very long line (a hostile or generated file) is shown as a window around the caret,
    // found by walking at most `SNIPPET_REACH` characters, so each diagnostic costs a bounded
    // amount however long the line is.
    if at > SNIPPET_REACH {
        let _ = writeln!(
            out,
            " {num} | … (column {} of a line too long to show)",
            span.col
        );
        return;
    }
    let fits = line.chars().take(SNIPPET_WIDTH + 1).count() <= SNIPPET_WIDTH;
    let start = if fits {
        0
    } else {
        at.saturating_sub(SNIPPET_WIDTH / 3)
    };
    let mut window = line.chars().skip(start);
    // Tabs would misplace the caret; show them as single spaces. Other control characters
    // (a NUL in a hostile file) would reach the terminal raw: show their Unicode pictures
    // (`␀`), one column each, so the caret still lines up.
    let shown: String = window
        .by_ref()
        .take(SNIPPET_WIDTH)
        .map(|c| match c {
            '\t' => ' ',
            '\0'..='\u{1f}' => char::from_u32(0x2400 + u32::from(c)).unwrap_or('?'),
            '\u{7f}' => '\u{2421}',
            c => c,
        })
        .collect();
    let shown_len = shown.chars().count();
    let before = if start > 0 { "…" } else { "" };
    let after = if window.next().is_some() { "…" } else { "" };
    let caret = if fits {
        at
    } else {
        at.saturating_sub(start).min(shown_len) + usize::from(start > 0)
    };
    let len = (span.len.max(1) as usize).min((start + shown_len).saturating_sub(at).max(1));
    let _ = writeln!(out, " {num} | {before}{shown}{after}");
    let _ = writeln!(out, " {pad} | {}{}", " ".repeat(caret), "^".repeat(len));
}

/// Columns past which a source line is not shown under a diagnostic.
const SNIPPET_REACH: usize = 4096;

/// Characters of a source line shown under a diagnostic; longer lines are cut around the caret.
const SNIPPET_WIDTH: usize = 160;

/// Renders every diagnostic for a terminal, followed by a one-line summary.
pub fn render_all_human(diags: &Diagnostics, sources: &SourceMap) -> String {
    let mut out = String::new();
    for d in diags.sorted() {
        out.push_str(&render_human(d, sources));
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "prmc: {} error{}, {} warning{} in {} file{}",
        diags.error_count(),
        plural(diags.error_count()),
        diags.warning_count(),
        plural(diags.warning_count()),
        sources.files.len(),
        plural(sources.files.len()),
    );
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The JSON form of one diagnostic (part of the `--format json` contract).
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic<'a> {
    /// `error` or `warning`.
    pub severity: Severity,
    /// Stable check identifier.
    pub code: &'a str,
    /// The message.
    pub message: &'a str,
    /// The file path as given.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Characters underlined.
    pub length: u32,
    /// YAML path, if known.
    pub path: Option<&'a str>,
    /// The hint, if any.
    pub hint: Option<&'a str>,
    /// Related places.
    pub notes: Vec<JsonNote<'a>>,
}

/// A note in the JSON form.
#[derive(Debug, Serialize)]
pub struct JsonNote<'a> {
    /// The note text.
    pub message: &'a str,
    /// `file:line:col`, if the note has a place.
    pub location: Option<String>,
}

/// The whole JSON report.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// Every problem, sorted by position.
    pub diagnostics: Vec<JsonDiagnostic<'a>>,
    /// Number of errors.
    pub errors: usize,
    /// Number of warnings.
    pub warnings: usize,
    /// Number of files read.
    pub files: usize,
}

/// Renders every diagnostic as one JSON document.
pub fn render_json(diags: &Diagnostics, sources: &SourceMap) -> String {
    let report = JsonReport {
        diagnostics: diags
            .sorted()
            .into_iter()
            .map(|d| JsonDiagnostic {
                severity: d.severity,
                code: d.code,
                message: &d.message,
                file: sources
                    .file(d.span)
                    .map(|f| f.path.display().to_string())
                    .unwrap_or_default(),
                line: d.span.line,
                column: d.span.col,
                length: d.span.len.max(1),
                path: d.path.as_deref(),
                hint: d.hint.as_deref(),
                notes: d
                    .notes
                    .iter()
                    .map(|n| JsonNote {
                        message: &n.message,
                        location: n.span.map(|s| sources.location(s)),
                    })
                    .collect(),
            })
            .collect(),
        errors: diags.error_count(),
        warnings: diags.warning_count(),
        files: sources.files.len(),
    };
    serde_json::to_string_pretty(&report).expect("diagnostics serialize") + "\n"
}
