//! A layout's fields as a stable text table (`Cqe64::LAYOUT`, printed with `{}`): what a crate
//! that depends on some layouts snapshots (with insta, say), so that a bump of this crate that
//! moves, narrows or removes one of those fields fails its tests with a readable diff.
//!
//! The form is a contract: the first line `NAME: SIZE bytes`, then one line per field in
//! offset order, `POSITION  NAME  (bit OFFSET, WIDTH bits)` with POSITION left-aligned in 16
//! columns, POSITION in the PRM's notation
//! (`0x0c[23:0]`; `0x10..0x50` for a field of whole dwords; `bit 0x.. +N` otherwise) and
//! OFFSET the kernel's MSB-first bit number. Arrays show one element's width. Lines are only
//! added to this description, never changed.

use super::Field;
use core::fmt;

/// One layout's name, size and fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The layout's name as the spec writes it.
    pub name: &'static str,
    /// Size of the fixed part in bytes.
    pub size: usize,
    /// Every field, by offset.
    pub fields: &'static [Field],
}

/// A field's place in the PRM's notation: MSB-first bit offset and width.
pub(crate) struct Position(pub(crate) usize, pub(crate) u32);

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (bit, width) = (self.0, self.1 as usize);
        let dword = bit / 32;
        let in_dword = bit % 32;
        if width == 0 {
            write!(f, "0x{:02x}[]", bit / 8)
        } else if in_dword + width <= 32 {
            let hi = 31 - in_dword;
            let lo = hi + 1 - width;
            if width == 1 {
                write!(f, "0x{:02x}[{hi}]", dword * 4)
            } else {
                write!(f, "0x{:02x}[{hi}:{lo}]", dword * 4)
            }
        } else if in_dword == 0 && width % 32 == 0 && width == 64 {
            write!(f, "0x{:02x}[63:0]", dword * 4)
        } else if in_dword == 0 && width % 32 == 0 {
            write!(f, "0x{:02x}..0x{:02x}", bit / 8, (bit + width) / 8)
        } else {
            write!(f, "bit 0x{bit:x} +{width}")
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {} bytes", self.name, self.size)?;
        for field in self.fields {
            writeln!(
                f,
                "  {:<16}  {}  (bit 0x{:x}, {} bit{})",
                PadPosition(Position(field.bit_offset, field.width)),
                field.name,
                field.bit_offset,
                field.width,
                if field.width == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

/// Left-aligns a [`Position`] in the column the table gives it, without allocating.
struct PadPosition(Position);

impl fmt::Display for PadPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Count(usize);
        impl fmt::Write for Count {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0 += s.len();
                Ok(())
            }
        }
        let mut n = Count(0);
        fmt::write(&mut n, format_args!("{}", self.0))?;
        write!(f, "{}", self.0)?;
        let pad = f.width().unwrap_or(0).saturating_sub(n.0);
        for _ in 0..pad {
            f.write_str(" ")?;
        }
        Ok(())
    }
}
