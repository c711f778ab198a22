//! The errors views report. None of them loses information: the raw value, the field and the
//! sizes involved are all carried.

use core::fmt;

/// A buffer too short for the layout it was to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutError {
    /// The layout's name as the spec writes it.
    pub layout: &'static str,
    /// Bytes the layout needs.
    pub needed: usize,
    /// Bytes the buffer has.
    pub actual: usize,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "buffer of {} bytes is too short for `{}` ({} bytes)",
            self.actual, self.layout, self.needed
        )
    }
}

impl core::error::Error for LayoutError {}

/// A field holds a number its enum does not name (a newer device, or a corrupted buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownValue {
    /// The enum's name as the spec writes it.
    pub enumeration: &'static str,
    /// The raw value read.
    pub raw: u64,
}

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "0x{:x} is not a value of `{}`",
            self.raw, self.enumeration
        )
    }
}

impl core::error::Error for UnknownValue {}

/// A value too wide for its field, or an index past an array's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// The field's name as the spec writes it.
    pub field: &'static str,
    /// The value (or index) offered.
    pub value: u64,
    /// The largest value (or index) the field accepts.
    pub max: u64,
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "0x{:x} does not fit `{}` (at most 0x{:x})",
            self.value, self.field, self.max
        )
    }
}

impl core::error::Error for Overflow {}
