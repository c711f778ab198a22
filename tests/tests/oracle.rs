//! Every generated accessor of every layout against an independent oracle: `bitvec` reading
//! and writing the same bits MSB-first over the big-endian bytes, the way the PRM numbers
//! them. Getters must return exactly the oracle's bits; setters must change exactly the
//! field's bits and nothing else. Runs over the real spec (`mlx5_prm`) and the toy spec
//! generated from `build.rs` (unions, arrays, trailing arrays, a register block).

use bitvec::prelude::*;
use mlx5_prm::rt::reflect::{FieldAccess, LayoutAccess};
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
                if f.get.is_none() && f.width < 32 {
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
                (n.view_offset)(buf, i),
                want,
                "{}.{}[{}] sub-view offset",
                l.name,
                n.name,
                i
            );
        }
        prop_assert_eq!(
            (n.view_offset)(&buf[..l.size - 1], 0),
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
        // Byte fields are copied, not shifted. Every other field must be in the table.
        let expected = s
            .fields
            .iter()
            .filter(|f| !matches!(f.ty, FieldType::Bytes))
            .count();
        assert_eq!(l.fields.len() + l.nested.len(), expected, "{}", s.name);
    }
}
