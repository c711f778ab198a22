//! A flexible array laid over reserved room: `union { u8 reserved_at_X[N];
//! DECLARE_FLEX_ARRAY(T, name); };` (7.x's `query_esw_functions_out`).
//!
//! In C the flexible array adds nothing to the size, so the union is N bits and the structure
//! keeps its full `sizeof` (the smallest buffer the kernel sizes for the command), while `name`
//! addresses a list that starts at the union and may run past the structure's end. The spec
//! language has no such array: its trailing array starts exactly at the structure's end. The
//! importer keeps the size (a buffer built from the spec is never smaller than the kernel's)
//! and writes `name` as the elements that fit in the room, `count: N / size(T)`, with the rest
//! of the room reserved; a warning says the list runs on past them.

use super::Member;

/// For the members of an anonymous union: the flexible array, when they are exactly one
/// flexible array and reserved `u8` fields (at least one).
pub fn over_reserved(members: &[Member]) -> Option<&Member> {
    let mut flex = None;
    let mut reserved = 0;
    for m in members {
        match m {
            Member::Field { name, .. } if name.starts_with("reserved") => reserved += 1,
            Member::Nested {
                count: Some(None), ..
            } if flex.is_none() => flex = Some(m),
            _ => return None,
        }
    }
    flex.filter(|_| reserved > 0)
}

/// The members the union is written as, from the room's and an element's width in bits: the
/// array of the elements that fit (none when not one fits), then the rest of the room as
/// reserved bits; and the warning that says so. `None` when `flex` is not a flexible array.
pub fn as_fixed(flex: &Member, room: u64, elem: u64) -> Option<(Vec<Member>, String)> {
    let Member::Nested {
        union,
        tag,
        name,
        span,
        count: Some(None),
    } = flex
    else {
        return None;
    };
    let fit = room.checked_div(elem).unwrap_or(0);
    let mut out = Vec::new();
    if fit > 0 {
        out.push(Member::Nested {
            union: *union,
            tag: tag.clone(),
            name: name.clone(),
            count: Some(Some(fit)),
            span: *span,
        });
    }
    let rest = room - fit * elem;
    if rest > 0 {
        out.push(Member::Field {
            name: format!("reserved_room_{name}"),
            dims: vec![Some(rest)],
            span: *span,
        });
    }
    let warning = format!(
        "`{name}` is a flexible array over {room:#x} reserved bits: written as the {fit} \
         element(s) of {elem:#x} bits that fit there (the list runs on past them; a spec \
         trailing array starts at the end)"
    );
    Some((out, warning))
}
