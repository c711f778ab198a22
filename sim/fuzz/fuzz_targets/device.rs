//! Drives one device model with an arbitrary program: BAR accesses of every size at any
//! offset, arbitrary guest memory (commands, mailboxes, rings, WQEs, pointers anywhere),
//! well-delivered commands with arbitrary inputs, doorbells, frames, unmap/remap, bus
//! mastering off and on, and reset (see `sim/tests/drive`). A panic, a write outside guest
//! RAM, a device that stops answering, a timeout or a memory blow-up is a finding.
#![no_main]

#[path = "../../tests/drive/mod.rs"]
mod drive;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    drive::run(data);
});
