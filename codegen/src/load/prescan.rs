//! A linear scan of a spec file's text before the YAML parser sees it.
//!
//! Two things must be settled before parsing. Control bytes: the YAML scanner stops at a NUL
//! as if the file ended there, so whatever follows would never be checked; each control byte
//! is reported at its line and column and replaced by a space (same column) for the parser,
//! so the rest of the file is still read. Nesting depth: the YAML loader builds its tree
//! recursively, one stack frame per level, and a deep enough file overflows the stack, which
//! aborts the process; the depth is estimated here without recursion and a file deeper than
//! [`MAX_DEPTH`] is not parsed.
//!
//! The estimate counts, at each point, the block collections open (one per indentation level
//! and per compact `- ` / `? ` indicator on a line) plus the open flow brackets. A list written
//! at its key's indentation (`key:` then `- a`) shares the key's level, so the YAML depth is
//! at most twice the estimate plus the flow depth; quoted strings, comments and block scalars
//! (`|`, `>`) are skipped, so brackets in text do not count.

use super::limits::{MAX_CONTROL_REPORTS, MAX_DEPTH};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::{SourceMap, Span};
use std::borrow::Cow;

/// A control character YAML does not allow: C0 controls other than tab, LF and CR, and DEL.
fn is_control(c: char) -> bool {
    (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{7f}'
}

/// Checks file `file`'s text. Returns the text the YAML parser should read (control bytes
/// replaced by spaces), or `None` when the file must not be parsed (too deeply nested).
pub fn prescan<'s>(
    sources: &'s SourceMap,
    file: usize,
    diags: &mut Diagnostics,
) -> Option<Cow<'s, str>> {
    let text = sources.files.get(file)?.text.as_str();
    let text = control_bytes(text, file, diags);
    if let Some((line, col, depth)) = too_deep(&text) {
        let span = Span {
            file,
            line,
            col,
            len: 1,
        };
        diags.push(
            Diagnostic::error(
                "nesting-depth",
                span,
                format!(
                    "this value is nested {depth} levels deep, more than the {MAX_DEPTH} a spec \
                     may nest; the file is not checked"
                ),
            )
            .with_hint(
                "a spec needs a handful of levels (section, item, fields, field); move inner \
                 layouts to structures of their own and refer to them by name",
            ),
        );
        return None;
    }
    Some(text)
}

/// True if the carriage return at byte `at` of `text` is a line break of its own: not the
/// first half of CRLF. YAML ends a line there as at a line feed, but the spec's line numbers,
/// and this scan, count line feeds only, so such a CR is reported and read as a space like a
/// control byte. (Let through, the parser saw lines this scan never looked at: `key:` CR
/// `- - - …` nested lists past the depth limit and overflowed the stack, a fuzzer found.)
fn lone_cr(text: &[u8], at: usize) -> bool {
    text[at] == b'\r' && text.get(at + 1) != Some(&b'\n')
}

/// Reports each control byte (and each lone CR) and returns the text with them replaced by
/// spaces.
fn control_bytes<'s>(text: &'s str, file: usize, diags: &mut Diagnostics) -> Cow<'s, str> {
    // Control characters are ASCII, and every byte of a character beyond ASCII is above it.
    // A table, not comparisons: this looks at every byte of every file (and a fuzzer traces
    // each comparison). CR is not in the table: the CRs are found with `memchr` (through
    // `match_indices`) and each is looked at where it stands.
    let bytes = text.as_bytes();
    if !bytes.iter().any(|&b| CONTROL[usize::from(b)])
        && !text.match_indices('\r').any(|(i, _)| lone_cr(bytes, i))
    {
        return Cow::Borrowed(text);
    }
    let mut reported = 0usize;
    let mut more: Option<(Span, usize)> = None;
    let mut line_start = 0;
    for (i, line) in text.split('\n').enumerate() {
        let start = line_start;
        line_start += line.len() + 1;
        let bad =
            |&(at, c): &(usize, char)| is_control(c) || (c == '\r' && lone_cr(bytes, start + at));
        for (j, (_, c)) in line.char_indices().enumerate().filter(|(_, ac)| bad(ac)) {
            let span = Span {
                file,
                line: u32::try_from(i + 1).unwrap_or(u32::MAX),
                col: u32::try_from(j + 1).unwrap_or(u32::MAX),
                len: 1,
            };
            if reported < MAX_CONTROL_REPORTS {
                reported += 1;
                diags.push(
                    Diagnostic::error(
                        "control-byte",
                        span,
                        format!(
                            "control byte 0x{:02x} ({}): spec files are text; it is read as a \
                             space",
                            u32::from(c),
                            control_name(c)
                        ),
                    )
                    .with_hint(if c == '\r' {
                        "end lines with LF or CR LF (an editor may show a lone CR as `^M`)"
                    } else {
                        "delete it (an editor may show it as `^@` or `\\0`)"
                    }),
                );
            } else {
                let m = more.get_or_insert((span, 0));
                m.1 += 1;
            }
        }
    }
    if let Some((span, n)) = more {
        diags.push(Diagnostic::error(
            "control-byte",
            span,
            format!(
                "{n} more control byte{} from here on (the first {MAX_CONTROL_REPORTS} are \
                 reported one by one); is this a text file?",
                if n == 1 { "" } else { "s" }
            ),
        ));
    }
    Cow::Owned(
        text.char_indices()
            .map(|(at, c)| {
                if is_control(c) || (c == '\r' && lone_cr(bytes, at)) {
                    ' '
                } else {
                    c
                }
            })
            .collect(),
    )
}

/// [`is_control`] by byte value.
static CONTROL: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b < 0x20 && b != 0x09 && b != 0x0a && b != 0x0d) || b == 0x7f;
        b += 1;
    }
    t
};

fn control_name(c: char) -> &'static str {
    match c {
        '\0' => "NUL",
        '\u{7f}' => "DEL",
        '\u{1b}' => "ESC",
        '\u{0c}' => "form feed",
        '\u{0b}' => "vertical tab",
        '\r' => "a carriage return without a line feed",
        _ => "a C0 control",
    }
}

/// What the scan is inside of across lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Block context: indentation opens and closes levels.
    Block,
    /// Inside a quoted string (`'` or `"`) that goes on past its line.
    Quote(u8, Ctx),
    /// Inside a block scalar (`|`, `>`) whose lines are indented more than this column.
    Literal(usize),
}

/// Where a quoted string was opened.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Block,
    Flow,
}

/// The first place the depth estimate exceeds [`MAX_DEPTH`]: 1-based line and column, and the
/// depth there.
fn too_deep(text: &str) -> Option<(u32, u32, usize)> {
    // Columns of the open block levels, strictly increasing.
    let mut levels: Vec<usize> = Vec::new();
    let mut flow = Flow::default();
    let mut mode = Mode::Block;
    // The scan looks only at ASCII characters, one byte per character so that positions are
    // columns: an ASCII line is its own bytes; elsewhere every other character is
    // [`OTHER`], in a buffer kept for all lines. Decoding every line into a vector of `char`
    // was most of the time a fuzzed file took to check.
    let mut mapped: Vec<u8> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.trim_end_matches('\r');
        let line = if raw.is_ascii() {
            raw.as_bytes()
        } else {
            mapped.clear();
            mapped.extend(
                raw.chars()
                    .map(|c| u8::try_from(c).ok().filter(u8::is_ascii).unwrap_or(OTHER)),
            );
            mapped.as_slice()
        };
        let at = |col: usize, depth: usize| {
            Some((
                u32::try_from(i + 1).unwrap_or(u32::MAX),
                u32::try_from(col + 1).unwrap_or(u32::MAX),
                depth,
            ))
        };
        let indent = line.iter().take_while(|c| **c == b' ').count();
        let blank = line[indent..]
            .iter()
            .all(|c| c.is_ascii_whitespace() || *c == 0x0b);
        let mut pos = 0;
        match mode {
            Mode::Literal(col) => {
                if blank || indent > col {
                    continue;
                }
                mode = Mode::Block;
            }
            Mode::Quote(q, ctx) => match close_quote(line, 0, q) {
                Some(end) => {
                    pos = end;
                    mode = Mode::Block;
                    if ctx == Ctx::Block {
                        continue;
                    }
                }
                None => continue,
            },
            Mode::Block => {}
        }
        if flow.depth > 0 {
            match scan_flow(line, pos, &mut flow, levels.len(), &mut mode) {
                Err(col) => return at(col, levels.len() + flow.depth),
                Ok(()) => continue,
            }
        }
        if blank || line[indent] == b'#' {
            continue;
        }
        pos = indent;
        if indent == 0
            && (starts(line, 0, "---") || starts(line, 0, "..."))
            && line.get(3).is_none_or(|c| is_blank(*c))
        {
            // A document marker: a new document starts, maybe with its content on this line.
            levels.clear();
            pos = 3;
            while line.get(pos).is_some_and(|c| is_blank(*c)) {
                pos += 1;
            }
            if pos >= line.len() || line[pos] == b'#' {
                continue;
            }
        }
        while levels.last().is_some_and(|&c| c >= pos) {
            levels.pop();
        }
        levels.push(pos);
        loop {
            if levels.len() > MAX_DEPTH {
                return at(pos, levels.len());
            }
            // Tabs are no indentation, but the YAML scanner skips them before an indicator.
            while line.get(pos).is_some_and(|c| is_blank(*c)) {
                pos += 1;
            }
            // Compact indicators open a collection whose content starts two columns on.
            if matches!(line.get(pos), Some(b'-' | b'?' | b':'))
                && line.get(pos + 1).is_none_or(|c| is_blank(*c))
            {
                pos += 1;
                while line.get(pos).is_some_and(|c| is_blank(*c)) {
                    pos += 1;
                }
                if pos >= line.len() {
                    break;
                }
                levels.push(pos);
                continue;
            }
            pos = skip_properties(line, pos);
            // A key on this line: its value follows `: `.
            let value = match line.get(pos) {
                Some(&q @ (b'"' | b'\'')) => match close_quote(line, pos + 1, q) {
                    Some(end) => match key_end(line, end) {
                        Some(v) => v,
                        None => break,
                    },
                    None => {
                        mode = Mode::Quote(q, Ctx::Block);
                        break;
                    }
                },
                Some(b'[' | b'{') => pos,
                _ => match key_end(line, pos) {
                    Some(v) => v,
                    None => break,
                },
            };
            let key_col = pos;
            pos = skip_properties(line, value);
            match line.get(pos) {
                Some(b'[' | b'{') => {
                    if let Err(col) = scan_flow(line, pos, &mut flow, levels.len(), &mut mode) {
                        return at(col, levels.len() + flow.depth);
                    }
                    break;
                }
                Some(b'|' | b'>') => {
                    mode = Mode::Literal(key_col);
                    break;
                }
                Some(&q @ (b'"' | b'\'')) => {
                    if close_quote(line, pos + 1, q).is_none() {
                        mode = Mode::Quote(q, Ctx::Block);
                    }
                    break;
                }
                _ => break,
            }
        }
    }
    None
}

/// What a character other than ASCII becomes for the scan: no character it looks for.
const OTHER: u8 = 0x80;

/// A YAML separator inside a line (indentation itself is spaces only).
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn starts(line: &[u8], pos: usize, s: &str) -> bool {
    line.get(pos..pos + s.len()) == Some(s.as_bytes())
}

/// Skips spaces, then anchors (`&a`) and tags (`!t`) with the spaces after them.
fn skip_properties(line: &[u8], mut pos: usize) -> usize {
    loop {
        while line.get(pos).is_some_and(|c| is_blank(*c)) {
            pos += 1;
        }
        if matches!(line.get(pos), Some(b'&' | b'!')) {
            while line.get(pos).is_some_and(|c| !is_blank(*c)) {
                pos += 1;
            }
        } else {
            return pos;
        }
    }
}

/// The column after a quoted string opened before `from` with quote `q`, if it closes on
/// this line (`''` inside single quotes and `\"` inside double quotes do not close it).
fn close_quote(line: &[u8], from: usize, q: u8) -> Option<usize> {
    let mut i = from;
    while i < line.len() {
        let c = line[i];
        if q == b'"' && c == b'\\' {
            i += 2;
            continue;
        }
        if c == q {
            if q == b'\'' && line.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// When a plain key starts at `pos` (a `:` followed by a space or the end of the line comes
/// before any comment): the column just after that `:`.
fn key_end(line: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos;
    while i < line.len() {
        match line[i] {
            b'#' if i > 0 && is_blank(line[i - 1]) => return None,
            b':' if line.get(i + 1).is_none_or(|c| is_blank(*c)) => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the scan is in flow content, kept across lines.
#[derive(Default)]
struct Flow {
    /// Open brackets.
    depth: usize,
    /// Whether the next character starts a node (after `[`, `{`, `,` or `: `): only there
    /// does a quote open a quoted string; elsewhere it is part of a plain scalar (`it's`), and
    /// taking it for a quote would hide what follows from the scan.
    node_start: bool,
}

/// Scans flow content from `pos`, keeping `flow` and `mode` (an unclosed quote) across lines.
/// Stops at the end of the line or where the outermost bracket closes. `Err(column)` where
/// the depth first exceeds the limit.
fn scan_flow(
    line: &[u8],
    mut pos: usize,
    flow: &mut Flow,
    block: usize,
    mode: &mut Mode,
) -> Result<(), usize> {
    while pos < line.len() {
        let c = line[pos];
        match c {
            b'"' | b'\'' if flow.node_start => match close_quote(line, pos + 1, c) {
                Some(end) => {
                    flow.node_start = false;
                    pos = end;
                    continue;
                }
                None => {
                    *mode = Mode::Quote(c, Ctx::Flow);
                    flow.node_start = false;
                    return Ok(());
                }
            },
            b'#' if pos == 0 || is_blank(line[pos - 1]) => return Ok(()),
            b'[' | b'{' => {
                flow.depth += 1;
                flow.node_start = true;
                if block + flow.depth > MAX_DEPTH {
                    return Err(pos);
                }
            }
            b']' | b'}' => {
                flow.depth = flow.depth.saturating_sub(1);
                flow.node_start = false;
                if flow.depth == 0 {
                    return Ok(());
                }
            }
            b',' => flow.node_start = true,
            b':' | b'?' if line.get(pos + 1).is_none_or(|c| is_blank(*c)) => flow.node_start = true,
            c if is_blank(c) => {}
            _ => flow.node_start = false,
        }
        pos += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_error(text: &str) -> Option<(u32, u32, usize)> {
        too_deep(text)
    }

    #[test]
    fn the_control_table_is_is_control() {
        for b in 0..=255u8 {
            assert_eq!(
                CONTROL[usize::from(b)],
                is_control(char::from(b)),
                "{b:#04x}"
            );
        }
    }

    #[test]
    fn real_shapes_pass() {
        let spec = "structs:\n  a:\n    size: 0x10\n    fields:\n      x: { at: \"0x00[31:0]\", \
                    doc: 'a [b' }\n      y:\n        at: 0x04\n        doc: |\n          [[[[\n";
        assert_eq!(depth_error(spec), None);
    }

    #[test]
    fn deep_blocks_flows_and_compact_lists_are_caught() {
        let block: String = (0..=MAX_DEPTH)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert!(matches!(depth_error(&block), Some((l, _, _)) if l as usize == MAX_DEPTH + 1));
        let flow = format!("a: {}", "[".repeat(MAX_DEPTH + 1));
        assert!(depth_error(&flow).is_some());
        let compact = format!("a:\n  {}x\n", "- ".repeat(MAX_DEPTH + 1));
        assert!(depth_error(&compact).is_some());
        let marker = format!("--- {}x\n", "- ".repeat(MAX_DEPTH + 1));
        assert!(depth_error(&marker).is_some());
        let tabs = format!("a:\n  {}x\n", "-\t".repeat(MAX_DEPTH + 1));
        assert!(depth_error(&tabs).is_some());
        let keys = format!("a:\n  {}x\n", "? ".repeat(MAX_DEPTH + 1));
        assert!(depth_error(&keys).is_some());
        let flow_lines = format!("a:\n{}", "  [\n".repeat(MAX_DEPTH + 1));
        assert!(depth_error(&flow_lines).is_some());
    }

    #[test]
    fn brackets_in_text_do_not_count() {
        let quoted = format!("a: \"{}\"\nb: '{}'\n", "[".repeat(500), "{".repeat(500));
        assert_eq!(depth_error(&quoted), None);
        let comment = format!("a: 1 # {}\n", "[".repeat(500));
        assert_eq!(depth_error(&comment), None);
        let plain = format!("a: x{}\n", "[".repeat(500));
        assert_eq!(depth_error(&plain), None);
        let in_flow = format!("a: [\"x]\", '{}', b]\n", "[".repeat(500));
        assert_eq!(depth_error(&in_flow), None);
    }

    /// Characters beyond ASCII are one column each, as in the diagnostics, and never
    /// mistaken for what the scan looks for.
    #[test]
    fn characters_beyond_ascii_are_columns() {
        for wide in ["é", "\u{a0}", "日本", "🦀"] {
            let narrow = "x".repeat(wide.chars().count());
            let deep = |w: &str| format!("{w}: '{w}' # {w}\n{w}k: {}", "[".repeat(MAX_DEPTH + 1));
            let (a, b) = (depth_error(&deep(wide)), depth_error(&deep(&narrow)));
            assert!(a.is_some(), "{wide}");
            assert_eq!(a, b, "{wide}");
            let quoted = format!("a: \"{wide}{}\"\n", "[".repeat(500));
            assert_eq!(depth_error(&quoted), None, "{wide}");
        }
    }

    #[test]
    fn an_apostrophe_in_flow_text_hides_nothing() {
        // `it's` is a plain scalar: the block nesting after the list must still count.
        let deep: String = (0..=MAX_DEPTH)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i + 2)))
            .collect();
        let text = format!("a: [it's]\nb:\n{deep}");
        assert!(depth_error(&text).is_some());
    }

    /// Pieces of YAML that open, close or hide nesting, repeated in runs so random sequences
    /// reach depths near and past the limit.
    const PIECES: &[&str] = &[
        "- ", "-\t", "? ", ": ", "k: ", "k:\n", "[", "]", "{", "}", ", ", "'", "\"", "\n", " ",
        "  ", "\t", "|\n", ">\n", "# ", "--- ", "&a ", "!t ", "x", "it's", "\\", "\0", "-\n",
        "?\n", ":\n", "\r\n", "\n  ", "- k: ", "...\n", "|2\n", "\"a\\\n",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever the estimate lets through, the YAML loader gets through without running
        /// out of stack (a failure here aborts the test process), and the compiler does not
        /// panic.
        #[test]
        fn no_input_overflows_the_loader(
            runs in proptest::collection::vec((0..PIECES.len(), 1usize..3000), 0..40)
        ) {
            let text: String = runs.iter().map(|&(p, n)| PIECES[p].repeat(n)).collect();
            let _ = crate::compile_str("p.yaml", &text);
        }
    }
}
