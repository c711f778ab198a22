//! Every generated accessor of every layout against an independent oracle: `bitvec` reading
//! and writing the same bits MSB-first over the big-endian bytes, the way the PRM numbers
//! them. Getters must return exactly the oracle's bits; setters must change exactly the
//! field's bits and nothing else. Runs over the real spec (`mlx5_prm`) and the toy spec
//! generated from `build.rs` (unions, arrays, trailing arrays, a register block). The
//! decoding `Debug`, which reads the same tables, must show every field as the oracle reads
//! it, at the position the spec gives.

use bitvec::prelude::*;
use mlx5_prm::rt::reflect::{Decoded, FieldAccess, LayoutAccess, ValueKind};
use proptest::prelude::*;

fn all_layouts() -> Vec<&'static LayoutAccess> {
    mlx5_prm::ALL_LAYOUTS
        .iter()
        .chain(prm_tests::toy::ALL_LAYOUTS.iter())
        .collect()
}

/// Extra bytes after the fixed part, so trailing arrays have elements.
const TAIL: usize = 64;

fn oracle_get(buf: &[u8], bit: usize, width: u32) -> u64 {
    buf.view_bits::<Msb0>()[bit..bit + width as usize].load_be::<u64>()
}

fn oracle_set(buf: &mut [u8], bit: usize, width: u32, value: u64) {
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    buf.view_bits_mut::<Msb0>()[bit..bit + width as usize].store_be::<u64>(value & mask);
}

fn elements(f: &FieldAccess, buf_len: usize) -> usize {
    if f.trailing {
        (buf_len * 8).saturating_sub(f.bit_offset) / f.width as usize
    } else {
        f.count
    }
}

fn check_layout(
    l: &LayoutAccess,
    bytes: &[u8],
    value: u64,
    pick: usize,
) -> Result<(), TestCaseError> {
    let buf = &bytes[..l.size + TAIL];
    for f in l.fields {
        let n = elements(f, buf.len());
        // Every element of short arrays; for long ones the first, the last and one at random.
        let mut idx: Vec<usize> = if n <= 8 {
            (0..n).collect()
        } else {
            vec![0, n - 1, pick % n]
        };
        idx.dedup();
        for i in idx {
            let bit = f.bit_offset + i * f.width as usize;
            if let Some(get) = f.get {
                prop_assert_eq!(
                    get(buf, i),
                    oracle_get(buf, bit, f.width),
                    "{}.{}[{}] getter",
                    l.name,
                    f.name,
                    i
                );
            }
            if let Some(set) = f.set {
                let mut got = buf.to_vec();
                set(&mut got, i, value);
                let mut want = buf.to_vec();
                if !f.readable && f.width < 32 {
                    // A write-only register narrower than its dword is written whole, its
                    // other bits as zero.
                    let dword = bit / 32 * 32;
                    oracle_set(&mut want, dword, 32, 0);
                }
                oracle_set(&mut want, bit, f.width, value);
                prop_assert_eq!(
                    got,
                    want,
                    "{}.{}[{}] setter with 0x{:x}",
                    l.name,
                    f.name,
                    i,
                    value
                );
            }
        }
    }
    for n in l.nested {
        let view_offset = n.view_offset.expect("built with feature reflect");
        // Element i's sub-view where the spec puts it, for every element the buffer holds,
        // and none past the last.
        let n_elems = if n.trailing {
            (buf.len() - n.byte_offset) / n.stride
        } else {
            n.count
        };
        for i in 0..=n_elems.min(16) {
            let want = (i < n_elems).then_some(n.byte_offset + i * n.stride);
            prop_assert_eq!(
                view_offset(buf, i),
                want,
                "{}.{}[{}] sub-view offset",
                l.name,
                n.name,
                i
            );
        }
        prop_assert_eq!(
            view_offset(&buf[..l.size - 1], 0),
            None,
            "{}.{} short",
            l.name,
            n.name
        );
        prop_assert!(
            n.trailing || n.byte_offset + n.size * n.count <= l.size,
            "{}.{} inside its layout",
            l.name,
            n.name
        );
    }
    Ok(())
}

/// A field's position as the PRM tables write it (the contract of `rt::Layout`'s text),
/// worked out here rather than with the runtime's code.
fn prm_position(bit: usize, width: usize) -> String {
    let (dword, in_dword) = (bit / 32 * 4, bit % 32);
    if in_dword + width <= 32 {
        let hi = 31 - in_dword;
        let lo = hi + 1 - width;
        if hi == lo {
            format!("0x{dword:02x}[{hi}]")
        } else {
            format!("0x{dword:02x}[{hi}:{lo}]")
        }
    } else if in_dword == 0 && width == 64 {
        format!("0x{dword:02x}[63:0]")
    } else if in_dword == 0 && width % 32 == 0 {
        format!("0x{:02x}..0x{:02x}", bit / 8, (bit + width) / 8)
    } else {
        format!("bit 0x{bit:x} +{width}")
    }
}

/// What the decoding `Debug` must print for field `f` (not an array) of `buf`.
fn expected_entry(f: &FieldAccess, buf: &[u8]) -> String {
    let (bit, width) = (f.bit_offset, f.width as usize);
    let value = match f.kind {
        ValueKind::Bytes => {
            let b = &buf[bit / 8..(bit + width) / 8];
            let groups: Vec<String> = b
                .chunks(4)
                .map(|c| c.iter().map(|x| format!("{x:02x}")).collect())
                .collect();
            groups.join(" ")
        }
        ValueKind::Flag => (oracle_get(buf, bit, f.width) != 0).to_string(),
        ValueKind::Enum { value_name, .. } => {
            let raw = oracle_get(buf, bit, f.width);
            value_name(raw).map_or(format!("unknown(0x{raw:x})"), str::to_string)
        }
        ValueKind::Number => format!("0x{:x}", oracle_get(buf, bit, f.width)),
    };
    format!("{}: {} = {value}", f.name, prm_position(bit, width))
}

/// The decoded `Debug` of `l` over `bytes` shows every readable field as the oracle reads it
/// and leaves out the write-only ones.
fn check_debug(l: &'static LayoutAccess, bytes: &[u8]) -> Result<(), TestCaseError> {
    let buf = &bytes[..l.size];
    let text = format!("{:?}", Decoded::new(l, &buf));
    // `Name { ... }`, or just `Name` for a layout with nothing to show.
    let prefix = format!("{} {{ ", l.type_name);
    prop_assert!(
        text.starts_with(&prefix) || text == l.type_name,
        "{}: {}",
        l.name,
        text
    );
    for f in l.fields {
        if f.count != 1 || f.trailing {
            continue;
        }
        let entry = expected_entry(f, buf);
        if f.readable {
            prop_assert!(text.contains(&entry), "{}: `{}` in {}", l.name, entry, text);
        } else {
            prop_assert!(
                !text.contains(&entry),
                "{}: `{}` in {}",
                l.name,
                entry,
                text
            );
        }
    }
    Ok(())
}

fn max_size() -> usize {
    all_layouts().iter().map(|l| l.size).max().unwrap_or(0) + TAIL
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn accessors_match_the_bitvec_oracle(
        bytes in proptest::collection::vec(any::<u8>(), max_size()),
        value in any::<u64>(),
        pick in any::<usize>(),
    ) {
        for l in all_layouts() {
            check_layout(l, &bytes, value, pick)?;
        }
    }

    #[test]
    fn decoded_debug_shows_what_the_oracle_reads(
        bytes in proptest::collection::vec(any::<u8>(), max_size()),
    ) {
        for l in all_layouts() {
            check_debug(l, &bytes)?;
        }
    }
}

#[test]
fn every_layout_and_field_is_covered() {
    // The reflection tables are generated from the same IR as the accessors; check they
    // list every field the spec has, so the oracle test cannot silently skip one.
    let c = prm_codegen::compile_dir(&prm_tests::spec_dir()).unwrap();
    assert_eq!(mlx5_prm::ALL_LAYOUTS.len(), c.ir.structs.len());
    for (l, s) in mlx5_prm::ALL_LAYOUTS.iter().zip(&c.ir.structs) {
        assert_eq!(l.name, s.name);
        use prm_codegen::ir::FieldType;
        // Every field is in the table: scalars and bytes in `fields`, the rest in `nested`.
        let nested = s
            .fields
            .iter()
            .filter(|f| matches!(f.ty, FieldType::Struct(_) | FieldType::Union(_)))
            .count();
        assert_eq!(
            l.fields.len() + l.nested.len(),
            s.fields.len(),
            "{}",
            s.name
        );
        assert_eq!(l.nested.len(), nested, "{}", s.name);
    }
}
