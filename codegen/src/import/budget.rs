//! A bound on the work the header grammar may do, and what to say when it stops early.
//!
//! The grammar is a PEG (pest) and backtracks. Its rules are written so that no text is read
//! again level by level (see `bad` and `dim_text` in `header.pest`), and [`super::precheck`]
//! bounds how many levels there are: Linux's `mlx5_ifc.h` (333 KB, 7.3) takes 0.88 million
//! of pest's counted calls, 2.6 per byte (6.1's and 6.12's: 2.7). What is left is work proportional to the nesting
//! depth times the text (a block the grammar gives up on is scanned again by each level
//! around it), at most some hundreds of calls per byte at the deepest nesting allowed. Should
//! some input find a slower path, the budget turns it into one diagnostic instead of a hang:
//! pest counts rule entries, sequences and repetitions against it and fails the parse when
//! it runs out.
//!
//! The budget grows with the text, [`BASE_CALLS`] plus [`CALLS_PER_BYTE`] a byte: 8.3 times
//! what Linux's header needs, and about 6 s for a 1 MiB input under the address sanitizer
//! of the fuzz build (0.3 µs a call there), which the fuzzer's 10 s timeout leaves room for.

use crate::diag::Diagnostic;
use crate::source::Span;
use std::sync::Mutex;

/// Calls any parse may make, however short its text.
pub const BASE_CALLS: usize = 2_000_000;

/// Calls a parse may make for each byte of its text, on top of [`BASE_CALLS`].
pub const CALLS_PER_BYTE: usize = 16;

/// The most calls a parse of `len` bytes may make.
pub fn calls_for(len: usize) -> usize {
    BASE_CALLS.saturating_add(len.saturating_mul(CALLS_PER_BYTE))
}

/// pest keeps its call limit process-wide and reads it when a parse starts, so a parse of a
/// short text on another thread could otherwise start under a long text's larger budget or
/// the other way round. Parses of headers take turns instead; they are short.
static TURN: Mutex<()> = Mutex::new(());

/// Runs `parse` (one pest parse of `text`) within `text`'s budget. The limit stays installed
/// afterwards and also bounds the crate's other pest grammar (position expressions, far
/// smaller than any budget).
pub fn within<'t, T>(text: &'t str, parse: impl FnOnce(&'t str) -> T) -> T {
    let _turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    pest::set_call_limit(std::num::NonZeroUsize::new(calls_for(text.len())));
    parse(text)
}

/// The diagnostic for a header of `len` bytes the grammar did not read: a syntax error, or
/// pest giving up (its call budget or the stack ran out; it reports both as a custom error).
pub fn parse_error<R: pest::RuleType>(
    e: &pest::error::Error<R>,
    file: usize,
    len: usize,
) -> Diagnostic {
    let (line, col) = match e.line_col {
        pest::error::LineColLocation::Pos(p) | pest::error::LineColLocation::Span(p, _) => p,
    };
    let message = match &e.variant {
        // pest says "call limit reached" or "stack limit reached".
        pest::error::ErrorVariant::CustomError { message } if message.starts_with("call") => {
            format!(
                "the grammar gave up on this header here ({message}: {} steps for its {len} \
                 bytes, where Linux's mlx5_ifc.h takes under 3 a byte): the header is not read",
                calls_for(len)
            )
        }
        pest::error::ErrorVariant::CustomError { message } => {
            format!("the grammar gave up on this header here ({message}): the header is not read")
        }
        pest::error::ErrorVariant::ParsingError { .. } => {
            "cannot read this header here (unbalanced braces?)".to_string()
        }
    };
    Diagnostic::error(
        "import",
        Span::point(file, line as u32, col as u32),
        message,
    )
}
