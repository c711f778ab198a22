//! Header text quoted in a diagnostic, kept to one short line.
//!
//! A member the grammar cannot read or an array size it cannot evaluate is quoted in its
//! error, and a broken header can make that text as long as the file (a fuzzer's 200 KB size
//! expression became one 200 KB line of output). The diagnostic's span already points at the
//! text; the quote only has to be recognisable.

use std::borrow::Cow;

/// Characters of header text a diagnostic quotes at most.
pub const MAX_CHARS: usize = 60;

/// `text` with each run of whitespace made one space, cut to [`MAX_CHARS`] characters with a
/// `…` where it was cut.
pub fn excerpt(text: &str) -> Cow<'_, str> {
    let plain = text.len() <= MAX_CHARS
        && !text.contains("  ")
        && !text.chars().any(|c| c.is_whitespace() && c != ' ');
    if plain {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        // Enough to cut: a word may be the whole 16 MiB header, so stop looking early.
        if out.len() > 4 * MAX_CHARS {
            break;
        }
    }
    if let Some((cut, _)) = out.char_indices().nth(MAX_CHARS) {
        out.truncate(cut);
        out.push('…');
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_as_it_is() {
        assert!(matches!(excerpt("u8 x;"), Cow::Borrowed("u8 x;")));
    }

    #[test]
    fn whitespace_runs_become_one_space() {
        assert_eq!(excerpt("union {\n\tu8 x;\n}"), "union { u8 x; }");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(200_000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), MAX_CHARS + 1);
        assert!(e.ends_with("é…"));
        let words = "a ".repeat(100_000);
        assert_eq!(excerpt(&words).chars().count(), MAX_CHARS + 1);
    }
}
