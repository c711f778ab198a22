//! Field positions: the PRM notation parsed by a pest grammar (`position.pest`), and the
//! conversion to absolute MSB-first bit offsets.
//!
//! Bit numbering: the PRM numbers bits inside a big-endian word from 31 (the most significant)
//! down to 0. The IR counts bits from the most significant bit of byte 0 of the structure, the
//! way `mlx5_ifc.h` does (`offsetof` of a `u8 name[bits]` member). For a word of `W` bits
//! (32 for bits up to 31, 64 for bits up to 63, and so on) at byte offset `B`, bit `b` is at
//! absolute offset `B*8 + (W - 1 - b)`.

use pest::Parser;
use pest_derive::Parser;

#[derive(Parser)]
#[grammar = "position.pest"]
struct PositionParser;

/// A parsed `at:` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// `0x3c[31:16]`: bits `hi..=lo` of the big-endian word at byte `byte`.
    Bits {
        /// Byte offset of the word (a multiple of 4).
        byte: u64,
        /// Most significant bit number.
        hi: u32,
        /// Least significant bit number.
        lo: u32,
    },
    /// `0x20..0x30`: whole bytes, end exclusive.
    Bytes {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// `0x10`: a byte offset; the width comes from the field's type.
    Offset {
        /// The byte offset.
        byte: u64,
    },
}

/// A position that does not parse or does not make sense. `offset` and `len` are counted in
/// characters from the start of the position text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionError {
    /// Character offset of the problem inside the text.
    pub offset: usize,
    /// Characters to underline.
    pub len: usize,
    /// What is wrong.
    pub message: String,
    /// A suggested rewrite, when there is one.
    pub hint: Option<String>,
}

/// Largest bit number accepted inside `[...]` (a 1024-bit word; PRM fields stay far below).
const MAX_BIT: u32 = 1023;

/// Largest byte offset or size a layout may use (16 MiB; the PRM's largest layouts are a few
/// KiB). Keeps every bit computation far from overflow.
pub const MAX_BYTES: u64 = 1 << 24;

impl Position {
    /// Parses the PRM notation.
    pub fn parse(text: &str) -> Result<Position, PositionError> {
        let pairs =
            PositionParser::parse(Rule::position, text).map_err(|e| syntax_error(text, e))?;
        let Some(top) = pairs.into_iter().next() else {
            return Err(plain(0, text.len().max(1), "empty position"));
        };
        let Some(form) = top.into_inner().find(|p| p.as_rule() != Rule::EOI) else {
            return Err(plain(0, text.len().max(1), "empty position"));
        };
        let col = |p: &pest::iterators::Pair<Rule>| text[..p.as_span().start()].chars().count();
        let num = |p: pest::iterators::Pair<Rule>| -> Result<u64, PositionError> {
            let c = col(&p);
            let len = p.as_str().chars().count();
            match crate::num::parse_uint(p.as_str()) {
                Ok(v) if v <= MAX_BYTES => Ok(v),
                Ok(v) => Err(plain(
                    c,
                    len,
                    format!("byte offset 0x{v:x} is beyond the 16 MiB a layout may span"),
                )),
                Err(m) => Err(plain(c, len, m)),
            }
        };
        match form.as_rule() {
            Rule::offset => {
                let n = form
                    .into_inner()
                    .next()
                    .expect("grammar: offset has a number");
                Ok(Position::Offset { byte: num(n)? })
            }
            Rule::bytes => {
                let mut it = form.into_inner();
                let start_p = it.next().expect("grammar: start");
                let op = it.next().expect("grammar: op");
                let end_p = it.next().expect("grammar: end");
                let end_col = col(&end_p);
                let end_len = end_p.as_str().chars().count();
                let start = num(start_p)?;
                let mut end = num(end_p)?;
                if op.as_str() == "..=" {
                    end = end
                        .checked_add(1)
                        .ok_or_else(|| plain(end_col, end_len, "byte range end is too large"))?;
                }
                if end <= start {
                    return Err(plain(
                        end_col,
                        end_len,
                        format!("byte range ends at 0x{end:x}, not after its start 0x{start:x}"),
                    ));
                }
                Ok(Position::Bytes { start, end })
            }
            Rule::bits => {
                let mut it = form.into_inner();
                let byte_p = it.next().expect("grammar: byte");
                let byte_col = col(&byte_p);
                let byte_len = byte_p.as_str().chars().count();
                let byte = num(byte_p)?;
                let hi_p = it
                    .find(|p| p.as_rule() == Rule::bit_hi)
                    .expect("grammar: hi");
                let (hi_col, hi_len) = (col(&hi_p), hi_p.as_str().len());
                let hi = bit_number(hi_p.as_str(), hi_col)?;
                let (lo, lo_col, lo_len) = match it.find(|p| p.as_rule() == Rule::bit_lo) {
                    Some(p) => (bit_number(p.as_str(), col(&p))?, col(&p), p.as_str().len()),
                    None => (hi, hi_col, hi_len),
                };
                if lo > hi {
                    return Err(PositionError {
                        offset: hi_col,
                        len: lo_col + lo_len - hi_col,
                        message: format!(
                            "bit range [{hi}:{lo}] is reversed: the PRM writes the high bit first"
                        ),
                        hint: Some(format!("write [{lo}:{hi}]")),
                    });
                }
                if byte % 4 != 0 {
                    // Bits 7..0 after an odd byte offset almost always mean bits of that byte;
                    // wider ranges read as a dword starting there.
                    let width = u64::from(hi - lo + 1);
                    let (start, reading) = if hi < 8 {
                        (
                            byte * 8 + 7 - u64::from(hi),
                            format!("bits {hi}..{lo} of byte 0x{byte:x}"),
                        )
                    } else {
                        let p = Position::Bits {
                            byte: byte & !3,
                            hi,
                            lo,
                        };
                        let start = p.bit_span().map_or(0, |(s, _)| s) + (byte % 4) * 8;
                        (start, format!("a dword starting at byte 0x{byte:x}"))
                    };
                    let hint = prm_notation(start, width)
                        .map(|n| format!("read as {reading}, that is `{n}`"));
                    return Err(PositionError {
                        offset: byte_col,
                        len: byte_len,
                        message: format!(
                            "bit positions are counted in a dword, so the byte offset must be a multiple of 4 (0x{byte:x} is not)"
                        ),
                        hint,
                    });
                }
                Ok(Position::Bits { byte, hi, lo })
            }
            _ => Err(plain(0, text.len().max(1), "unrecognised position")),
        }
    }

    /// Absolute `(bit_offset, width)` when the position fixes both; `None` for a bare offset.
    pub fn bit_span(&self) -> Option<(u64, u64)> {
        match *self {
            Position::Bits { byte, hi, lo } => {
                let word = (u64::from(hi) / 32 + 1) * 32;
                Some((byte * 8 + word - 1 - u64::from(hi), u64::from(hi - lo + 1)))
            }
            Position::Bytes { start, end } => Some((start * 8, (end - start) * 8)),
            Position::Offset { .. } => None,
        }
    }

    /// The absolute bit offset where the position starts.
    pub fn start_bit(&self) -> u64 {
        match *self {
            Position::Offset { byte } => byte * 8,
            _ => self.bit_span().map(|(s, _)| s).unwrap_or(0),
        }
    }

    /// True for the byte-range form.
    pub fn is_byte_range(&self) -> bool {
        matches!(self, Position::Bytes { .. })
    }
}

fn bit_number(s: &str, col: usize) -> Result<u32, PositionError> {
    match s.parse::<u32>() {
        Ok(v) if v <= MAX_BIT => Ok(v),
        _ => Err(plain(
            col,
            s.len(),
            format!("bit number {s} is out of range (at most {MAX_BIT})"),
        )),
    }
}

fn plain(offset: usize, len: usize, message: impl Into<String>) -> PositionError {
    PositionError {
        offset,
        len,
        message: message.into(),
        hint: None,
    }
}

fn syntax_error(text: &str, e: pest::error::Error<Rule>) -> PositionError {
    let offset = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    };
    let offset = text[..offset.min(text.len())].chars().count();
    let found = text.chars().nth(offset);
    let expected = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            let mut names: Vec<&str> = positives.iter().map(rule_name).collect();
            names.sort_unstable();
            names.dedup();
            names.join(", ")
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    let message = match found {
        Some(c) => format!("unexpected `{c}` in position: expected {expected}"),
        None => format!("position ends too early: expected {expected}"),
    };
    PositionError {
        offset,
        len: 1,
        message,
        hint: Some(
            "positions look like `0x3c[31:16]`, `0x3c[0]`, `0x10[63:0]`, `0x20..0x30` or `0x10`"
                .into(),
        ),
    }
}

fn rule_name(r: &Rule) -> &'static str {
    match r {
        Rule::number | Rule::hex | Rule::dec | Rule::bin | Rule::oct => "a number",
        Rule::bit_hi | Rule::bit_lo => "a bit number",
        Rule::range_op => "`..`",
        Rule::EOI => "the end",
        Rule::open => "`[`",
        Rule::colon => "`:`",
        Rule::close => "`]`",
        _ => "a position",
    }
}

/// Writes an absolute `(bit_offset, width)` back in the PRM notation, choosing the form a PRM
/// table would use: `[hi:lo]` inside one dword, `[63:0]` for an aligned 64-bit quantity, a
/// byte range for other byte-aligned spans. `None` when no form expresses it (a span that crosses a
/// dword boundary without being byte-aligned).
pub fn prm_notation(bit_offset: u64, width: u64) -> Option<String> {
    if width == 0 {
        return None;
    }
    let dword = bit_offset / 32;
    let in_dword = bit_offset % 32;
    if in_dword + width <= 32 {
        let hi = 31 - in_dword;
        let lo = hi + 1 - width;
        return Some(if hi == lo {
            format!("0x{:02x}[{hi}]", dword * 4)
        } else {
            format!("0x{:02x}[{hi}:{lo}]", dword * 4)
        });
    }
    if in_dword == 0 && width == 64 {
        return Some(format!("0x{:02x}[63:0]", dword * 4));
    }
    if bit_offset % 8 == 0 && width % 8 == 0 {
        return Some(format!(
            "0x{:02x}..0x{:02x}",
            bit_offset / 8,
            (bit_offset + width) / 8
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(s: &str) -> (u64, u64) {
        Position::parse(s).unwrap().bit_span().unwrap()
    }

    #[test]
    fn dword_bits_follow_the_kernel_numbering() {
        // qpc.log_sq_size: bit 0x51, width 4 == dword 2 (byte 8), bits 14..11.
        assert_eq!(span("0x08[14:11]"), (0x51, 4));
        assert_eq!(span("0x3c[31:16]"), (0x3c * 8, 16));
        assert_eq!(span("0x3c[0]"), (0x3c * 8 + 31, 1));
        assert_eq!(span("0x10[63:0]"), (0x80, 64));
        assert_eq!(span("0x10[47:32]"), span("0x10[15:0]"));
        assert_eq!(span("0x20..0x30"), (0x100, 128));
        assert_eq!(span("0x20..=0x2f"), (0x100, 128));
        assert_eq!(span(" 0x3c [ 7 : 4 ] "), (0x3c * 8 + 24, 4));
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = Position::parse("0x3c[31;16]").unwrap_err();
        assert_eq!(e.offset, 7);
        let e = Position::parse("0x3c[16:31]").unwrap_err();
        assert!(e.message.contains("reversed"), "{e:?}");
        let e = Position::parse("0x3d[7:0]").unwrap_err();
        assert_eq!(e.offset, 0);
        assert_eq!(
            e.hint.as_deref(),
            Some("read as bits 7..0 of byte 0x3d, that is `0x3c[23:16]`")
        );
        let e = Position::parse("0x3e[15:0]").unwrap_err();
        assert_eq!(
            e.hint.as_deref(),
            Some("read as a dword starting at byte 0x3e, that is `0x40[31:16]`")
        );
        let e = Position::parse("0x20..0x10").unwrap_err();
        assert_eq!(e.offset, 6);
        assert!(Position::parse("").is_err());
        assert!(Position::parse("0x3c[99999999999]").is_err());
    }

    #[test]
    fn notation_round_trips() {
        for (off, w) in [
            (0x51, 4),
            (0, 32),
            (0x80, 64),
            (0x100, 128),
            (0x1f, 1),
            (0x48, 48),
        ] {
            let text = prm_notation(off, w).unwrap();
            assert_eq!(span(&text), (off, w), "{text}");
        }
        assert_eq!(prm_notation(0x1c, 8), None);
    }
}
