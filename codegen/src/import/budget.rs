//! A bound on the work the header grammar may do, and what to say when it stops early.
//!
//! The grammar is a PEG (pest) and backtracks. Its rules are written so that no text is read
//! again level by level (see `bad` in `header.pest`): Linux's `mlx5_ifc.h` (333 KB, 7.3)
//! takes 0.9 million of pest's counted calls and a 3 KB file of broken nested unions 43
//! thousand. Should some input still find a slow path, the budget turns it into one
//! diagnostic after about a second instead of a hang: pest counts rule entries, sequences and
//! repetitions against it and fails the parse when it runs out.

use crate::diag::Diagnostic;
use crate::source::Span;

/// The most calls one parse may make: 50 times what Linux's largest mlx5 header needs.
pub const CALLS: usize = 50_000_000;

/// Sets pest's budget. pest keeps it process-wide and reads it when a parse starts, so it
/// also bounds the other pest grammar of this crate (position expressions, far smaller).
pub fn install() {
    pest::set_call_limit(std::num::NonZeroUsize::new(CALLS));
}

/// The diagnostic for a header the grammar did not read: a syntax error, or pest giving up
/// (its call budget or the stack ran out; it reports both as a custom error).
pub fn parse_error<R: pest::RuleType>(e: &pest::error::Error<R>, file: usize) -> Diagnostic {
    let (line, col) = match e.line_col {
        pest::error::LineColLocation::Pos(p) | pest::error::LineColLocation::Span(p, _) => p,
    };
    let message = match &e.variant {
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
