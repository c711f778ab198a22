//! Reads and writes of a `loom::cell::UnsafeCell`, the models' stand-in for memory written
//! with plain (non-atomic) stores: a WQE, a CQE body, a command's input or output.
//!
//! loom records every such access and fails the run when two of them are not ordered by
//! happens-before. That failure (a "Causality violation") is what the models look for: it is
//! a torn or stale descriptor in the real code.

use loom::cell::UnsafeCell;

/// The cell's value, as the reader in the model sees it.
pub fn get<T: Copy>(cell: &UnsafeCell<T>) -> T {
    // SAFETY: loom's pointer is valid for the closure, and loom checks this read against every
    // write to the cell: an unordered pair ends the run before the value is used.
    cell.with(|p| unsafe { *p })
}

/// Stores `value` into the cell, as the writer in the model does.
pub fn set<T>(cell: &UnsafeCell<T>, value: T) {
    // SAFETY: as in `get`: a valid pointer for the closure, and loom fails the run on a write
    // that races another access to the cell.
    cell.with_mut(|p| unsafe { *p = value });
}
