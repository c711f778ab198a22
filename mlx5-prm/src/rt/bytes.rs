//! Storage for views: anything that holds the bytes of a layout.
//!
//! Driver-owned buffers (`[u8; N]`, `&[u8]`, `&mut [u8]`, `Vec<u8>`, ...) get the traits
//! through their `AsRef<[u8]>` / `AsMut<[u8]>` implementations, the smoltcp `Packet<T>`
//! pattern. Memory the device may write at any time implements them through
//! [`DeviceBytes`](super::DeviceBytes), which never forms a Rust reference to those bytes.
//!
//! Offsets are byte offsets from the start of the storage. An access beyond the end panics
//! with the offset, the size and the storage's length; views check the length once, when they
//! are constructed. Every range is checked with checked arithmetic, so an offset near
//! `usize::MAX` is refused as out of range rather than wrapped around to a small one.

/// Read access to the bytes of a layout.
pub trait Bytes {
    /// A sub-range of this storage (for nested structures).
    type Sub<'a>: Bytes
    where
        Self: 'a;

    /// Length in bytes.
    fn len(&self) -> usize;

    /// True when the storage holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The byte at `at`.
    fn read_u8(&self, at: usize) -> u8;

    /// The big-endian dword at `at`.
    fn read_be32(&self, at: usize) -> u32;

    /// The big-endian 64-bit quantity at `at`.
    fn read_be64(&self, at: usize) -> u64 {
        // A saturated offset is out of range, so the second read refuses it rather than wrap.
        (u64::from(self.read_be32(at)) << 32) | u64::from(self.read_be32(at.saturating_add(4)))
    }

    /// Copies `out.len()` bytes starting at `at` into `out`.
    fn read_bytes(&self, at: usize, out: &mut [u8]);

    /// Bytes `at .. at + len` as storage of their own.
    fn sub(&self, at: usize, len: usize) -> Self::Sub<'_>;
}

/// Write access to the bytes of a layout.
pub trait BytesMut: Bytes {
    /// A writable sub-range of this storage (for nested structures).
    type SubMut<'a>: BytesMut
    where
        Self: 'a;

    /// Whether a setter may update a field that lies within one byte by reading and writing
    /// that byte alone, instead of its whole dword (see [`set32`](super::set32)).
    ///
    /// True for ordinary memory (the `AsMut<[u8]>` implementation below): nobody else sees
    /// the bytes while they are borrowed mutably, so the access width is unobservable and the
    /// narrower one is cheaper. False by default, which keeps every field write a dword
    /// access: storage another agent reads concurrently, or whose accesses have a width the
    /// hardware cares about, must opt in knowingly.
    const BYTE_RMW: bool = false;

    /// Writes the byte at `at`.
    fn write_u8(&mut self, at: usize, value: u8);

    /// Writes the big-endian dword at `at`.
    fn write_be32(&mut self, at: usize, value: u32);

    /// Writes the big-endian 64-bit quantity at `at`.
    fn write_be64(&mut self, at: usize, value: u64) {
        self.write_be32(at, (value >> 32) as u32);
        self.write_be32(at.saturating_add(4), value as u32);
    }

    /// Copies `data` into the storage starting at `at`.
    fn write_bytes(&mut self, at: usize, data: &[u8]);

    /// Bytes `at .. at + len` as writable storage of their own.
    fn sub_mut(&mut self, at: usize, len: usize) -> Self::SubMut<'_>;
}

/// Bytes `at .. at + n` of `bytes`; panics (without wrapping) when they are not all inside.
#[inline(always)]
#[track_caller]
fn range(bytes: &[u8], at: usize, n: usize) -> &[u8] {
    match at.checked_add(n) {
        Some(end) if end <= bytes.len() => &bytes[at..end],
        _ => out_of_range(at, n, bytes.len()),
    }
}

/// [`range`], writable.
#[inline(always)]
#[track_caller]
fn range_mut(bytes: &mut [u8], at: usize, n: usize) -> &mut [u8] {
    match at.checked_add(n) {
        Some(end) if end <= bytes.len() => &mut bytes[at..end],
        _ => out_of_range(at, n, bytes.len()),
    }
}

/// The panic of an access outside the storage, kept out of line so accessors stay small.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn out_of_range(at: usize, n: usize, len: usize) -> ! {
    panic!("byte access {at}+{n} beyond a {len}-byte buffer")
}

impl<T: AsRef<[u8]> + ?Sized> Bytes for T {
    type Sub<'a>
        = &'a [u8]
    where
        Self: 'a;

    #[inline(always)]
    fn len(&self) -> usize {
        self.as_ref().len()
    }

    #[inline(always)]
    fn read_u8(&self, at: usize) -> u8 {
        range(self.as_ref(), at, 1)[0]
    }

    #[inline(always)]
    fn read_be32(&self, at: usize) -> u32 {
        let b = range(self.as_ref(), at, 4);
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    #[inline(always)]
    fn read_be64(&self, at: usize) -> u64 {
        let b = range(self.as_ref(), at, 8);
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    #[inline(always)]
    fn read_bytes(&self, at: usize, out: &mut [u8]) {
        out.copy_from_slice(range(self.as_ref(), at, out.len()));
    }

    #[inline(always)]
    fn sub(&self, at: usize, len: usize) -> &[u8] {
        range(self.as_ref(), at, len)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized> BytesMut for T {
    type SubMut<'a>
        = &'a mut [u8]
    where
        Self: 'a;

    const BYTE_RMW: bool = true;

    #[inline(always)]
    fn write_u8(&mut self, at: usize, value: u8) {
        range_mut(self.as_mut(), at, 1)[0] = value;
    }

    #[inline(always)]
    fn write_be32(&mut self, at: usize, value: u32) {
        range_mut(self.as_mut(), at, 4).copy_from_slice(&value.to_be_bytes());
    }

    #[inline(always)]
    fn write_be64(&mut self, at: usize, value: u64) {
        range_mut(self.as_mut(), at, 8).copy_from_slice(&value.to_be_bytes());
    }

    #[inline(always)]
    fn write_bytes(&mut self, at: usize, data: &[u8]) {
        range_mut(self.as_mut(), at, data.len()).copy_from_slice(data);
    }

    #[inline(always)]
    fn sub_mut(&mut self, at: usize, len: usize) -> &mut [u8] {
        range_mut(self.as_mut(), at, len)
    }
}
