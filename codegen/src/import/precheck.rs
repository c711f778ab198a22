//! What a header must not hand the grammar: brackets nested too deep, a comment never closed.
//!
//! The header grammar is a PEG (pest) that recurses once per nesting level: thousands of
//! nested `union {` overflowed the stack or, before `bad` read braced blocks whole, took
//! seconds (a fuzzer found both). And a `/*` with no `*/` after it makes every attempt to read
//! a comment there scan to the end of the file, once per rule that tries: 20,000 of them
//! (60 KB) ran the grammar out of its budget. Both are found here in one pass, before the
//! grammar runs.
//!
//! The pass must see the text as the grammar does, or it could miss what the grammar will
//! meet. So it counts brackets inside string and character literals (the grammar has no
//! literals: `x"; union { union { …` on one line overflowed the stack while a literal-aware
//! count saw depth 1), and a `#` starts a line in which no comment starts (the grammar reads a
//! preprocessor line whole, so a `/*` in it may open nothing, and the lines after it are read
//! as code). Where the two readings can differ, this one counts more brackets and skips less
//! text, never the other way round. Linux's mlx5 headers nest at most 6 deep, counting `{`,
//! `(` and `[`; [`MAX_DEPTH`] is far above that and keeps the recursion, and the grammar's
//! work per byte, small (see [`super::budget`]).

/// The deepest nesting a header may have.
pub const MAX_DEPTH: usize = 64;

/// Why a header is not given to the grammar, with the byte offset to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The bracket at which nesting first goes past the limit.
    TooDeep(usize),
    /// A `/*` with no `*/` after it.
    UnclosedComment(usize),
}

/// The first reason not to parse `text`, nesting measured against `limit`. A closing bracket
/// with nothing open is ignored (the grammar reports it).
pub fn check(text: &str, limit: usize) -> Option<Refusal> {
    let b = text.as_bytes();
    // Any `/*` that starts before this offset has a `*/` after its own two bytes.
    let closable_before = text.rfind("*/").map_or(0, |at| at.saturating_sub(1));
    let unclosed = |at: usize| at >= closable_before;
    let (mut depth, mut i) = (0usize, 0usize);
    let mut preproc = false;
    while i < b.len() {
        match b[i] {
            // A comment opener seen anywhere (a preprocessor line too) must close.
            b'/' if b.get(i + 1) == Some(&b'*') && unclosed(i) => {
                return Some(Refusal::UnclosedComment(i))
            }
            b'/' if !preproc && b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                continue;
            }
            b'/' if !preproc && b.get(i + 1) == Some(&b'*') => {
                i = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |n| i + 2 + n + 2);
                continue;
            }
            b'#' => preproc = true,
            b'\\' if preproc => {
                // Before a newline, a continuation: the directive goes on past it.
                i += match &b[i + 1..] {
                    [b'\r', b'\n', ..] => 3,
                    [b'\n', ..] => 2,
                    _ => 1,
                };
                continue;
            }
            b'\n' => preproc = false,
            b'{' | b'(' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Some(Refusal::TooDeep(i));
                }
            }
            b'}' | b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Refusal::*;

    #[test]
    fn counts_brackets_outside_comments() {
        assert_eq!(check("a { b ( c [ d ] ) }", 3), None);
        assert_eq!(check("a { b ( c [ d ] ) }", 2), Some(TooDeep(10)));
        assert_eq!(check("/* {{{{ */ // ((((\n {", 1), None);
        assert_eq!(check("}}}{", 1), None);
        let deep = "union {".repeat(100);
        assert_eq!(check(&deep, MAX_DEPTH), Some(TooDeep(64 * 7 + 6)));
    }

    #[test]
    fn literals_count_as_the_grammar_reads_them() {
        // The grammar knows no literals: their brackets nest as any others.
        assert_eq!(check("\"[[[[\" '{' {", 1), Some(TooDeep(2)));
        assert_eq!(check("x\"; union { union {", 1), Some(TooDeep(18)));
    }

    #[test]
    fn a_preprocessor_line_opens_no_comment() {
        // The grammar reads `#define A /* x` whole: the next line is code, its braces count.
        assert_eq!(check("#define A /* x\n{{ */", 1), Some(TooDeep(16)));
        // Continued onto the next line, which is still the directive's.
        assert_eq!(check("#define A \\\n /* x\n{{ */", 1), Some(TooDeep(19)));
        assert_eq!(
            check("#define A \\\r\n /* x\r\n{{ */", 1),
            Some(TooDeep(21))
        );
        // A directive ends at its newline: a comment on the next line is one.
        assert_eq!(check("#define A 1\n/* {{ */", 1), None);
        // A backslash before anything else is one character of the line.
        assert_eq!(check("#define A \\{{", 1), Some(TooDeep(12)));
    }

    #[test]
    fn a_comment_that_never_closes_is_refused_where_it_opens() {
        assert_eq!(check("a /* b", 64), Some(UnclosedComment(2)));
        assert_eq!(check("/* a */ /* b */ c /*", 64), Some(UnclosedComment(18)));
        // Its own `*` does not close it; a later `*/` does, even one inside another comment.
        assert_eq!(check("/*/", 64), Some(UnclosedComment(0)));
        assert_eq!(check("/*/ */", 64), None);
        assert_eq!(check("/* /* */", 64), None);
        // In a directive, too: the grammar may read it as a comment inside a layout.
        assert_eq!(check("#define A /* x", 64), Some(UnclosedComment(10)));
        // Inside a line comment it opens nothing.
        assert_eq!(check("a // b /*\nc", 64), None);
    }
}
