//! Properties of `decode` and `encode` on the real spec, bounded to a few seconds:
//!
//! - decode ∘ encode is the identity: every field assigned a random value decodes to that
//!   value, every other field to 0;
//! - encode ∘ decode is the identity on the fields: random bytes, decoded, re-encoded from
//!   the decoded raw values and decoded again give the same tree;
//! - the dump parser and the decoder never panic, on any text or any length.

use prm_codegen::decode::{decode, encode, hex, tree, Node, Options, Target};
use prm_codegen::Compilation;
use proptest::prelude::*;
use std::sync::OnceLock;

fn spec() -> &'static Compilation {
    static C: OnceLock<Compilation> = OnceLock::new();
    C.get_or_init(|| {
        let c = prm_codegen::compile_dir(std::path::Path::new("../spec")).expect("spec readable");
        assert!(c.is_ok(), "{}", c.render_human());
        c
    })
}

/// Layouts with structs, enums, bools, a 64-bit field, nested structs, a trailing array and a
/// union (its member forced with --member so the tree's shape does not depend on the values).
const LAYOUTS: &[&str] = &[
    "cqe64",
    "err_cqe",
    "create_cq_in",
    "cqc",
    "ppcnt_reg",
    "qpc",
];

fn opts() -> Options {
    Options {
        members: vec!["eth_802_3_cntrs_grp_data_layout".into()],
        ..Options::default()
    }
}

fn leaves_of(n: &Node) -> Vec<(String, u64, u64)> {
    tree::leaves(n)
        .into_iter()
        .map(|l| (l.path.clone(), l.bit_offset, l.width))
        .collect()
}

/// A value of `width` bits from random bytes, written as `0x` hex, decimal or true/false.
fn value_text(width: u64, seed: &[u8], style: u8) -> (Vec<u8>, String) {
    let n = width.div_ceil(8) as usize;
    let mut v: Vec<u8> = seed.iter().cycle().take(n).copied().collect();
    if let Some(first) = v.first_mut() {
        let pad = n as u64 * 8 - width;
        *first &= 0xffu8 >> pad;
    }
    let hexs: String = v.iter().map(|b| format!("{b:02x}")).collect();
    let text = match (width, style % 3) {
        (1, 0) => {
            if v[0] == 1 {
                "true".into()
            } else {
                "false".into()
            }
        }
        (w, 1) if w <= 64 => {
            let x = v.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
            x.to_string()
        }
        _ => format!("0x{hexs}"),
    };
    (v, text)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn decode_of_encode_is_identity(
        layout in 0..LAYOUTS.len(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..9), any::<u8>()), 1..12),
    ) {
        let ir = &spec().ir;
        let t = Target::find(ir, LAYOUTS[layout]).expect("layout in spec");
        let zero = vec![0u8; t.size() as usize];
        let all = leaves_of(&decode(ir, t, &zero, &opts()));
        // Distinct, non-overlapping leaves, each with a random value.
        let mut chosen: Vec<(String, u64, u64, Vec<u8>)> = Vec::new();
        let mut assignments = Vec::new();
        for (idx, seed, style) in &picks {
            let (path, at, w) = &all[idx.index(all.len())];
            if chosen.iter().any(|(_, a, cw, _)| at < &(a + cw) && *a < at + w) {
                continue;
            }
            let (bytes, text) = value_text(*w, seed, *style);
            assignments.push((path.clone(), text));
            chosen.push((path.clone(), *at, *w, bytes));
        }
        let buf = encode::encode(ir, t, None, &assignments).expect("assignments encode");
        prop_assert_eq!(buf.len(), t.size() as usize);
        let root = decode(ir, t, &buf, &opts());
        for leaf in tree::leaves(&root) {
            let want = chosen.iter().find(|c| c.0 == leaf.path);
            let raw = prm_codegen::decode::bits::get(&buf, leaf.bit_offset, leaf.width);
            match want {
                Some((_, _, _, bytes)) => prop_assert_eq!(&raw, bytes, "{}", leaf.path),
                None => prop_assert!(raw.iter().all(|&b| b == 0), "{} is {:?}", leaf.path, raw),
            }
        }
    }

    #[test]
    fn encode_of_decode_is_identity(
        layout in 0..LAYOUTS.len(),
        seed in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let ir = &spec().ir;
        let t = Target::find(ir, LAYOUTS[layout]).expect("layout in spec");
        let buf: Vec<u8> = seed.iter().cycle().take(t.size() as usize).copied().collect();
        let root = decode(ir, t, &buf, &opts());
        let assignments: Vec<(String, String)> = tree::leaves(&root)
            .into_iter()
            .map(|l| (l.path.clone(), l.raw.clone().unwrap_or_default()))
            .collect();
        let again = encode::encode(ir, t, None, &assignments).expect("raw values encode");
        let root2 = decode(ir, t, &again, &opts());
        let strip = |n: &Node| serde_json::to_value(tree::leaves(n)).unwrap();
        prop_assert_eq!(strip(&root), strip(&root2));
    }

    #[test]
    fn dump_parser_never_panics(text in "[0-9a-fA-Fx:|* \n.,#g-]{0,300}") {
        let _ = hex::parse_hex(&text);
    }

    #[test]
    fn dump_parser_reads_its_own_output(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        prop_assert_eq!(hex::parse_hex(&hex::to_hex(&bytes)).unwrap(), bytes);
    }

    #[test]
    fn decoder_never_panics(layout in 0..LAYOUTS.len(), data in prop::collection::vec(any::<u8>(), 0..700)) {
        let ir = &spec().ir;
        let t = Target::find(ir, LAYOUTS[layout]).expect("layout in spec");
        if let Ok(buf) = hex::read_input(&data) {
            if tree::check_length(ir, t, buf.len()).is_ok() {
                let _ = decode(ir, t, &buf, &Options::default());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Any assignment text is an answer (bytes or an error), never a panic.
    #[test]
    fn encode_never_panics(layout in 0..LAYOUTS.len(), args in prop::collection::vec("[a-z_0-9.\\[\\]=x]{0,40}", 0..4)) {
        let ir = &spec().ir;
        let t = Target::find(ir, LAYOUTS[layout]).expect("layout in spec");
        let pairs: Vec<(String, String)> = args
            .iter()
            .filter_map(|a| encode::split_assignment(a).ok())
            .map(|(p, v)| (p.to_string(), v.to_string()))
            .collect();
        let _ = encode::encode(ir, t, None, &pairs);
    }
}
