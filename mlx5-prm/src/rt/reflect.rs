//! A table of every scalar field of every layout, with functions that read and write it
//! through the generated accessors: for generic tools (dumpers, fuzzers) and for the property
//! tests that check each accessor against an independent bit-level oracle.

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
    /// Reads element `i` through the generated getter (`None` for write-only registers).
    pub get: Option<fn(&[u8], usize) -> u64>,
    /// Writes element `i` through the generated setter, the value masked to the width
    /// (`None` for read-only registers).
    pub set: Option<fn(&mut [u8], usize, u64)>,
}

/// A nested structure or union field: where its sub-view starts, as the generated accessor
/// computes it.
#[derive(Clone, Copy)]
pub struct NestedAccess {
    /// The field's name.
    pub name: &'static str,
    /// Byte offset the spec gives.
    pub byte_offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// The byte offset of the sub-view the generated accessor returns.
    pub view_offset: fn(&[u8]) -> usize,
}

/// One layout's table.
#[derive(Clone, Copy)]
pub struct LayoutAccess {
    /// The layout's name.
    pub name: &'static str,
    /// Size of its fixed part in bytes.
    pub size: usize,
    /// Scalar fields and arrays of scalars.
    pub fields: &'static [FieldAccess],
    /// Nested structures and unions.
    pub nested: &'static [NestedAccess],
}
