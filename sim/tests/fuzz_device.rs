//! The fuzz target's programs (`sim/tests/drive`) as a bounded property test in the normal
//! suite: random byte programs drive one device through BAR accesses of every size, guest
//! memory, commands, doorbells, frames, unmapping and reset; nothing panics, the device still
//! answers, and nothing outside guest RAM is written. `PROPTEST_CASES` sets the count (128).

mod drive;

use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_programs_never_break_the_device(program in prop::collection::vec(any::<u8>(), 0..4096)) {
        drive::run(&program);
    }
}

/// Programs that reach deeper states: a bring-up first, then many well-delivered commands.
#[test]
fn a_few_fixed_programs() {
    drive::run(&[]);
    drive::run(&[0; 64]);
    let mut p = vec![0u8];
    for k in 0..200u32 {
        p.extend_from_slice(&[7, k as u8, (k % 4) as u8, 0, 0x40, 0x10, 0, 3]);
        p.extend_from_slice(&(k * 7919).to_be_bytes());
    }
    drive::run(&p);
    // Found by the fuzzer: a program that enables command checksums (SET_HCA_CAP
    // cmdif_checksum), after which every command must carry signatures.
    drive::run(include_bytes!("../fuzz/seeds/device/checksums-enabled"));
}
