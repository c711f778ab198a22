//! Tables that describe every layout and union of the spec, with functions that read and
//! write fields through the generated accessors: for generic tools (dumpers, tracers,
//! fuzzers) and for the property tests that check each accessor against an independent
//! bit-level oracle.
//!
//! A [`LayoutAccess`] lists a structure's scalar fields and its nested fields; a nested field
//! names its layout (a structure, or a union described by a [`UnionAccess`]), so a tool can
//! walk any layout down to its scalars from the tables alone. The generated crate lists them
//! all (`ALL_LAYOUTS`, `ALL_UNIONS`) and finds them by name (`layout_by_name`,
//! `union_by_name`, a binary search over a name-sorted index, [`by_name`]).
//!
//! The same tables drive the decoding `Debug` of every view ([`Decoded`], feature `debug`):
//! a field is shown from its table entry, so what a tool reads through the tables and what
//! `{:?}` prints cannot disagree. The accessor functions in the tables ([`FieldAccess::get`],
//! [`FieldAccess::set`], [`NestedAccess::view_offset`]) are `None` unless the crate is built
//! with feature `reflect`: decoding needs only offsets and widths, and leaving the functions
//! out keeps the `debug` feature's build cost small.

pub use super::decoded::{debug_union, Decoded};

/// How a scalar field's value is to be read: what the spec says it holds.
#[derive(Clone, Copy, Debug)]
pub enum ValueKind {
    /// A number.
    Number,
    /// A one-bit flag (`bool` in the accessors).
    Flag,
    /// A value of a spec enum.
    Enum {
        /// The enum's name as the spec writes it.
        name: &'static str,
        /// The spec's name of a raw value, or `None` when the enum names no such value.
        value_name: fn(u64) -> Option<&'static str>,
    },
    /// Opaque bytes (a MAC or GID, say), wider than any number: no getter returns them as
    /// one, so [`FieldAccess::get`] and [`FieldAccess::set`] are `None`.
    Bytes,
}

/// One scalar field (or array element) of a layout, with its generated accessors.
#[derive(Clone, Copy)]
pub struct FieldAccess {
    /// The field's name as the spec writes it.
    pub name: &'static str,
    /// Absolute MSB-first bit offset of element 0.
    pub bit_offset: usize,
    /// Bits per element.
    pub width: u32,
    /// Number of elements (1 for a plain field, 0 for a trailing array).
    pub count: usize,
    /// True for a trailing array, whose length the buffer decides.
    pub trailing: bool,
    /// What the field holds.
    pub kind: ValueKind,
    /// False for a write-only register field: reading it tells nothing.
    pub readable: bool,
    /// Reads element `i` through the generated getter (`None` for write-only registers, for
    /// [`ValueKind::Bytes`], and without feature `reflect`).
    pub get: Option<fn(&[u8], usize) -> u64>,
    /// Writes element `i` through the generated setter, the value masked to the width
    /// (`None` for read-only registers, for [`ValueKind::Bytes`], and without feature
    /// `reflect`).
    pub set: Option<fn(&mut [u8], usize, u64)>,
}

impl FieldAccess {
    /// True for a number, flag or enum: a value [`Self::get`] can return.
    pub fn is_scalar(&self) -> bool {
        !matches!(self.kind, ValueKind::Bytes)
    }
}

/// What a nested field holds: the kind of its [`NestedAccess::layout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NestedKind {
    /// A structure: its table is a [`LayoutAccess`] (`layout_by_name`).
    Struct,
    /// A union: its table is a [`UnionAccess`] (`union_by_name`).
    Union,
}

/// Where the generated accessor puts element `i`'s sub-view in a parent's bytes (see
/// [`NestedAccess::view_offset`]).
pub type ViewOffset = fn(&[u8], usize) -> Option<usize>;

/// The table of a nested field's layout.
#[derive(Clone, Copy, Debug)]
pub enum NestedTable {
    /// A structure.
    Struct(&'static LayoutAccess),
    /// A union.
    Union(&'static UnionAccess),
}

/// A nested structure or union field, or an array of them: which layout it has, where its
/// elements are and where the generated accessor puts each one's sub-view.
#[derive(Clone, Copy)]
pub struct NestedAccess {
    /// The field's name.
    pub name: &'static str,
    /// The name of the nested layout (of one element, for arrays).
    pub layout: &'static str,
    /// The nested layout's own table.
    pub table: NestedTable,
    /// Byte offset the spec gives (of element 0, for arrays).
    pub byte_offset: usize,
    /// Size of one element in bytes: the nested layout's size.
    pub size: usize,
    /// Number of elements: 1 for a plain nested field, the count of a fixed array, 0 for a
    /// trailing array (as many as the buffer holds).
    pub count: usize,
    /// True for a trailing array.
    pub trailing: bool,
    /// Bytes from one element to the next (the element size: arrays are packed).
    pub stride: usize,
    /// True when the sub-view runs on to the end of the buffer: a nested structure that ends
    /// its parent and itself ends in a trailing array (CREATE_SQ's `ctx`), so the bytes past
    /// the parent's fixed part belong to it.
    pub runs_on: bool,
    /// The byte offset of element `i`'s sub-view as the generated accessor computes it, or
    /// `None` when `i` is past the last element (for a trailing array: past the buffer) or
    /// the buffer is shorter than the parent's fixed part. The function itself is `None`
    /// without feature `reflect`.
    pub view_offset: Option<ViewOffset>,
}

impl NestedAccess {
    /// Whether the nested layout is a structure or a union.
    pub fn kind(&self) -> NestedKind {
        match self.table {
            NestedTable::Struct(_) => NestedKind::Struct,
            NestedTable::Union(_) => NestedKind::Union,
        }
    }
}

/// One layout's table.
#[derive(Clone, Copy)]
pub struct LayoutAccess {
    /// The layout's name.
    pub name: &'static str,
    /// The name of its generated view type (`Cqc` for `cqc`).
    pub type_name: &'static str,
    /// Size of its fixed part in bytes.
    pub size: usize,
    /// Scalar fields, opaque bytes, and arrays of them.
    pub fields: &'static [FieldAccess],
    /// Nested structures and unions, and arrays of them.
    pub nested: &'static [NestedAccess],
    /// The bits of the fixed part that no field covers, per dword: `(byte offset, mask)` for
    /// each dword with any (empty for register blocks, whose reserved bits mean nothing).
    pub reserved: &'static [(u32, u32)],
}

impl core::fmt::Debug for LayoutAccess {
    /// The table's summary, not its contents (which [`Decoded`] shows for some bytes).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LayoutAccess")
            .field("name", &self.name)
            .field("size", &self.size)
            .field("fields", &self.fields.len())
            .field("nested", &self.nested.len())
            .finish()
    }
}

impl LayoutAccess {
    /// The scalar field called `name`.
    pub fn field(&self, name: &str) -> Option<&'static FieldAccess> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The nested field called `name`.
    pub fn nested_field(&self, name: &str) -> Option<&'static NestedAccess> {
        self.nested.iter().find(|n| n.name == name)
    }
}

/// One member of a union: a structure the union's bytes can be read as.
#[derive(Clone, Copy, Debug)]
pub struct UnionMemberAccess {
    /// The member's name.
    pub name: &'static str,
    /// The structure it is read as (a [`LayoutAccess`] of that name exists).
    pub layout: &'static str,
    /// That structure's table.
    pub table: &'static LayoutAccess,
    /// The selector value that picks it (after the selector's shift), when the union has a
    /// selector.
    pub when: Option<u64>,
}

/// The field that picks a union's member: `member.when == field >> shift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectorAccess {
    /// The layout that holds the field (e.g. `query_hca_cap_in`).
    pub layout: &'static str,
    /// The field's path inside that layout, dotted through nested structures (`op_mod`,
    /// `ppcnt_reg.grp` is written as layout `ppcnt_reg`, field `grp`).
    pub field: &'static str,
    /// Absolute MSB-first bit offset of the field in [`Self::layout`].
    pub bit_offset: usize,
    /// Its width in bits (at most 64).
    pub width: u32,
    /// Right shift applied to the field's value before comparing with `when`.
    pub shift: u32,
}

impl SelectorAccess {
    /// The selector field's raw value in `bytes` (storage of [`Self::layout`]), or `None`
    /// when `bytes` is too short to hold it.
    pub fn read(&self, bytes: &[u8]) -> Option<u64> {
        read_bits(bytes, self.bit_offset, self.width)
    }
}

/// Bits `bit .. bit + width` (MSB-first, 1 ≤ `width` ≤ 64) of `bytes` as a number, or `None`
/// when they do not lie inside `bytes`. Unlike the generated getters it needs no alignment:
/// a selector's field may sit anywhere.
pub fn read_bits(bytes: &[u8], bit: usize, width: u32) -> Option<u64> {
    super::decoded::bits_of(bytes, bit, width)
}

/// One union's table.
#[derive(Clone, Copy, Debug)]
pub struct UnionAccess {
    /// The union's name.
    pub name: &'static str,
    /// The name of its generated view type.
    pub type_name: &'static str,
    /// Its size in bytes.
    pub size: usize,
    /// Its members, in spec order.
    pub members: &'static [UnionMemberAccess],
    /// The field that picks the member, when the spec names one.
    pub selector: Option<SelectorAccess>,
}

impl UnionAccess {
    /// The member the selector's raw value `raw` picks (the shift applied here), or `None`
    /// when the union has no selector or no member has that value.
    pub fn member_for(&self, raw: u64) -> Option<&'static UnionMemberAccess> {
        let sel = self.selector?;
        let key = raw.checked_shr(sel.shift).unwrap_or(0);
        self.members.iter().find(|m| m.when == Some(key))
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&'static UnionMemberAccess> {
        self.members.iter().find(|m| m.name == name)
    }
}

/// A table entry with a name: what [`by_name`] searches.
pub trait Named {
    /// The entry's name.
    fn name(&self) -> &'static str;
}

impl Named for LayoutAccess {
    fn name(&self) -> &'static str {
        self.name
    }
}

impl Named for UnionAccess {
    fn name(&self) -> &'static str {
        self.name
    }
}

/// The entry of `table` called `name`, found by binary search over `order`: the indices of
/// `table` sorted by name (the generator emits both). An index outside `table` is skipped
/// as "not found" rather than trusted.
pub fn by_name<T: Named>(table: &'static [T], order: &[u32], name: &str) -> Option<&'static T> {
    let at = order
        .binary_search_by(|&i| match table.get(i as usize) {
            Some(t) => t.name().cmp(name),
            None => core::cmp::Ordering::Less,
        })
        .ok()?;
    table.get(*order.get(at)? as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_bits_takes_any_alignment_and_refuses_short_buffers() {
        let b = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11];
        assert_eq!(read_bits(&b, 0, 16), Some(0x1234));
        assert_eq!(read_bits(&b, 4, 8), Some(0x23));
        assert_eq!(read_bits(&b, 0x30, 16), Some(0xdef0));
        assert_eq!(read_bits(&b, 0, 64), Some(0x1234_5678_9abc_def0));
        assert_eq!(read_bits(&b, 4, 64), Some(0x2345_6789_abcd_ef01));
        assert_eq!(read_bits(&b, 71, 1), Some(1));
        assert_eq!(read_bits(&b, 66, 8), None);
        assert_eq!(read_bits(&b, usize::MAX, 8), None);
        assert_eq!(read_bits(&b, 0, 0), None);
        assert_eq!(read_bits(&b, 0, 65), None);
    }

    const EMPTY: LayoutAccess = LayoutAccess {
        name: "la",
        type_name: "La",
        size: 4,
        fields: &[],
        nested: &[],
        reserved: &[],
    };

    #[test]
    fn member_for_applies_the_shift() {
        const U: UnionAccess = UnionAccess {
            name: "u",
            type_name: "U",
            size: 4,
            members: &[
                UnionMemberAccess {
                    name: "a",
                    layout: "la",
                    table: &EMPTY,
                    when: Some(0),
                },
                UnionMemberAccess {
                    name: "b",
                    layout: "lb",
                    table: &EMPTY,
                    when: Some(3),
                },
            ],
            selector: Some(SelectorAccess {
                layout: "s",
                field: "op_mod",
                bit_offset: 0x30,
                width: 16,
                shift: 1,
            }),
        };
        assert_eq!(U.member_for(7).map(|m| m.name), Some("b"));
        assert_eq!(U.member_for(6).map(|m| m.name), Some("b"));
        assert_eq!(U.member_for(1).map(|m| m.name), Some("a"));
        assert!(U.member_for(4).is_none());
        let none = UnionAccess {
            selector: None,
            ..U
        };
        assert!(none.member_for(0).is_none());
    }

    #[test]
    fn by_name_searches_the_sorted_index() {
        static T: [UnionAccess; 3] = [
            UnionAccess {
                name: "zeta",
                type_name: "T",
                size: 4,
                members: &[],
                selector: None,
            },
            UnionAccess {
                name: "alpha",
                type_name: "T",
                size: 4,
                members: &[],
                selector: None,
            },
            UnionAccess {
                name: "mu",
                type_name: "T",
                size: 4,
                members: &[],
                selector: None,
            },
        ];
        let order = [1, 2, 0];
        for n in ["alpha", "mu", "zeta"] {
            assert_eq!(by_name(&T, &order, n).map(|u| u.name), Some(n));
        }
        assert!(by_name(&T, &order, "beta").is_none());
        assert!(by_name(&T, &[1, 2, 9], "zeta").is_none());
    }
}
