//! Runs the driver against a device whose writes are forged from the fuzzer's bytes (see
//! `driver/tests/forged/mod.rs` and `driver::backend::forge`): the first byte chooses the
//! sites (0: all), the rest are the decisions. A panic, a broken rule (an untyped error,
//! memory left outside the quarantine, pages the device holds that are not in it), a
//! timeout or a memory blow-up is a finding.
#![no_main]

#[path = "../../tests/forged/mod.rs"]
mod forged;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (sites, decisions) = forged::decode(data);
    let out = forged::run(decisions, sites);
    assert!(
        out.findings.is_empty(),
        "{:#?}\nerrors: {:#?}\nlast forgeries: {:#?}",
        out.findings,
        out.errors,
        out.recent
    );
});
