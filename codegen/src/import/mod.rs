//! `prmc import`: reads headers written in the style of the Linux kernel's `mlx5_ifc.h`
//! (`struct mlx5_ifc_X_bits { u8 field[0xN]; ... };`, one C byte per PRM bit) with a pest
//! grammar, lays the structures out, and writes them as spec YAML in the PRM notation.
//!
//! The output is a faithful transcription, used to cross-check the hand-written spec and to
//! test the toolchain at the scale of the whole PRM; it is generated when needed, never
//! committed. Reserved members become gaps; layouts the spec language cannot express are
//! reported and written in the nearest form it can (see [`emit`]).
//!
//! `DECLARE_FLEX_ARRAY(struct tag, name);` is read as `struct tag name[];`. An anonymous union
//! whose members are all flexible arrays (alternative element types for one trailing list, as
//! in 6.12's RQT context) is read as its first member, with a warning for each other member:
//! a spec structure has one trailing array.

pub mod budget;
pub mod commands;
pub mod emit;
pub mod enum_spec;
pub mod enums;
mod excerpt;
pub mod expr;
pub mod flex;
pub mod precheck;
pub mod read;
mod unread;
mod yaml_out;

use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{SourceMap, Span};
use pest::iterators::Pair;
use pest::Parser;
use pest_derive::Parser;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[grammar = "import/header.pest"]
struct HeaderParser;

/// A structure or union definition from a header.
#[derive(Debug, Clone)]
pub struct Def {
    /// True for `union`.
    pub union: bool,
    /// The C tag (`mlx5_ifc_cqc_bits`).
    pub tag: String,
    /// The spec name (`cqc`).
    pub name: String,
    /// Members in declaration order.
    pub members: Vec<Member>,
    /// Where the definition starts.
    pub span: Span,
}

/// A member of a definition.
#[derive(Debug, Clone)]
pub enum Member {
    /// `u8 name[d0][d1]...;` (`None` for an empty or zero dimension).
    Field {
        /// Name as written.
        name: String,
        /// Dimensions.
        dims: Vec<Option<u64>>,
        /// Where.
        span: Span,
    },
    /// `struct tag name[count];`
    Nested {
        /// True for a union.
        union: bool,
        /// The C tag.
        tag: String,
        /// Member name.
        name: String,
        /// `None`: not an array; `Some(None)`: flexible array; `Some(Some(n))`: n elements.
        count: Option<Option<u64>>,
        /// Where.
        span: Span,
    },
    /// `union { ... } name;` or `struct { ... };`
    Inline {
        /// True for a union.
        union: bool,
        /// Members.
        members: Vec<Member>,
        /// Member name, if any.
        name: Option<String>,
        /// Where.
        span: Span,
    },
    /// Something that is not a layout member.
    Bad {
        /// The text.
        text: String,
        /// Where.
        span: Span,
    },
}

/// The spec name for a C tag: `mlx5_ifc_cqc_bits` → `cqc`; other tags lose only the prefix.
pub fn spec_name(tag: &str) -> String {
    let t = tag.strip_prefix("mlx5_ifc_").unwrap_or(tag);
    t.strip_suffix("_bits").unwrap_or(t).to_string()
}

fn span_of(sources: &SourceMap, file: usize, pair: &Pair<Rule>) -> Span {
    let (line, col) = pair.line_col();
    let len = pair
        .as_str()
        .lines()
        .next()
        .map_or(1, |l| l.chars().count()) as u32;
    let _ = sources;
    Span {
        file,
        line: line as u32,
        col: col as u32,
        len: len.max(1),
    }
}

fn members(
    sources: &SourceMap,
    file: usize,
    body: Pair<Rule>,
    defines: &expr::Defines,
    diags: &mut Diagnostics,
) -> Vec<Member> {
    body.into_inner()
        .map(|m| {
            let span = span_of(sources, file, &m);
            match m.as_rule() {
                Rule::field => {
                    let mut it = m.into_inner();
                    let name = it
                        .next()
                        .map(|p| p.as_str().to_string())
                        .unwrap_or_default();
                    let dims = it
                        .map(|d| dimension(sources, file, d, defines, diags))
                        .collect();
                    Member::Field { name, dims, span }
                }
                Rule::nested => {
                    let mut it = m.into_inner();
                    let union = it.next().is_some_and(|k| k.as_str() == "union");
                    let tag = it
                        .next()
                        .map(|p| p.as_str().to_string())
                        .unwrap_or_default();
                    let name = it
                        .next()
                        .map(|p| p.as_str().to_string())
                        .unwrap_or_default();
                    let count = it
                        .next()
                        .map(|d| dimension(sources, file, d, defines, diags));
                    Member::Nested {
                        union,
                        tag,
                        name,
                        count,
                        span,
                    }
                }
                Rule::flex => {
                    let mut it = m.into_inner();
                    let union = it.next().is_some_and(|k| k.as_str() == "union");
                    let mut text = || it.next().map(|p| p.as_str().to_string());
                    let (tag, name) = (text().unwrap_or_default(), text().unwrap_or_default());
                    Member::Nested {
                        union,
                        tag,
                        name,
                        count: Some(None),
                        span,
                    }
                }
                Rule::inline => {
                    let mut it = m.into_inner();
                    let union = it.next().is_some_and(|k| k.as_str() == "union");
                    let inner = it
                        .next()
                        .map(|b| members(sources, file, b, defines, diags))
                        .unwrap_or_default();
                    let name = it.next().map(|p| p.as_str().to_string());
                    if union && name.is_none() && all_flexible(&inner) {
                        return first_flexible(inner, diags);
                    }
                    Member::Inline {
                        union,
                        members: inner,
                        name,
                        span,
                    }
                }
                _ => Member::Bad {
                    text: m.as_str().split_whitespace().collect::<Vec<_>>().join(" "),
                    span,
                },
            }
        })
        .collect()
}

/// True for a non-empty list of flexible arrays only (`struct tag name[];`).
fn all_flexible(members: &[Member]) -> bool {
    !members.is_empty()
        && members.iter().all(|m| {
            matches!(
                m,
                Member::Nested {
                    count: Some(None),
                    ..
                }
            )
        })
}

/// The first of the flexible arrays of an anonymous union: the other members are views of the
/// same trailing list with other element types, which a spec structure cannot also carry.
fn first_flexible(members: Vec<Member>, diags: &mut Diagnostics) -> Member {
    let mut it = members.into_iter();
    let first = it.next().expect("all_flexible: not empty");
    let Member::Nested { name: kept, .. } = &first else {
        unreachable!("all_flexible: nested members only")
    };
    for m in it {
        if let Member::Nested { name, span, .. } = m {
            diags.push(Diagnostic::warning(
                "import",
                span,
                format!(
                    "`{name}` is another element type for the trailing array `{kept}`: \
                     only `{kept}` is written (a structure has one trailing array)"
                ),
            ));
        }
    }
    first
}

/// The value of `[expr]`; `None` for `[]` or `[0]` (a flexible array).
fn dimension(
    sources: &SourceMap,
    file: usize,
    d: Pair<Rule>,
    defines: &expr::Defines,
    diags: &mut Diagnostics,
) -> Option<u64> {
    let span = span_of(sources, file, &d);
    let text = runs_text(d.into_inner().next()?).trim().to_string();
    match expr::evaluate(&text, defines) {
        Ok(v) => (v > 0).then_some(v),
        Err(e) => {
            diags.push(Diagnostic::error(
                "import",
                span,
                format!("array size `{}`: {e}", excerpt::excerpt(&text)),
            ));
            None
        }
    }
}

/// The text of a rule made of runs of characters with whitespace and comments skipped between
/// them (`dim_expr`, `enum_value`): from its first run to its last. The rule's own span also
/// holds the whitespace and comments pest skipped after the last run.
pub(crate) fn runs_text(p: Pair<'_, Rule>) -> &str {
    let whole = p.as_span();
    let mut runs = p.into_inner();
    let (Some(first), last) = (runs.next(), runs.last()) else {
        return whole.as_str();
    };
    let start = first.as_span().start();
    let end = last.map_or(first.as_span().end(), |l| l.as_span().end());
    let input = whole.get_input();
    input.get(start..end).unwrap_or(whole.as_str())
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (u32, u32) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line as u32, col as u32)
}

/// Parses one header already in `sources`; appends its layout definitions to `defs`. Returns
/// the quoted `#include` paths it names.
pub fn parse_header(
    sources: &SourceMap,
    file: usize,
    defs: &mut Vec<Def>,
    defines: &mut expr::Defines,
    diags: &mut Diagnostics,
) -> Vec<String> {
    parse_header_with_enums(sources, file, defs, &mut Vec::new(), defines, diags)
}

/// [`parse_header`], also collecting the header's enums into `enums`.
pub fn parse_header_with_enums(
    sources: &SourceMap,
    file: usize,
    defs: &mut Vec<Def>,
    enums: &mut Vec<enums::HeaderEnum>,
    defines: &mut expr::Defines,
    diags: &mut Diagnostics,
) -> Vec<String> {
    let text = &sources.files[file].text;
    if let Some(refusal) = precheck::check(text, precheck::MAX_DEPTH) {
        let (at, message) = match refusal {
            precheck::Refusal::TooDeep(at) => (
                at,
                format!(
                    "brackets nest deeper than {} levels here (Linux's mlx5 headers nest at most 6): the header is not read",
                    precheck::MAX_DEPTH
                ),
            ),
            precheck::Refusal::UnclosedComment(at) => (
                at,
                "this `/*` is never closed by a `*/`: the header is not read".to_string(),
            ),
        };
        let (line, col) = line_col(text, at);
        diags.push(Diagnostic::error(
            "import",
            Span::point(file, line, col),
            message,
        ));
        return Vec::new();
    }
    let parsed = match budget::within(text, |t| HeaderParser::parse(Rule::file, t)) {
        Ok(mut p) => p.next().expect("grammar: file"),
        Err(e) => {
            diags.push(budget::parse_error(&e, file, text.len()));
            return Vec::new();
        }
    };
    let mut includes = Vec::new();
    for item in parsed.into_inner() {
        match item.as_rule() {
            Rule::preproc => {
                expr::record_define(item.as_str(), defines);
                let t = item.as_str().trim_start_matches('#').trim_start();
                if let Some(rest) = t.strip_prefix("include") {
                    let rest = rest.trim();
                    if let Some(path) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) {
                        if read::followed(path) {
                            includes.push(path.to_string());
                        } else {
                            diags.push(Diagnostic::warning(
                                "import",
                                span_of(sources, file, &item),
                                format!(
                                    "`#include \"{path}\"` leaves this header's directory: not followed"
                                ),
                            ));
                        }
                    }
                }
            }
            Rule::enum_def => enums.push(enums::read(item, defines)),
            Rule::layout => {
                let span = span_of(sources, file, &item);
                let mut it = item.into_inner();
                let union = it.next().is_some_and(|k| k.as_str() == "union");
                let tag = it
                    .next()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default();
                // Only `mlx5_ifc_*` tags are layouts; other structures are the driver's own C,
                // not read at all (their array sizes use macros such as `MLX5_ST_SZ_BYTES`,
                // which reading would report as errors).
                let Some(b) = it.next().filter(|_| tag.starts_with("mlx5_ifc_")) else {
                    continue;
                };
                let mut found = Diagnostics::default();
                let body = members(sources, file, b, defines, &mut found);
                if unread::has_bad(&body) {
                    // A `_bits` structure must be a layout: say what could not be read. Other
                    // `mlx5_ifc_*` structures with C members are helpers, skipped quietly.
                    if tag.ends_with("_bits") {
                        found.iter().for_each(|d| diags.push(d.clone()));
                        unread::report_bad(&body, &tag, diags);
                    }
                    continue;
                }
                found.iter().for_each(|d| diags.push(d.clone()));
                defs.push(Def {
                    union,
                    name: spec_name(&tag),
                    tag,
                    members: body,
                    span,
                });
            }
            Rule::other => {
                let at = item.as_span().start();
                if let Some(d) = unread::report(item.as_str(), file, at, |b| line_col(text, b)) {
                    diags.push(d);
                }
            }
            _ => {}
        }
    }
    includes
}

/// The result of importing headers.
#[derive(Debug, Default)]
pub struct Import {
    /// The headers read (for rendering diagnostics).
    pub sources: SourceMap,
    /// Problems: errors for what could not be read, warnings for layouts written in another
    /// form than the header's.
    pub diagnostics: Diagnostics,
    /// One spec file per header: `(file name, YAML text)`.
    pub files: Vec<(String, String)>,
    /// Number of structures and unions written.
    pub layouts: usize,
    /// Number of fields written.
    pub fields: usize,
    /// The headers' enums, in the order read (not written to the spec files).
    pub enums: Vec<enums::HeaderEnum>,
    /// Commands written: opcode constants paired with their `_in` and `_out` layouts.
    pub commands: usize,
    /// The header's enums written as spec enums.
    pub spec_enums: usize,
}

/// Imports `headers` and the headers they `#include "..."` (found next to the includer).
pub fn import(headers: &[PathBuf]) -> std::io::Result<Import> {
    let mut out = Import::default();
    let mut defs = Vec::new();
    let mut defines = expr::Defines::new();
    let mut queue: Vec<PathBuf> = headers.to_vec();
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(path) = queue.pop() {
        let canon = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&canon) {
            continue;
        }
        if seen.len() == read::MAX_HEADERS {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{}: one header more than the {} an import may read (includes counted)",
                    path.display(),
                    read::MAX_HEADERS
                ),
            ));
        }
        seen.push(canon);
        let text = read::read_header(&path)?;
        let file = out.sources.add(&path, text);
        let includes = parse_header_with_enums(
            &out.sources,
            file,
            &mut defs,
            &mut out.enums,
            &mut defines,
            &mut out.diagnostics,
        );
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for inc in includes {
            let p = dir.join(&inc);
            if p.exists() {
                queue.push(p);
            }
        }
    }
    let emitted = emit::emit(&out.sources, &defs, &mut out.diagnostics);
    out.layouts = emitted.layouts;
    out.fields = emitted.fields;
    out.files = emitted.files;
    add_commands(&mut out);
    Ok(out)
}

/// Adds what the headers' enums give a spec: the enums themselves, and the commands that pair
/// an opcode constant with its mailbox layouts; written into the first file (the header named
/// first). Each is kept only when the result still checks clean, so an import never gains an
/// error from them.
fn add_commands(out: &mut Import) {
    if out.diagnostics.error_count() > 0 || out.files.is_empty() {
        return;
    }
    let compile = |files: &[(String, String)]| {
        crate::compile_sources(
            files
                .iter()
                .map(|(n, t)| (PathBuf::from(n), t.clone()))
                .collect(),
        )
    };
    let c = compile(&out.files);
    if !c.is_ok() {
        return;
    }
    let taken: std::collections::HashSet<String> =
        c.ir.structs
            .iter()
            .map(|s| s.name.clone())
            .chain(c.ir.unions.iter().map(|u| u.name.clone()))
            .collect();
    let enums = enum_spec::spec_enums(&out.enums, &taken);
    if !enums.is_empty() {
        let mut with = out.files.clone();
        if let Some((_, text)) = with.first_mut() {
            text.push_str(&enum_spec::section(&enums));
        }
        if compile(&with).is_ok() {
            out.spec_enums = enums.len();
            out.files = with;
        } else {
            let span = crate::source::Span::default();
            out.diagnostics.push(crate::diag::Diagnostic::warning(
                "import-enums",
                span,
                "the headers' enums would not check as spec enums: left out",
            ));
        }
    }
    let pairs = commands::pairs(&out.enums, &c.ir);
    if pairs.is_empty() {
        return;
    }
    out.commands = pairs.len();
    if let Some((_, text)) = out.files.first_mut() {
        text.push_str(&commands::section(&pairs));
    }
}

/// Imports headers given as `(path, text)`, without following `#include`s (for tests and
/// fuzzing).
pub fn import_sources(files: Vec<(PathBuf, String)>) -> Import {
    let mut out = Import::default();
    let mut defs = Vec::new();
    let mut defines = expr::Defines::new();
    for (path, text) in files {
        let file = out.sources.add(&path, text);
        parse_header_with_enums(
            &out.sources,
            file,
            &mut defs,
            &mut out.enums,
            &mut defines,
            &mut out.diagnostics,
        );
    }
    let emitted = emit::emit(&out.sources, &defs, &mut out.diagnostics);
    out.layouts = emitted.layouts;
    out.fields = emitted.fields;
    out.files = emitted.files;
    add_commands(&mut out);
    out
}

/// The spec text of one imported layout, `name`, as a file of its own (`structs:` or
/// `unions:` and the layout's block, as the importer writes it): a start for adding a layout
/// of the header to a spec (`prmc import --only NAME`). `None` when no imported file has it.
pub fn only(imp: &Import, name: &str) -> Option<String> {
    let key = format!("  {name}:");
    for (_, text) in &imp.files {
        let mut section = None;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with(' ') && line.ends_with(':') {
                section = Some(*line);
            }
            if *line != key {
                continue;
            }
            let end = lines[i + 1..]
                .iter()
                .position(|l| !l.trim().is_empty() && !l.starts_with("   "))
                .map_or(lines.len(), |n| i + 1 + n);
            let mut out = format!("{}\n", section.unwrap_or("structs:"));
            for l in &lines[i..end] {
                out.push_str(l);
                out.push('\n');
            }
            return Some(out);
        }
    }
    None
}
