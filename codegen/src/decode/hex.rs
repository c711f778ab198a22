//! The input parser of `prmc decode`: a hex dump (plain, `xxd` or `hexdump -C`) or raw bytes.
//!
//! People paste dumps from wherever they got them (a kernel log, `xxd`, `hexdump -C`, a
//! debugger), so the parser accepts the common shapes rather than one canonical form:
//!
//! - plain hex: tokens of hex digits, each an even number of digits, optionally `0x`-prefixed,
//!   separated by whitespace or commas (`00 01 02`, `00010203 04050607`, `0x00, 0x01`);
//! - `xxd`: `00000010: 0001 0203 ...  ascii`: an offset ending in `:`, groups of digits, then
//!   two spaces and the ASCII column, which is ignored;
//! - `hexdump -C`: `00000010  00 01 ... |ascii|`: an offset, bytes, the ASCII column between
//!   `|`; a `*` line repeats the previous line up to the next offset and a lone offset ends
//!   the dump (its length).
//!
//! Offsets, where a line has one, are checked against the bytes read so far, so a dump with a
//! line missing is an error rather than a silently shifted decode. Every error names the line
//! and column (1-based) of the problem.

use std::fmt;

/// A problem in the input, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

/// Largest input accepted (16 MiB, as for layouts): keeps a `*` line from expanding without
/// bound.
pub const MAX_INPUT: usize = 1 << 24;

/// The shape of a text dump, decided once for the whole input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    Xxd,
    HexdumpC,
}

/// True when `data` looks like a text dump rather than raw bytes: valid UTF-8 with no control
/// characters other than tab, CR and LF. Real buffers nearly always hold a zero byte, so they
/// read as raw; text that is no dump (`zz`) is then reported where it goes wrong instead of
/// being decoded as bytes. `--binary` settles the rare printable buffer.
pub fn looks_like_text(data: &[u8]) -> bool {
    match std::str::from_utf8(data) {
        Ok(s) => s
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\r' | '\n')),
        Err(_) => false,
    }
}

/// Reads input bytes: a text dump when [`looks_like_text`], else the bytes themselves.
pub fn read_input(data: &[u8]) -> Result<Vec<u8>, InputError> {
    if looks_like_text(data) {
        // looks_like_text checked UTF-8.
        parse_hex(std::str::from_utf8(data).unwrap_or_default())
    } else {
        Ok(data.to_vec())
    }
}

fn shape_of(text: &str) -> Shape {
    // xxd's ASCII column may hold a `|`, so an xxd offset wins over a bar.
    let (mut xxd, mut bar) = (false, false);
    for line in text.lines() {
        let t = line.trim_start();
        bar |= t.contains('|');
        let first = t.split_whitespace().next().unwrap_or("");
        if let Some(off) = first.strip_suffix(':') {
            if !off.is_empty() && off.chars().all(|c| c.is_ascii_hexdigit()) {
                xxd = true;
            }
        }
    }
    if xxd {
        Shape::Xxd
    } else if bar {
        Shape::HexdumpC
    } else {
        Shape::Plain
    }
}

fn err(line: usize, col: usize, message: impl Into<String>) -> InputError {
    InputError {
        line,
        col,
        message: message.into(),
    }
}

/// Parses a text dump into bytes.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, InputError> {
    let shape = shape_of(text);
    let mut out: Vec<u8> = Vec::new();
    // The bytes of the last data line and whether a `*` follows it.
    let mut last: Vec<u8> = Vec::new();
    let mut repeat = false;
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        // Cut the ASCII column and comments off; keep column numbers of what stays.
        let mut body = raw;
        if let Some(p) = body.find('#') {
            body = &body[..p];
        }
        if shape == Shape::HexdumpC {
            if let Some(p) = body.find('|') {
                body = &body[..p];
            }
        }
        let trimmed = body.trim();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed == "*" {
            if last.is_empty() {
                return Err(err(
                    lineno,
                    col_of(raw, trimmed),
                    "`*` with no line before it to repeat",
                ));
            }
            repeat = true;
            continue;
        }
        let mut rest = body;
        let mut offset = None;
        if shape != Shape::Plain {
            let lead = rest.len() - rest.trim_start().len();
            let first = rest.split_whitespace().next().unwrap_or("");
            let digits = first.strip_suffix(':').unwrap_or(first);
            let is_offset = match shape {
                Shape::Xxd => first.ends_with(':'),
                _ => true,
            };
            if is_offset {
                let col = col_of(raw, first);
                let value = u64::from_str_radix(digits, 16)
                    .map_err(|_| err(lineno, col, format!("`{first}` is not an offset")))?;
                offset = Some((value, col));
                rest = &rest[lead + first.len()..];
                if shape == Shape::Xxd {
                    // The ASCII column starts after two spaces past the hex groups.
                    let t = rest.trim_start();
                    let skipped = rest.len() - t.len();
                    if let Some(p) = t.find("  ") {
                        rest = &rest[..skipped + p];
                    }
                }
            }
        }
        if let Some((value, col)) = offset {
            let value = usize::try_from(value)
                .ok()
                .filter(|v| *v <= MAX_INPUT)
                .ok_or_else(|| err(lineno, col, "offset beyond the 16 MiB input limit"))?;
            if repeat {
                while out.len() < value {
                    let n = last.len().min(value - out.len());
                    out.extend_from_slice(&last[..n]);
                }
                repeat = false;
            }
            if value != out.len() {
                return Err(err(
                    lineno,
                    col,
                    format!(
                        "offset 0x{value:x} does not follow the 0x{:x} bytes read so far",
                        out.len()
                    ),
                ));
            }
        } else if repeat {
            return Err(err(
                lineno,
                col_of(raw, trimmed),
                "`*` must be followed by an offset line",
            ));
        }
        let start = out.len();
        parse_tokens(raw, rest, lineno, &mut out)?;
        if out.len() > MAX_INPUT {
            return Err(err(lineno, 1, "input beyond the 16 MiB limit"));
        }
        if out.len() > start {
            last = out[start..].to_vec();
        }
    }
    if repeat {
        return Err(err(
            text.lines().count().max(1),
            1,
            "`*` at the end of the dump: the final offset line is missing",
        ));
    }
    Ok(out)
}

/// Column (1-based, in characters) of `part`, a subslice of `line`.
fn col_of(line: &str, part: &str) -> usize {
    let start = (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
    line.get(..start.min(line.len()))
        .map_or(1, |s| s.chars().count() + 1)
}

fn parse_tokens(
    line: &str,
    body: &str,
    lineno: usize,
    out: &mut Vec<u8>,
) -> Result<(), InputError> {
    for token in body.split(|c: char| c.is_whitespace() || c == ',') {
        if token.is_empty() {
            continue;
        }
        let col = col_of(line, token);
        let (digits, dcol) = match token
            .strip_prefix("0x")
            .or_else(|| token.strip_prefix("0X"))
        {
            Some(d) => (d, col + 2),
            None => (token, col),
        };
        if let Some((k, c)) = digits.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
            let at = dcol + digits[..k].chars().count();
            return Err(err(lineno, at, format!("`{c}` is not a hex digit")));
        }
        if digits.is_empty() {
            return Err(err(lineno, col, "`0x` with no digits"));
        }
        if digits.len() % 2 != 0 {
            return Err(err(
                lineno,
                dcol,
                format!(
                    "`{token}` has an odd number of hex digits ({}): write each byte as two digits",
                    digits.len()
                ),
            ));
        }
        for pair in digits.as_bytes().chunks(2) {
            let hi = (pair[0] as char).to_digit(16).unwrap_or(0);
            let lo = (pair[1] as char).to_digit(16).unwrap_or(0);
            out.push((hi * 16 + lo) as u8);
        }
    }
    Ok(())
}

/// Writes bytes as plain hex the parser reads back: 16 bytes a line in 4-byte groups, the
/// PRM's dwords.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for line in bytes.chunks(16) {
        let groups: Vec<String> = line
            .chunks(4)
            .map(|g| g.iter().map(|b| format!("{b:02x}")).collect())
            .collect();
        s.push_str(&groups.join(" "));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_forms() {
        assert_eq!(parse_hex("00 01 0a ff").unwrap(), vec![0, 1, 10, 255]);
        assert_eq!(parse_hex("0001 0aff\n").unwrap(), vec![0, 1, 10, 255]);
        assert_eq!(parse_hex("0x00, 0x01,0X0a").unwrap(), vec![0, 1, 10]);
        assert_eq!(parse_hex("").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn xxd_form() {
        let text = "00000000: 4142 4344 0000 0000  ABCD....\n00000008: 3132                 12\n";
        assert_eq!(
            parse_hex(text).unwrap(),
            vec![0x41, 0x42, 0x43, 0x44, 0, 0, 0, 0, 0x31, 0x32]
        );
    }

    #[test]
    fn hexdump_c_with_repeat() {
        let text = "00000000  01 02 03 04 05 06 07 08  09 0a 0b 0c 0d 0e 0f 10  |................|\n\
                    00000010  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n\
                    *\n\
                    00000040  ff                                                |.|\n\
                    00000041\n";
        let b = parse_hex(text).unwrap();
        assert_eq!(b.len(), 0x41);
        assert_eq!(b[0], 1);
        assert_eq!(b[15], 0x10);
        assert!(b[16..0x40].iter().all(|&x| x == 0));
        assert_eq!(b[0x40], 0xff);
    }

    #[test]
    fn errors_have_locations() {
        let e = parse_hex("00 01\n0a 0b1\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 4));
        assert!(e.message.contains("odd number"), "{e}");
        let e = parse_hex("00 zz").unwrap_err();
        assert_eq!((e.line, e.col), (1, 4));
        let e = parse_hex("00000000: 0001\n00000004: 0203\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 1));
        assert!(e.message.contains("does not follow"), "{e}");
    }

    #[test]
    fn binary_is_detected() {
        assert!(!looks_like_text(&[0, 1, 2, 0xff]));
        assert!(looks_like_text(b"00 01\n"));
        assert_eq!(read_input(&[0, 1]).unwrap(), vec![0, 1]);
    }

    #[test]
    fn to_hex_round_trips() {
        let b: Vec<u8> = (0..=40).collect();
        assert_eq!(parse_hex(&to_hex(&b)).unwrap(), b);
    }
}
