//! Arbitrary frames into the RoCEv2 receive path of a device with an RC QP in RTS, a RoCE
//! address and a memory region: most inputs become packets with right headers and ICRC (the
//! input picks opcode, QPN, PSN, extended headers, payload; a flag corrupts them after
//! sealing), some raw frames, with ticks, receive and send posts and reconnects in between
//! (see `sim/tests/roce_bad_input/fuzz.rs`). A panic, a DMA write outside guest RAM or the
//! memory region, a device that no longer ACKs a good send, a timeout or a memory blow-up is
//! a finding.
#![no_main]

#[path = "../../tests/roce_bad_input"]
mod roce_bad_input {
    pub mod dut;
    pub mod frame;
    pub mod fuzz;
    pub mod rig;
}

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roce_bad_input::fuzz::run(data);
});
