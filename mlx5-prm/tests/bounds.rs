//! Every bounds check of the runtime holds for offsets and lengths near `usize::MAX`: an
//! access outside its storage panics with the runtime's own message (naming the offset and
//! the length), never wraps around to a small offset, and never touches the bytes around the
//! storage. Each access path has a property test: slices, device memory (`DeviceBytes`), a
//! mapped register block (`MmioPtr`), register-block storage (`MmioBytes`) over an in-memory
//! register file, and the trailing arrays of generated views.
//!
//! Before the runtime used checked arithmetic, `MmioPtr::read32(usize::MAX - 3)` passed its
//! check (`offset + 4` wrapped to 0) and read the word before the mapping; these tests then
//! failed with "attempt to add with overflow" (debug) instead of the bounds message.

use mlx5_prm::rt::{Bytes, BytesMut, DeviceBytes, Mmio32, MmioBytes, MmioPtr, RegisterFile};
use mlx5_prm::{CreateCqIn, Eqc};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The panic message of `f`, or `None` when it returns.
fn panic_of<T>(f: impl FnOnce() -> T) -> Option<String> {
    quiet();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => None,
        Err(e) => Some(
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

/// Expected panics would fill the test output: keep the hook silent (proptest reports the
/// failing case and its message itself).
fn quiet() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(|_| {})));
}

/// An offset: near `usize::MAX`, near the storage's end, or anywhere.
fn offset(len: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        (0usize..64).prop_map(|d| usize::MAX - d),
        (0usize..16).prop_map(move |d| len.saturating_sub(8) + d),
        any::<usize>(),
    ]
}

/// A length: small, near `usize::MAX`, or anywhere.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..16,
        (0usize..64).prop_map(|d| usize::MAX - d),
        any::<usize>()
    ]
}

/// True when `at .. at + n` lies inside `len` bytes, computed without overflow.
fn inside(at: usize, n: usize, len: usize) -> bool {
    (at as u128) + (n as u128) <= len as u128
}

const LEN: usize = 64;
const GUARD: usize = 16;

/// A buffer with `GUARD` bytes of 0xa5 on both sides of `LEN` bytes of storage.
fn guarded() -> Vec<u8> {
    let mut v = vec![0xa5u8; GUARD + LEN + GUARD];
    for (i, b) in v[GUARD..GUARD + LEN].iter_mut().enumerate() {
        *b = i as u8;
    }
    v
}

fn guards_intact(v: &[u8]) -> bool {
    v[..GUARD]
        .iter()
        .chain(&v[GUARD + LEN..])
        .all(|b| *b == 0xa5)
}

/// Reads and writes of every width through any storage: in range they agree with the bytes
/// at `at`, out of range they panic with `message`.
fn check_storage<S: BytesMut>(
    s: &mut S,
    at: usize,
    n: usize,
    message: &str,
) -> Result<(), TestCaseError> {
    let len = s.len();
    for (width, read) in [
        (
            1usize,
            &(|s: &S, at| u64::from(s.read_u8(at))) as &dyn Fn(&S, usize) -> u64,
        ),
        (4, &|s: &S, at| u64::from(s.read_be32(at))),
        (8, &|s: &S, at| s.read_be64(at)),
    ] {
        let got = panic_of(|| read(s, at));
        if inside(at, width, len) {
            prop_assert_eq!(got, None, "read of {} at {} refused", width, at);
        } else {
            let m = got.unwrap_or_default();
            prop_assert!(m.contains(message), "read of {width} at {at}: {m:?}");
        }
    }
    type Write<S> = dyn Fn(&mut S, usize);
    let writes: [(usize, &Write<S>); 3] = [
        (1, &|s: &mut S, at| s.write_u8(at, 0)),
        (4, &|s: &mut S, at| s.write_be32(at, 0)),
        (8, &|s: &mut S, at| s.write_be64(at, 0)),
    ];
    for (width, write) in writes {
        let got = panic_of(|| write(s, at));
        if inside(at, width, len) {
            prop_assert_eq!(got, None, "write of {} at {} refused", width, at);
        } else {
            let m = got.unwrap_or_default();
            prop_assert!(m.contains(message), "write of {width} at {at}: {m:?}");
        }
    }
    // Copies and sub-ranges take a length too (kept small enough to allocate).
    let copy = n.min(2 * LEN);
    let got = panic_of(|| s.read_bytes(at, &mut vec![0; copy]));
    prop_assert_eq!(
        got.is_none(),
        inside(at, copy, len),
        "read_bytes {} {}",
        at,
        copy
    );
    if let Some(m) = got {
        prop_assert!(m.contains(message), "read_bytes {at}+{copy}: {m:?}");
    }
    let got = panic_of(|| s.write_bytes(at, &vec![0; copy]));
    prop_assert_eq!(
        got.is_none(),
        inside(at, copy, len),
        "write_bytes {} {}",
        at,
        copy
    );
    let got = panic_of(|| s.sub(at, n).len());
    match got {
        None => prop_assert!(inside(at, n, len), "sub {at}+{n} accepted"),
        Some(m) => prop_assert!(
            !inside(at, n, len) || m.contains("dword"),
            "sub {at}+{n} refused: {m:?}"
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn slices_refuse_ranges_past_their_end(at in offset(LEN), n in length()) {
        let mut buf = [0u8; LEN];
        check_storage(&mut &mut buf[..], at, n, "beyond a 64-byte buffer")?;
    }

    #[test]
    fn device_memory_refuses_ranges_past_its_window(at in offset(LEN), n in length()) {
        let mut backing = guarded();
        // SAFETY: the window is inside `backing`, which outlives it and is reached only
        // through the window meanwhile.
        let mut w = unsafe { DeviceBytes::new(backing.as_mut_ptr().add(GUARD), LEN) };
        check_storage(&mut w, at, n, "beyond a 64-byte window")?;
        prop_assert!(guards_intact(&backing), "bytes outside the window changed");
    }

    #[test]
    fn mapped_registers_refuse_offsets_past_the_block(at in offset(LEN)) {
        let mut backing = vec![0xa5a5_a5a5u32; (GUARD + LEN + GUARD) / 4];
        // SAFETY: the block is inside `backing`, aligned, and reached only through it.
        let regs = unsafe { MmioPtr::new(backing.as_mut_ptr().add(GUARD / 4).cast(), LEN) };
        let ok = at % 4 == 0 && inside(at, 4, LEN);
        for got in [panic_of(|| regs.read32(at)), panic_of(|| regs.write32(at, 0))] {
            match got {
                None => prop_assert!(ok, "access at {at:#x} accepted"),
                Some(m) => {
                    prop_assert!(!ok, "access at {at:#x} refused");
                    prop_assert!(m.contains("outside a 0x40-byte block"), "{m:?}");
                }
            }
        }
        let words = GUARD / 4;
        prop_assert!(
            backing[..words].iter().chain(&backing[words + LEN / 4..]).all(|w| *w == 0xa5a5_a5a5),
            "registers outside the block changed"
        );
    }

    #[test]
    fn register_storage_refuses_ranges_past_its_end(at in offset(LEN), n in length()) {
        let file = RegisterFile::<{ LEN / 4 }>::default();
        let mut s = MmioBytes::new(&file, LEN);
        // Registers are dwords: unaligned offsets are a different refusal.
        check_storage(&mut s, at & !3, n, "outside a 0x40-byte block")?;
        // A register file refuses registers it does not have, whatever the storage claims.
        let claims = MmioBytes::new(&file, usize::MAX);
        let got = panic_of(|| claims.read_be32(at & !3));
        prop_assert_eq!(got.is_none(), (at & !3) < LEN, "register file read at {}", at);
    }

    #[test]
    fn trailing_arrays_count_without_overflow(len in length(), extra in 0usize..4) {
        // A register block may claim any length: the element count must still come out
        // right, and every index it allows must address an element inside the claim.
        let file = RegisterFile::<{ 0x120 / 4 }>::default();
        let claimed = len.saturating_sub(extra);
        let Ok(v) = CreateCqIn::new_checked(MmioBytes::new(&file, claimed)) else {
            prop_assert!(claimed < CreateCqIn::SIZE);
            return Ok(());
        };
        let n = panic_of(|| v.pas_len());
        prop_assert!(n.is_none(), "pas_len panicked for {claimed}: {n:?}");
        let n = v.pas_len();
        let expected = ((claimed - 0x110) as u128 / 8).min((usize::MAX / 8 - 0x110) as u128 / 8);
        prop_assert_eq!(n as u128, expected);
        // Past the count there is no element, whatever the index.
        prop_assert_eq!(v.pas(n), None);
        prop_assert_eq!(v.pas(usize::MAX), None);
        // The register file holds the first two elements.
        if n >= 2 {
            prop_assert_eq!(v.pas(1), Some(0));
        }
    }

    #[test]
    fn trailing_len_keeps_every_bit_position_representable(
        len in length(), start in 0usize..0x100_0000, width in 1usize..1024,
    ) {
        let n = mlx5_prm::rt::trailing_len(len, start, width);
        let end_bits = (start as u128) * 8 + (n as u128) * (width as u128);
        prop_assert!(end_bits <= (len as u128) * 8 || n == 0);
        prop_assert!(end_bits <= usize::MAX as u128);
    }
}

#[test]
fn views_over_short_buffers_are_refused() {
    assert!(Eqc::new_checked(&[0u8; 0x3c][..]).is_err());
    assert!(Eqc::new_checked(&[0u8; 0x40][..]).is_ok());
    // An unchecked view over too short a buffer panics with the runtime's message.
    let v = Eqc::new_unchecked(&[0u8; 8][..]);
    let m = panic_of(|| v.log_eq_size()).unwrap();
    assert!(m.contains("beyond a 8-byte buffer"), "{m}");
}
