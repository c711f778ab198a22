//! Layouts and members the grammar could not read.
//!
//! A `struct mlx5_ifc_X_bits { … }` that is not a layout to the grammar (a stray `;` among its
//! members, no `;` after its closing brace, an attribute such as `__packed` there) falls to
//! the rule that skips other C, whole. Skipping it quietly would lose the layout without a
//! word; it is an error at the first place the grammar could not read, as for a member it
//! cannot read.

use super::{HeaderParser, Member, Rule};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::Span;
use pest::Parser;

/// The tag of a `_bits` layout that `skipped` (the text of a skipped item) starts to define.
fn layout_tag(skipped: &str) -> Option<&str> {
    let rest = skipped
        .strip_prefix("struct")
        .or_else(|| skipped.strip_prefix("union"))?;
    let rest = rest
        .strip_prefix(|c: char| c.is_ascii_whitespace())?
        .trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (tag, after) = rest.split_at(end);
    let bits = tag.starts_with("mlx5_ifc_") && tag.ends_with("_bits");
    (bits && after.trim_start().starts_with('{')).then_some(tag)
}

/// The error for a skipped item that starts a `_bits` layout: at the first text the grammar
/// could not read as one. `at` is the item's byte offset in the header, `line_col` converts.
pub fn report(
    skipped: &str,
    file: usize,
    at: usize,
    line_col: impl Fn(usize) -> (u32, u32),
) -> Option<Diagnostic> {
    let tag = layout_tag(skipped)?;
    let brace = skipped.find('{')?;
    let (offset, message) = match super::budget::within(&skipped[brace..], |t| {
        HeaderParser::parse(Rule::body, t)
    }) {
        Err(e) => {
            let (pest::error::InputLocation::Pos(p) | pest::error::InputLocation::Span((p, _))) =
                e.location;
            (
                brace + p,
                format!("cannot read `{tag}` from here on: the layout is left out"),
            )
        }
        // The members read, so what follows the closing brace is not `;`.
        Ok(mut p) => (
            brace + p.next().map_or(0, |b| b.as_span().end()),
            format!("`{tag}` must end with `;` after its closing brace: the layout is left out"),
        ),
    };
    let (line, col) = line_col(at + offset);
    Some(
        Diagnostic::error("import", Span::point(file, line, col), message).with_hint(
            "a layout is `struct mlx5_ifc_X_bits { members };` with members `u8 name[0xN];`, \
             `struct mlx5_ifc_X_bits name;` or an inline union",
        ),
    )
}

/// True if `members` (inline unions' included) hold one the grammar could not read.
pub(super) fn has_bad(members: &[Member]) -> bool {
    members.iter().any(|m| match m {
        Member::Bad { .. } => true,
        Member::Inline { members, .. } => has_bad(members),
        _ => false,
    })
}

/// An error for each member of `tag` the grammar could not read.
pub(super) fn report_bad(members: &[Member], tag: &str, diags: &mut Diagnostics) {
    for m in members {
        match m {
            Member::Bad { text, span } => diags.push(
                Diagnostic::error("import", *span, format!("cannot read `{}` in `{tag}`", super::excerpt::excerpt(text)))
                    .with_hint("layout members are `u8 name[0xN];`, `struct mlx5_ifc_X_bits name;` or an inline union"),
            ),
            Member::Inline { members, .. } => report_bad(members, tag, diags),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bits_layouts_are_reported() {
        assert_eq!(
            layout_tag("struct mlx5_ifc_a_bits {;;}"),
            Some("mlx5_ifc_a_bits")
        );
        assert_eq!(
            layout_tag("union  mlx5_ifc_u_bits\n{"),
            Some("mlx5_ifc_u_bits")
        );
        assert_eq!(layout_tag("struct mlx5_ifc_helper { int x; }"), None);
        assert_eq!(layout_tag("struct mlx5_ifc_a_bits;"), None);
        assert_eq!(layout_tag("structmlx5_ifc_a_bits {"), None);
        assert_eq!(layout_tag("int x = 1;"), None);
    }
}
