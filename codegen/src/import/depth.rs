//! A bound on how deep a header's brackets nest, checked before the grammar reads it.
//!
//! The header grammar is a PEG (pest) that recurses once per nesting level: thousands of
//! nested `union {` overflowed the stack or, before `bad` read braced blocks whole, took
//! seconds (a fuzzer found both). Linux's mlx5 headers nest at most 6 deep, counting `{`, `(`
//! and `[` outside comments and literals; [`MAX_DEPTH`] is far above that and keeps the
//! recursion, and the grammar's work per byte, small (see [`super::budget`]).

/// The deepest nesting a header may have.
pub const MAX_DEPTH: usize = 64;

/// Where the nesting of `text` first goes past `limit`: the byte offset of that bracket.
/// Comments (`//`, `/* */`) and string or character literals are skipped; a closing bracket
/// with nothing open is ignored (the grammar reports it).
pub fn first_too_deep(text: &str, limit: usize) -> Option<usize> {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |n| i + 2 + n + 2);
                continue;
            }
            q @ (b'"' | b'\'') => {
                // To the closing quote or the end of the line, whichever comes first.
                let mut j = i + 1;
                while j < b.len() && b[j] != q && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
                continue;
            }
            b'{' | b'(' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
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

    #[test]
    fn counts_brackets_outside_comments_and_literals() {
        assert_eq!(first_too_deep("a { b ( c [ d ] ) }", 3), None);
        assert_eq!(first_too_deep("a { b ( c [ d ] ) }", 2), Some(10));
        assert_eq!(
            first_too_deep("/* {{{{ */ // ((((\n \"[[[[\" '{' {", 1),
            None
        );
        assert_eq!(first_too_deep("{ /* unterminated {{{{", 1), None);
        assert_eq!(first_too_deep("\"unterminated {{{\n{{", 1), Some(19));
        assert_eq!(first_too_deep("}}}{", 1), None);
        let deep = "union {".repeat(100);
        assert_eq!(first_too_deep(&deep, MAX_DEPTH), Some(64 * 7 + 6));
    }
}
