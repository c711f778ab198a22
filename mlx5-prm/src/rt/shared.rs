//! Loads and stores on memory another agent writes concurrently: DMA memory the device (or the
//! device model's firmware thread) reads and writes while the driver does.
//!
//! Each access is a relaxed atomic of the access's own width, made through
//! `AtomicU*::from_ptr`. Volatile accesses would also happen exactly once and in program
//! order, but in the Rust memory model two threads touching the same bytes with volatile
//! accesses, one of them writing, is a data race and so undefined behaviour; with the model on
//! its own thread that is exactly what happens (Miri reports it). Relaxed atomics of the same
//! width on both sides are defined, and on x86-64 and AArch64 they compile to the same plain
//! loads and stores as volatile ones. They order nothing: the owner-bit and doorbell protocols
//! still use the fences of the driver's `Barriers` and of the model.
//!
//! Both sides of a hand-over word must use the same width at the same address (a 4-byte load
//! racing an 8-byte store is still a race): the device model writes the dword that carries a
//! CQE's or EQE's owner bit as the dword the driver polls.
//!
//! Memory-mapped registers (BARs) are not this memory: [`super::MmioBytes`] keeps volatile
//! accesses there, since an atomic instruction on device registers is not what they expect.

use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

/// Loads the byte at `p`.
///
/// # Safety
///
/// `p` must be valid for reads, and every concurrent access to that byte must be atomic.
#[inline(always)]
pub unsafe fn load8(p: *const u8) -> u8 {
    // SAFETY: valid and only accessed atomically (the caller's contract); a byte is aligned.
    unsafe { AtomicU8::from_ptr(p.cast_mut()) }.load(Relaxed)
}

/// Loads the 2 bytes at `p` (native byte order).
///
/// # Safety
///
/// As [`load8`], and `p` must be 2-byte aligned.
#[inline(always)]
pub unsafe fn load16(p: *const u16) -> u16 {
    // SAFETY: valid, aligned, only accessed atomically (the caller's contract).
    unsafe { AtomicU16::from_ptr(p.cast_mut()) }.load(Relaxed)
}

/// Loads the 4 bytes at `p` (native byte order).
///
/// # Safety
///
/// As [`load8`], and `p` must be 4-byte aligned.
#[inline(always)]
pub unsafe fn load32(p: *const u32) -> u32 {
    // SAFETY: valid, aligned, only accessed atomically (the caller's contract).
    unsafe { AtomicU32::from_ptr(p.cast_mut()) }.load(Relaxed)
}

/// Loads the 8 bytes at `p` (native byte order).
///
/// # Safety
///
/// As [`load8`], and `p` must be 8-byte aligned.
#[inline(always)]
pub unsafe fn load64(p: *const u64) -> u64 {
    // SAFETY: valid, aligned, only accessed atomically (the caller's contract).
    unsafe { AtomicU64::from_ptr(p.cast_mut()) }.load(Relaxed)
}

/// Stores the byte `v` at `p`.
///
/// # Safety
///
/// `p` must be valid for writes, and every concurrent access to that byte must be atomic.
#[inline(always)]
pub unsafe fn store8(p: *mut u8, v: u8) {
    // SAFETY: valid and only accessed atomically (the caller's contract).
    unsafe { AtomicU8::from_ptr(p) }.store(v, Relaxed)
}

/// Stores `v` (native byte order) at `p`.
///
/// # Safety
///
/// As [`store8`], and `p` must be 2-byte aligned.
#[inline(always)]
pub unsafe fn store16(p: *mut u16, v: u16) {
    // SAFETY: valid, aligned, only accessed atomically (the caller's contract).
    unsafe { AtomicU16::from_ptr(p) }.store(v, Relaxed)
}

/// Stores `v` (native byte order) at `p`.
///
/// # Safety
///
/// As [`store8`], and `p` must be 4-byte aligned.
#[inline(always)]
pub unsafe fn store32(p: *mut u32, v: u32) {
    // SAFETY: valid, aligned, only accessed atomically (the caller's contract).
    unsafe { AtomicU32::from_ptr(p) }.store(v, Relaxed)
}

/// Stores `v` (native byte order) at `p`.
///
/// # Safety
///
/// As [`store8`], and `p` must be 8-byte aligned.
#[inline(always)]
pub unsafe fn store64(p: *mut u64, v: u64) {
    // SAFETY: valid, aligned, only accessed atomically (the caller's contract).
    unsafe { AtomicU64::from_ptr(p) }.store(v, Relaxed)
}
