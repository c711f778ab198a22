//! Register blocks (the initialization segment, UAR pages): only 32-bit big-endian volatile
//! accesses, as the PRM requires of MMIO.
//!
//! A register block is a generated view whose storage is [`MmioBytes`]: every field access
//! becomes 32-bit register reads and writes through [`Mmio32`], so the same code drives a real
//! BAR ([`MmioPtr`]), the device model's register file, or a test double ([`RegisterFile`]).

use super::{Bytes, BytesMut};
use core::cell::Cell;
use core::ptr::NonNull;

/// 32-bit register access at byte offsets inside a register block. Values are in host order;
/// implementations convert to and from the device's big-endian order.
pub trait Mmio32 {
    /// Reads the register at byte offset `offset` (a multiple of 4).
    fn read32(&self, offset: usize) -> u32;
    /// Writes the register at byte offset `offset` (a multiple of 4).
    fn write32(&self, offset: usize, value: u32);
}

impl<T: Mmio32 + ?Sized> Mmio32 for &T {
    fn read32(&self, offset: usize) -> u32 {
        (**self).read32(offset)
    }
    fn write32(&self, offset: usize, value: u32) {
        (**self).write32(offset, value)
    }
}

/// A mapped register block: volatile big-endian dword accesses through a raw pointer.
#[derive(Debug)]
pub struct MmioPtr {
    base: NonNull<u32>,
    len: usize,
}

impl MmioPtr {
    /// A register block of `len` bytes mapped at `base`.
    ///
    /// # Safety
    ///
    /// `base .. base + len` must stay mapped, 4-byte aligned and valid for volatile 32-bit
    /// reads and writes for as long as the value lives, and must not be accessed through Rust
    /// references.
    pub unsafe fn new(base: *mut u8, len: usize) -> Self {
        MmioPtr {
            // SAFETY: the caller promises a valid mapping.
            base: unsafe { NonNull::new_unchecked(base.cast()) },
            len,
        }
    }

    fn reg(&self, offset: usize) -> *mut u32 {
        // `offset + 4` is checked, not wrapped: near `usize::MAX` it would come out small and
        // pass, pointing before the mapping.
        let inside = offset.checked_add(4).is_some_and(|end| end <= self.len);
        if offset % 4 != 0 || !inside {
            outside(offset, 4, self.len);
        }
        // SAFETY: in bounds and aligned, checked above.
        unsafe { self.base.as_ptr().add(offset / 4) }
    }
}

impl Mmio32 for MmioPtr {
    fn read32(&self, offset: usize) -> u32 {
        // SAFETY: `reg` checks bounds and alignment; `new`'s contract gives validity.
        u32::from_be(unsafe { self.reg(offset).read_volatile() })
    }
    fn write32(&self, offset: usize, value: u32) {
        // SAFETY: as for `read32`.
        unsafe { self.reg(offset).write_volatile(value.to_be()) }
    }
}

/// An in-memory register block of `N` dwords: a test double, and the register storage of
/// simple models.
#[derive(Debug)]
pub struct RegisterFile<const N: usize> {
    regs: [Cell<u32>; N],
}

impl<const N: usize> Default for RegisterFile<N> {
    fn default() -> Self {
        RegisterFile {
            regs: core::array::from_fn(|_| Cell::new(0)),
        }
    }
}

impl<const N: usize> RegisterFile<N> {
    fn reg(&self, offset: usize) -> &Cell<u32> {
        match self.regs.get(offset / 4) {
            Some(r) if offset % 4 == 0 => r,
            _ => outside(offset, 4, N.saturating_mul(4)),
        }
    }
}

impl<const N: usize> Mmio32 for RegisterFile<N> {
    fn read32(&self, offset: usize) -> u32 {
        self.reg(offset).get()
    }
    fn write32(&self, offset: usize, value: u32) {
        self.reg(offset).set(value)
    }
}

/// The panic of a register access outside its block (or not on a dword), out of line.
#[cold]
#[inline(never)]
#[track_caller]
fn outside(offset: usize, n: usize, len: usize) -> ! {
    panic!("register access 0x{offset:x}+{n} outside a 0x{len:x}-byte block (or not dword-aligned)")
}

/// View storage over a register block: dword reads and writes only, at `base + offset`.
///
/// Byte-sized accesses, which the PRM does not allow on MMIO, are done as whole dwords: a
/// byte read reads its dword; a byte write reads, modifies and writes its dword.
#[derive(Debug, Clone, Copy)]
pub struct MmioBytes<R> {
    io: R,
    base: usize,
    len: usize,
}

impl<R: Mmio32> MmioBytes<R> {
    /// The `len` bytes of the register block `io`.
    pub fn new(io: R, len: usize) -> Self {
        MmioBytes { io, base: 0, len }
    }

    /// The register access this storage goes through.
    pub fn io(&self) -> &R {
        &self.io
    }

    /// The register's offset in the block `io` reaches, after checking `at .. at + 4` is
    /// inside this storage. `base + at` cannot overflow then: `base + len` is at most the
    /// length of the storage this one was cut from.
    fn reg(&self, at: usize) -> usize {
        self.check(at, 4);
        self.base + at
    }

    /// Panics unless bytes `at .. at + n` are inside this storage (checked, never wrapped).
    #[track_caller]
    fn check(&self, at: usize, n: usize) {
        if at.checked_add(n).is_none_or(|end| end > self.len) {
            outside(at, n, self.len);
        }
    }
}

impl<R: Mmio32> Bytes for MmioBytes<R> {
    type Sub<'a>
        = MmioBytes<&'a R>
    where
        Self: 'a;

    fn len(&self) -> usize {
        self.len
    }

    fn read_u8(&self, at: usize) -> u8 {
        let word = self.read_be32(at & !3);
        word.to_be_bytes()[at % 4]
    }

    #[inline]
    fn read_be32(&self, at: usize) -> u32 {
        self.io.read32(self.reg(at))
    }

    fn read_bytes(&self, at: usize, out: &mut [u8]) {
        self.check(at, out.len());
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.read_u8(at + i);
        }
    }

    fn sub(&self, at: usize, len: usize) -> MmioBytes<&R> {
        self.check(at, len);
        if at % 4 != 0 {
            outside(at, len, self.len);
        }
        MmioBytes {
            io: &self.io,
            base: self.base + at,
            len,
        }
    }
}

impl<R: Mmio32> BytesMut for MmioBytes<R> {
    type SubMut<'a>
        = MmioBytes<&'a R>
    where
        Self: 'a;

    /// Field setters read and write whole registers: the PRM allows only 32-bit accesses,
    /// so a byte read-modify-write would be done here as a register read, then a second
    /// read and a write for the byte store, where the dword path reads once and writes once.
    const BYTE_RMW: bool = false;

    fn write_u8(&mut self, at: usize, value: u8) {
        let mut b = self.read_be32(at & !3).to_be_bytes();
        b[at % 4] = value;
        self.write_be32(at & !3, u32::from_be_bytes(b));
    }

    #[inline]
    fn write_be32(&mut self, at: usize, value: u32) {
        self.io.write32(self.reg(at), value)
    }

    fn write_bytes(&mut self, at: usize, data: &[u8]) {
        self.check(at, data.len());
        for (i, d) in data.iter().enumerate() {
            self.write_u8(at + i, *d);
        }
    }

    fn sub_mut(&mut self, at: usize, len: usize) -> MmioBytes<&R> {
        self.sub(at, len)
    }
}
