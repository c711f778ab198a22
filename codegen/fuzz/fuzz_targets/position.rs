//! Feeds arbitrary text to the position grammar and checks that whatever parses converts to a
//! bit span that the canonical notation writes back identically.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prm_codegen::position::{prm_notation, Position};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(p) = Position::parse(text) {
        if let Some((bit, width)) = p.bit_span() {
            if let Some(again) = prm_notation(bit, width) {
                let q = Position::parse(&again).expect("canonical notation parses");
                assert_eq!(q.bit_span(), Some((bit, width)));
            }
        }
    }
});
