//! Reading spec files: YAML with a position on every node, then the spec's shape.
//!
//! YAML is parsed by `marked-yaml`, which keeps the line and column of every node (serde_yaml
//! has no API for positions and is no longer maintained). The shape is then read by hand
//! rather than by `#[derive(Deserialize)]` so that one bad entry does not hide the rest: each
//! problem becomes a diagnostic and reading goes on with the next entry.

use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{SourceMap, Span};
use crate::syntax::*;
use marked_yaml::types::{MarkedMappingNode, MarkedScalarNode};
use marked_yaml::{LoadError, LoaderOptions, Node};
use std::path::{Path, PathBuf};

mod access_registers;
mod commands;
mod layouts;
pub mod limits;
mod machines;
pub mod prescan;
mod unions;
pub mod walk;
mod words;

/// Spec files found under a directory: every `*.yaml` / `*.yml`, recursively, sorted; each
/// real file once (see [`walk`]). Problems of the walk are left out: use [`walk::read_specs`]
/// to have them.
pub fn spec_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    walk::spec_paths(dir).map(|(paths, _)| paths)
}

/// Parses one file's text. Problems go to `diags`; whatever could be read is returned.
pub fn parse_file(sources: &SourceMap, file: usize, diags: &mut Diagnostics) -> SpecFile {
    let mut spec = SpecFile {
        file,
        ..SpecFile::default()
    };
    let Some(text) = prescan::prescan(sources, file, diags) else {
        return spec;
    };
    let text = text.as_ref();
    if text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || t == "---"
    }) {
        return spec;
    }
    let options = LoaderOptions::default().error_on_duplicate_keys(true);
    let root = match marked_yaml::parse_yaml_with_options(file, text, options) {
        Ok(n) => n,
        Err(e) => {
            diags.push(load_error(sources, file, e));
            return spec;
        }
    };
    let mut r = Reader {
        sources,
        file,
        diags,
    };
    r.file(&root, &mut spec);
    spec
}

/// What is wrong with a line's indentation.
enum Indent {
    /// It lines up with none of its block's other keys (the span: the block's key).
    Misaligned,
    /// It is indented under a key whose value is already on that key's line (the span: that
    /// key).
    UnderValue,
}

/// When the YAML error on 1-based `line` is one of indentation: what kind, and the span of
/// the key it concerns (the nearest line above with less indentation).
fn indentation(sources: &SourceMap, file: usize, line: u32) -> Option<(Span, Indent)> {
    let text = &sources.files.get(file)?.text;
    let lines: Vec<&str> = text.lines().collect();
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let meaningful = |l: &&str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
    // The error may point at the line after the misplaced one: take the nearest meaningful
    // line at or above it whose indentation no sibling shares.
    let bad = (0..=at.min(lines.len().checked_sub(1)?))
        .rev()
        .find(|&i| meaningful(&lines[i]))?;
    let own = indent(lines[bad]);
    let parent = (0..bad)
        .rev()
        .find(|&i| meaningful(&lines[i]) && indent(lines[i]) < own)?;
    let p = lines[parent];
    let span = Span {
        file,
        line: u32::try_from(parent + 1).ok()?,
        col: u32::try_from(indent(p) + 1).ok()?,
        len: u32::try_from(p.trim().len()).ok()?,
    };
    if !p.trim_end().ends_with(':') {
        // A key with its value on its line cannot open a block.
        return (parent + 1 == bad).then_some((span, Indent::UnderValue));
    }
    let child_indent = (parent + 1..bad)
        .map(|i| lines[i])
        .find(meaningful)
        .map(indent)?;
    (child_indent != own).then_some((span, Indent::Misaligned))
}

fn load_error(sources: &SourceMap, file: usize, e: LoadError) -> Diagnostic {
    let r = Reader::span_at(sources, file, None);
    match e {
        LoadError::DuplicateKey(inner) => {
            let first = Reader::span_at(sources, file, inner.prev_key.span().start().copied());
            let second = Reader::span_at(sources, file, inner.key.span().start().copied());
            Diagnostic::error(
                "duplicate-key",
                second,
                format!(
                    "`{}` is defined twice in the same mapping",
                    inner.key.as_str()
                ),
            )
            .with_note(first, "first defined here")
            .with_hint("rename one of them; the rest of this file is not checked until then")
        }
        LoadError::ScanError(m, se) => {
            let span = Reader::span_at(sources, file, Some(m));
            let d = Diagnostic::error("yaml", span, format!("YAML syntax error: {}", se.info()));
            match indentation(sources, file, span.line) {
                Some((block, Indent::Misaligned)) => Diagnostic::error(
                    "yaml-indentation",
                    span,
                    format!(
                        "indentation: this line does not line up with the block it is in \
                         (YAML: {})",
                        se.info()
                    ),
                )
                .with_note(block, "the enclosing block starts here")
                .with_hint("indent the line like the other keys of that block"),
                Some((key, Indent::UnderValue)) => Diagnostic::error(
                    "yaml-indentation",
                    span,
                    format!(
                        "indentation: this line is indented under a key that already has a \
                         value (YAML: {})",
                        se.info()
                    ),
                )
                .with_note(key, "this key's value ends on its line")
                .with_hint("line the key up with the key above, or give that key no value"),
                None => d,
            }
        }
        LoadError::TopLevelMustBeMapping(m) => Diagnostic::error(
            "yaml",
            Reader::span_at(sources, file, Some(m)),
            "a spec file must be a mapping with keys such as `structs:` and `enums:`",
        ),
        LoadError::UnexpectedAnchor(m) => Diagnostic::error(
            "yaml",
            Reader::span_at(sources, file, Some(m)),
            "YAML anchors and aliases are not supported in specs",
        )
        .with_hint("write the value out; shared layouts belong in their own struct"),
        LoadError::UnexpectedTag(m) => Diagnostic::error(
            "yaml",
            Reader::span_at(sources, file, Some(m)),
            "YAML tags (`!name`) are not supported in specs",
        ),
        LoadError::MappingKeyMustBeScalar(m) => Diagnostic::error(
            "yaml",
            Reader::span_at(sources, file, Some(m)),
            "mapping keys must be plain names",
        ),
        other => Diagnostic::error("yaml", r, format!("YAML error: {other}")),
    }
}

/// Walks the node tree of one file.
struct Reader<'a> {
    sources: &'a SourceMap,
    file: usize,
    diags: &'a mut Diagnostics,
}

/// Keys allowed in each kind of mapping.
const FILE_KEYS: &[&str] = &[
    "doc",
    "constants",
    "enums",
    "structs",
    "registers",
    "unions",
    "commands",
    "access_registers",
    "state_machines",
];

impl<'a> Reader<'a> {
    /// Converts a marker into a span, measuring the token under it for the caret.
    fn span_at(sources: &SourceMap, file: usize, m: Option<marked_yaml::Marker>) -> Span {
        let Some(m) = m else {
            return Span {
                file,
                line: 1,
                col: 1,
                len: 1,
            };
        };
        let line = m.line() as u32;
        let col = m.column().max(1) as u32;
        let len = sources
            .files
            .get(file)
            .and_then(|f| f.line(line))
            .map(|l| token_len(l, col as usize))
            .unwrap_or(1);
        Span {
            file,
            line,
            col,
            len,
        }
    }

    fn span(&self, s: &marked_yaml::Span) -> Span {
        Self::span_at(self.sources, self.file, s.start().copied())
    }

    fn node_span(&self, n: &Node) -> Span {
        self.span(n.span())
    }

    fn err(&mut self, code: &'static str, span: Span, msg: impl Into<String>, path: &str) {
        self.diags
            .push(Diagnostic::error(code, span, msg).with_path(path));
    }

    fn mapping<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        path: &str,
    ) -> Option<&'n MarkedMappingNode> {
        match node {
            Node::Mapping(m) => Some(m),
            Node::Scalar(s) if s.as_str().is_empty() => None,
            _ => {
                let span = self.node_span(node);
                self.err(
                    "shape",
                    span,
                    format!(
                        "{what} must be a mapping (`key: value` lines), found {}",
                        kind(node)
                    ),
                    path,
                );
                None
            }
        }
    }

    fn scalar<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        path: &str,
    ) -> Option<&'n MarkedScalarNode> {
        match node {
            Node::Scalar(s) => Some(s),
            _ => {
                let span = self.node_span(node);
                self.err(
                    "shape",
                    span,
                    format!("{what} must be a single value, found {}", kind(node)),
                    path,
                );
                None
            }
        }
    }

    fn string(&mut self, node: &Node, what: &str, path: &str) -> Option<Spanned<String>> {
        let s = self.scalar(node, what, path)?;
        Some(Spanned {
            value: s.as_str().to_string(),
            span: self.span(s.span()),
        })
    }

    fn uint(&mut self, node: &Node, what: &str, path: &str) -> Option<Spanned<u64>> {
        let s = self.scalar(node, what, path)?;
        let span = self.span(s.span());
        match crate::num::parse_uint(s.as_str()) {
            Ok(v) => Some(Spanned { value: v, span }),
            Err(m) => {
                self.err("number", span, format!("{what}: {m}"), path);
                None
            }
        }
    }

    /// A size in bytes, bounded by [`crate::position::MAX_BYTES`].
    fn size(&mut self, node: &Node, path: &str) -> Option<Spanned<u64>> {
        let v = self.uint(node, "size", path)?;
        if v.value > crate::position::MAX_BYTES {
            self.err(
                "number",
                v.span,
                format!(
                    "size 0x{:x} is beyond the 16 MiB a layout may span",
                    v.value
                ),
                path,
            );
            return None;
        }
        Some(v)
    }

    fn doc(&mut self, node: Option<&Node>, path: &str) -> Option<String> {
        let n = node?;
        self.scalar(n, "`doc`", path)
            .map(|s| s.as_str().trim().to_string())
    }

    fn name(&self, key: &MarkedScalarNode) -> Spanned<String> {
        Spanned {
            value: key.as_str().to_string(),
            span: self.span(key.span()),
        }
    }

    /// Reports keys outside `allowed`, suggesting the nearest allowed one.
    fn check_keys(&mut self, map: &MarkedMappingNode, allowed: &[&str], what: &str, path: &str) {
        for key in map.keys() {
            let k = key.as_str();
            if allowed.contains(&k) {
                continue;
            }
            let span = self.span(key.span());
            let mut d =
                Diagnostic::error("unknown-key", span, format!("unknown key `{k}` in {what}"))
                    .with_path(format!("{path}.{k}"));
            d = match suggest(k, allowed) {
                _ if k == "fields" && what == "a union" => {
                    d.with_hint("this looks like a structure: structures go under `structs:`")
                }
                Some(s) => d.with_hint(format!("did you mean `{s}`?")),
                None if k.contains(' ') => d.with_hint(
                    "this looks like text cut at a comma: inside `{ ... }` a comma starts a new key, so quote text that contains commas",
                ),
                None => d.with_hint(format!("allowed keys: {}", allowed.join(", "))),
            };
            self.diags.push(d);
        }
    }

    /// A required key: reports its absence at `owner`.
    fn required<'n>(
        &mut self,
        map: &'n MarkedMappingNode,
        key: &str,
        owner: Span,
        what: &str,
        path: &str,
    ) -> Option<&'n Node> {
        let n = map.get_node(key);
        if n.is_none() {
            self.err("missing-key", owner, format!("{what} has no `{key}`"), path);
        }
        n
    }

    fn file(&mut self, root: &Node, spec: &mut SpecFile) {
        let Some(top) = self.mapping(root, "a spec file", "") else {
            return;
        };
        self.check_keys(top, FILE_KEYS, "a spec file", "");
        spec.doc = self.doc(top.get_node("doc"), "doc");
        self.section(top, "constants", |r, name, node, path| {
            if let Some(c) = r.constant(name, node, path) {
                spec.constants.push(c);
            }
        });
        let mut enums = Vec::new();
        self.section(top, "enums", |r, name, node, path| {
            if let Some(e) = r.enumeration(name, node, path) {
                enums.push(e);
            }
        });
        spec.enums = enums;
        let mut structs = Vec::new();
        for (section, register_block) in [("structs", false), ("registers", true)] {
            self.section(top, section, |r, name, node, path| {
                if let Some(s) = r.structure(name, node, path, register_block) {
                    structs.push(s);
                }
            });
        }
        spec.structs = structs;
        let mut unions = Vec::new();
        self.section(top, "unions", |r, name, node, path| {
            if let Some(u) = r.union(name, node, path) {
                unions.push(u);
            }
        });
        spec.unions = unions;
        let mut commands = Vec::new();
        self.section(top, "commands", |r, name, node, path| {
            if let Some(c) = r.command(name, node, path) {
                commands.push(c);
            }
        });
        spec.commands = commands;
        let mut registers = Vec::new();
        self.section(top, "access_registers", |r, name, node, path| {
            if let Some(a) = r.access_register(name, node, path) {
                registers.push(a);
            }
        });
        spec.access_registers = registers;
        let mut machines = Vec::new();
        self.section(top, "state_machines", |r, name, node, path| {
            if let Some(m) = r.state_machine(name, node, path) {
                machines.push(m);
            }
        });
        spec.state_machines = machines;
    }

    /// A list of names (`[a, b]`), or one name.
    fn names(&mut self, node: &Node, what: &str, path: &str) -> Vec<Spanned<String>> {
        match node {
            Node::Sequence(seq) => seq
                .iter()
                .enumerate()
                .filter_map(|(i, n)| self.string(n, what, &format!("{path}[{i}]")))
                .collect(),
            _ => self.string(node, what, path).into_iter().collect(),
        }
    }

    fn section(
        &mut self,
        top: &MarkedMappingNode,
        key: &str,
        mut each: impl FnMut(&mut Self, Spanned<String>, &Node, String),
    ) {
        let Some(node) = top.get_node(key) else {
            return;
        };
        let Some(map) = self.mapping(node, &format!("`{key}`"), key) else {
            return;
        };
        for (k, v) in map.iter() {
            let name = self.name(k);
            let path = format!("{key}.{}", name.value);
            each(self, name, v, path);
        }
    }
}

fn kind(n: &Node) -> &'static str {
    match n {
        Node::Scalar(_) => "a single value",
        Node::Mapping(_) => "a mapping",
        Node::Sequence(_) => "a list",
    }
}

/// The closest allowed word, if it is close enough to be a likely typo.
pub fn suggest<'s>(word: &str, allowed: &[&'s str]) -> Option<&'s str> {
    allowed
        .iter()
        .map(|a| (strsim::levenshtein(word, a), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 3))
        .min()
        .map(|(_, a)| a)
}

/// Columns past which a token is not measured (its caret is one character), and the most
/// characters measured: a hostile file's very long line would otherwise cost its whole length
/// for each of its many spans. Real spec lines are under 300 characters.
const MEASURED_COLUMNS: usize = 4096;

/// Length of the YAML token starting at 1-based `col` of `line`: a quoted string through its
/// closing quote, otherwise up to a flow delimiter, a comment or the end of the line.
fn token_len(line: &str, col: usize) -> u32 {
    if col > MEASURED_COLUMNS {
        return 1;
    }
    let chars: Vec<char> = line
        .chars()
        .skip(col.saturating_sub(1))
        .take(MEASURED_COLUMNS)
        .collect();
    let Some(&first) = chars.first() else {
        return 1;
    };
    if first == '"' || first == '\'' {
        let close = chars[1..].iter().position(|&c| c == first);
        return close.map(|i| i as u32 + 2).unwrap_or(chars.len() as u32);
    }
    let mut n = 0;
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, ',' | '}' | ']') || (c == '#' && i > 0 && chars[i - 1] == ' ') {
            break;
        }
        if c == ':' && chars.get(i + 1).is_none_or(|n| *n == ' ') {
            break;
        }
        n = i + 1;
    }
    let token: String = chars[..n].iter().collect();
    token.trim_end().chars().count().max(1) as u32
}
