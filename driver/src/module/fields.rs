//! Field access on a 128-byte half of the EEPROM window, addressed by the window offsets the
//! standards use (0..=127 for the lower page, 128..=255 for an upper page), so the decoders
//! can write the standards' byte numbers as they are. Every access is bounds checked: an
//! offset outside the half reads as zero rather than panicking.

use super::report::{CheckCode, DateCode, FlagSet, Limits};
use super::{DecodeOptions, ModuleError};

/// One half of the window.
#[derive(Clone, Copy)]
pub(crate) struct Bytes<'a> {
    /// The window offset of `bytes[0]`.
    base: usize,
    bytes: &'a [u8; 128],
}

impl<'a> Bytes<'a> {
    /// The lower page (window offsets 0..=127).
    pub(crate) fn lower(bytes: &'a [u8; 128]) -> Self {
        Bytes { base: 0, bytes }
    }

    /// An upper page (window offsets 128..=255).
    pub(crate) fn upper(bytes: &'a [u8; 128]) -> Self {
        Bytes { base: 128, bytes }
    }

    /// The byte at window offset `at` (0 outside this half).
    pub(crate) fn byte(&self, at: usize) -> u8 {
        at.checked_sub(self.base)
            .and_then(|i| self.bytes.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Whether bit `bit` of the byte at `at` is set.
    pub(crate) fn bit(&self, at: usize, bit: u8) -> bool {
        self.byte(at) & (1u8 << (bit & 7)) != 0
    }

    /// The big-endian 16-bit word at `at`.
    pub(crate) fn be16(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.byte(at), self.byte(at.saturating_add(1))])
    }

    /// The four bytes at `at`.
    pub(crate) fn be4(&self, at: usize) -> [u8; 4] {
        let b = |k: usize| self.byte(at.saturating_add(k));
        [b(0), b(1), b(2), b(3)]
    }

    /// `len` bytes from `at`, cut to what this half holds.
    pub(crate) fn slice(&self, at: usize, len: usize) -> &'a [u8] {
        let start = at.saturating_sub(self.base).min(self.bytes.len());
        let end = at
            .saturating_add(len)
            .saturating_sub(self.base)
            .min(self.bytes.len());
        self.bytes.get(start..end.max(start)).unwrap_or(&[])
    }

    /// An ASCII text field: trailing spaces (and NULs, which some vendors pad with)
    /// removed, any other non-printable byte shown as '.'.
    pub(crate) fn text(&self, at: usize, len: usize) -> String {
        ascii(self.slice(at, len))
    }

    /// The low byte of the sum of the bytes `first..=last`.
    pub(crate) fn sum(&self, first: usize, last: usize) -> u8 {
        self.slice(first, last.saturating_sub(first).saturating_add(1))
            .iter()
            .fold(0u8, |acc, &b| acc.wrapping_add(b))
    }

    /// Four big-endian words at `at` in the order the standards store thresholds (high
    /// alarm, low alarm, high warning, low warning), each converted by `unit`.
    pub(crate) fn limits(&self, at: usize, unit: impl Fn(u16) -> f64) -> Limits {
        let w = |k: usize| unit(self.be16(at.saturating_add(2 * k)));
        Limits {
            high_alarm: w(0),
            low_alarm: w(1),
            high_warning: w(2),
            low_warning: w(3),
        }
    }

    /// Four flag bits of the byte at `at`, at the given bit numbers.
    pub(crate) fn flags(&self, at: usize, bits: FlagBits) -> FlagSet {
        FlagSet {
            high_alarm: self.bit(at, bits.high_alarm),
            low_alarm: self.bit(at, bits.low_alarm),
            high_warning: self.bit(at, bits.high_warning),
            low_warning: self.bit(at, bits.low_warning),
        }
    }

    /// The date code of eight characters at `at` (YYMMDDLL).
    pub(crate) fn date_code(&self, at: usize) -> DateCode {
        let raw = self.slice(at, 8);
        let digits = raw.get(..6).filter(|d| d.iter().all(u8::is_ascii_digit));
        let date = digits.map(|d| {
            let c = |i: usize| d.get(i).map_or('0', |&b| char::from(b));
            format!("20{}{}-{}{}-{}{}", c(0), c(1), c(2), c(3), c(4), c(5))
        });
        DateCode {
            text: ascii(raw),
            date,
            lot: ascii(raw.get(6..).unwrap_or(&[])),
        }
    }

    /// Compares the check code stored at `stored_at` with the sum of `first..=last`, records
    /// it in `out`, and fails on a mismatch when the options ask to.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn check(
        &self,
        name: &'static str,
        i2c_address: u8,
        page: u8,
        (first, last): (u8, u8),
        stored_at: usize,
        opts: &DecodeOptions,
        out: &mut Vec<CheckCode>,
    ) -> Result<(), ModuleError> {
        let stored = self.byte(stored_at);
        let computed = self.sum(usize::from(first), usize::from(last));
        let code = CheckCode {
            name,
            i2c_address,
            page,
            range: (first, last),
            stored,
            computed,
            matched: stored == computed,
        };
        out.push(code);
        if opts.verify_checksums && !code.matched {
            return Err(ModuleError::Checksum {
                i2c_address,
                page,
                range: code.range,
                stored: code.stored,
                computed: code.computed,
            });
        }
        Ok(())
    }
}

/// Where the four flags of one quantity sit within a byte.
#[derive(Clone, Copy)]
pub(crate) struct FlagBits {
    pub(crate) high_alarm: u8,
    pub(crate) low_alarm: u8,
    pub(crate) high_warning: u8,
    pub(crate) low_warning: u8,
}

impl FlagBits {
    /// High alarm, low alarm, high warning, low warning on bits `top`, `top-1`, `top-2`,
    /// `top-3`: the SFF-8636 and SFF-8472 layout.
    pub(crate) const fn descending(top: u8) -> FlagBits {
        FlagBits {
            high_alarm: top,
            low_alarm: top.saturating_sub(1),
            high_warning: top.saturating_sub(2),
            low_warning: top.saturating_sub(3),
        }
    }

    /// High alarm, low alarm, high warning, low warning on bits `low`, `low+1`, `low+2`,
    /// `low+3`: the CMIS module flag layout.
    pub(crate) const fn ascending(low: u8) -> FlagBits {
        FlagBits {
            high_alarm: low,
            low_alarm: low.saturating_add(1),
            high_warning: low.saturating_add(2),
            low_warning: low.saturating_add(3),
        }
    }
}

/// Text from an ASCII field: trailing spaces and NULs dropped, other non-printable bytes as
/// '.'.
pub(crate) fn ascii(raw: &[u8]) -> String {
    let end = raw
        .iter()
        .rposition(|&b| b != b' ' && b != 0)
        .map_or(0, |i| i.saturating_add(1));
    raw.get(..end)
        .unwrap_or(&[])
        .iter()
        .map(|&b| {
            if (0x20..=0x7e).contains(&b) {
                char::from(b)
            } else {
                '.'
            }
        })
        .collect()
}
