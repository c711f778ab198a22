//! Memory the device may write while the driver reads it: completion and event rings,
//! doorbell records, command queue entries.
//!
//! Forming a `&[u8]` or `&mut [u8]` to such memory would promise the compiler that nothing
//! else changes it, which the device breaks. [`DeviceBytes`] holds a raw pointer instead and
//! touches the memory only with relaxed atomic loads and stores of whole aligned dwords (or
//! single bytes, and aligned words in bulk copies; see [`super::shared`] for why atomic rather
//! than volatile), so every access really happens and no reference is ever created. Ordering
//! against the device (the owner-bit rule, doorbells) still needs the barriers of the driver's
//! backend; these accesses alone do not order.

use super::{Bytes, BytesMut};
use core::marker::PhantomData;
use core::ptr::NonNull;

/// A window onto device-shared memory, usable as the storage of any generated view.
///
/// Not `Copy`: a second handle onto the same bytes is made explicitly, with `clone`.
#[derive(Debug, Clone)]
pub struct DeviceBytes<'a> {
    ptr: NonNull<u8>,
    len: usize,
    _memory: PhantomData<&'a core::cell::UnsafeCell<[u8]>>,
}

impl<'a> DeviceBytes<'a> {
    /// A window of `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// For all of `'a`, `ptr .. ptr + len` must be valid for reads and writes (mapped DMA
    /// memory, for instance), must not be accessed through Rust references by anyone, and
    /// whoever accesses it concurrently (the device model's thread) must do so atomically.
    /// `ptr` must not be null.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        DeviceBytes {
            // SAFETY: the caller promises a valid, hence non-null, pointer.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            len,
            _memory: PhantomData,
        }
    }

    /// The first byte's address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The address of byte `at`, after checking that `at .. at + n` is inside the window.
    #[inline(always)]
    fn at(&self, at: usize, n: usize) -> *mut u8 {
        if !(at <= self.len && n <= self.len - at) {
            out_of_window(at, n, self.len);
        }
        // SAFETY: in bounds, checked above.
        unsafe { self.ptr.as_ptr().add(at) }
    }
}

/// The panic of an access outside a window, kept out of line so accessors stay small.
#[cold]
#[inline(never)]
#[track_caller]
fn out_of_window(at: usize, n: usize, len: usize) -> ! {
    panic!("device memory access {at}+{n} beyond a {len}-byte window")
}

impl Bytes for DeviceBytes<'_> {
    type Sub<'b>
        = DeviceBytes<'b>
    where
        Self: 'b;

    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn read_u8(&self, at: usize) -> u8 {
        let p = self.at(at, 1);
        // SAFETY: in bounds; `new`'s contract makes it valid for atomic reads.
        unsafe { super::shared::load8(p) }
    }

    #[inline(always)]
    fn read_be32(&self, at: usize) -> u32 {
        let p = self.at(at, 4);
        if (p as usize) % 4 == 0 {
            // SAFETY: in bounds, aligned, valid for atomic reads.
            u32::from_be(unsafe { super::shared::load32(p as *const u32) })
        } else {
            let mut b = [0u8; 4];
            self.read_bytes(at, &mut b);
            u32::from_be_bytes(b)
        }
    }

    /// One 8-byte access when aligned (the device sees the quantity whole), two dword
    /// accesses otherwise.
    #[inline(always)]
    fn read_be64(&self, at: usize) -> u64 {
        let p = self.at(at, 8);
        if (p as usize) % 8 == 0 {
            // SAFETY: in bounds, aligned, valid for atomic reads.
            u64::from_be(unsafe { super::shared::load64(p as *const u64) })
        } else {
            (u64::from(self.read_be32(at)) << 32) | u64::from(self.read_be32(at + 4))
        }
    }

    fn read_bytes(&self, at: usize, out: &mut [u8]) {
        let p = self.at(at, out.len());
        // SAFETY: in bounds (checked for the whole range), valid for atomic reads.
        unsafe { super::copy::load_into(p, out) }
    }

    fn sub(&self, at: usize, len: usize) -> DeviceBytes<'_> {
        let p = self.at(at, len);
        // SAFETY: a sub-range of a valid window, for a shorter lifetime.
        unsafe { DeviceBytes::new(p, len) }
    }
}

impl BytesMut for DeviceBytes<'_> {
    type SubMut<'b>
        = DeviceBytes<'b>
    where
        Self: 'b;

    /// Field setters keep whole-dword accesses here. Hand-over words are written through
    /// them (a command entry's `ownership`, set by the driver and cleared by the device
    /// model; CQE and EQE `owner` bits), and the other side reads those words as dwords: a
    /// byte store into a dword another thread loads with a 32-bit atomic is a mixed-size
    /// race (see [`super::shared`]), undefined in the Rust memory model and reported by
    /// Miri. The saving (a few instructions while a WQE or context is built) is not worth
    /// auditing every such word.
    const BYTE_RMW: bool = false;

    #[inline(always)]
    fn write_u8(&mut self, at: usize, value: u8) {
        let p = self.at(at, 1);
        // SAFETY: in bounds, valid for atomic writes.
        unsafe { super::shared::store8(p, value) }
    }

    #[inline(always)]
    fn write_be32(&mut self, at: usize, value: u32) {
        let p = self.at(at, 4);
        if (p as usize) % 4 == 0 {
            // SAFETY: in bounds, aligned, valid for atomic writes.
            unsafe { super::shared::store32(p as *mut u32, value.to_be()) }
        } else {
            self.write_bytes(at, &value.to_be_bytes());
        }
    }

    /// One 8-byte access when aligned, two dword accesses otherwise.
    #[inline(always)]
    fn write_be64(&mut self, at: usize, value: u64) {
        let p = self.at(at, 8);
        if (p as usize) % 8 == 0 {
            // SAFETY: in bounds, aligned, valid for atomic writes.
            unsafe { super::shared::store64(p as *mut u64, value.to_be()) }
        } else {
            self.write_be32(at, (value >> 32) as u32);
            self.write_be32(at + 4, value as u32);
        }
    }

    fn write_bytes(&mut self, at: usize, data: &[u8]) {
        let p = self.at(at, data.len());
        // SAFETY: in bounds (checked for the whole range), valid for atomic writes.
        unsafe { super::copy::store_from(p, data) }
    }

    fn sub_mut(&mut self, at: usize, len: usize) -> DeviceBytes<'_> {
        self.sub(at, len)
    }
}
