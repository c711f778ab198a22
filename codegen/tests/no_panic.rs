//! Bounded property tests: no input, however malformed, makes the compiler panic, and every
//! diagnostic points at a real place in its file.

use prm_codegen::position::Position;
use proptest::prelude::*;

/// Pieces of spec syntax, so random sequences reach deep into the loader and the checks.
const TOKENS: &[&str] = &[
    "structs:\n",
    "registers:\n",
    "enums:\n",
    "unions:\n",
    "commands:\n",
    "constants:\n",
    "  a:\n",
    "  b:\n",
    "    size: 0x10\n",
    "    size: 7\n",
    "    fields:\n",
    "    values: { x: 1, y: 0x1f }\n",
    "    members:\n",
    "      m: { type: a, when: 0 }\n",
    "    selector: { field: a.f, shift: 1 }\n",
    "      f: \"0x00[31:16]\"\n",
    "      g: { at: \"0x04[63:0]\", type: u64 }\n",
    "      h: { at: \"0x00\", type: b }\n",
    "      i: { at: \"0x10\", type: u8, count: trailing }\n",
    "      j: { at: \"0x08..0x0c\", count: 3 }\n",
    "      k: { at: \"0x3c[0\" }\n",
    "  c: { opcode: 0x1, in: a, out: b }\n",
    "      reserved_at_7: \"0x00[3:0]\"\n",
    "      l: { at: \"0x0c[7:4]\", type: e, access: ro }\n",
    "      set_f: \"0x00[15:8]\"\n",
    "      storage: \"0x04[7:0]\"\n",
    "      into: \"0x04[15:8]\"\n",
    "      x_1: \"0x08[7:0]\"\n",
    "      x1: \"0x08[15:8]\"\n",
    "  e:\n",
    "    width: 2\n",
    "doc: text\n",
    "- item\n",
    "  ",
    ":",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    "&x ",
    "*x ",
    "!tag ",
    "#c\n",
    "\t",
    "0x",
    "..",
    "\u{feff}",
    "é",
    "\n",
];

/// Pieces of `mlx5_ifc.h` syntax for the importer.
const HEADER_TOKENS: &[&str] = &[
    "struct mlx5_ifc_a_bits {\n",
    "union mlx5_ifc_b_bits {\n",
    "struct {\n",
    "union {\n",
    "};\n",
    "} x;\n",
    "\tu8 f[0x20];\n",
    "\tu8 g[0x4];\n",
    "\tu8 reserved_at_0[0x1c];\n",
    "\tu8 arr[4][0x8];\n",
    "\tu8 tail[][0x40];\n",
    "\tu8 z[0][0x20];\n",
    "\tu8 big[0x7f];\n",
    "\tstruct mlx5_ifc_a_bits n;\n",
    "\tunion mlx5_ifc_b_bits u[2];\n",
    "\tDECLARE_FLEX_ARRAY(struct mlx5_ifc_a_bits, fa);\n",
    "\tDECLARE_FLEX_ARRAY(union mlx5_ifc_b_bits, fb);\n",
    "\tu8 d[N];\n",
    "#define N (1 + 2)\n",
    "#define M N*N\n",
    "enum { X = 1, };\n",
    "int y;\n",
    "/* c */",
    "// c\n",
    "{",
    "}",
    ";",
    "[",
    "]",
    "0x",
    "\\\n",
    "\tu8 q[0xffffffffffffffff];\n",
    "\tu8 w[N << 70];\n",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        let c = prm_codegen::compile_str("fuzz.yaml", &text);
        let _ = c.render_human();
        let _ = c.render_json();
    }

    #[test]
    fn token_soup_never_panics(parts in proptest::collection::vec(proptest::sample::select(TOKENS), 0..60)) {
        let text: String = parts.concat();
        let c = prm_codegen::compile_str("soup.yaml", &text);
        let _ = c.render_human();
        let _ = c.render_json();
        for d in c.diagnostics.iter() {
            prop_assert!(d.span.line >= 1 && d.span.col >= 1, "{:?}", d);
            let lines = text.lines().count().max(1) as u32;
            prop_assert!(d.span.line <= lines + 1, "{:?} in {} lines", d, lines);
        }
        if c.is_ok() {
            let _ = prm_codegen::layout::to_json(&c.ir);
            for s in &c.ir.structs {
                let _ = prm_codegen::show::table(&c.ir, s);
            }
            // A spec that checks clean generates, or is refused for a name clash; nothing
            // else (a generator bug shows as a parse error of its own output).
            match prm_codegen::gen::Config::for_mlx5_prm().generate(&c.ir) {
                Ok(_) => {}
                Err(prm_codegen::gen::GenError::NameClash(m)) => {
                    prop_assert!(!m.contains("does not parse"), "{}", m);
                }
                Err(e) => prop_assert!(false, "{}", e),
            }
        }
    }

    #[test]
    fn header_import_never_panics(parts in proptest::collection::vec(proptest::sample::select(HEADER_TOKENS), 0..80)) {
        let text: String = parts.concat();
        let imp = prm_codegen::import::import_sources(vec![("fuzz.h".into(), text)]);
        for d in imp.diagnostics.iter() {
            let _ = prm_codegen::diag::render_human(d, &imp.sources);
        }
        // Whatever the importer writes must load without a panic too.
        let files = imp.files.into_iter().map(|(n, t)| (n.into(), t)).collect();
        let _ = prm_codegen::compile_sources(files).render_human();
    }

    #[test]
    fn positions_never_panic(text in "[0-9a-fx_\\[\\]:.= ]{0,24}|\\PC{0,24}") {
        if let Ok(p) = Position::parse(&text) {
            let _ = p.bit_span();
        }
    }

    #[test]
    fn prm_notation_round_trips(bit in 0u64..0x4000, width in 1u64..200) {
        if let Some(text) = prm_codegen::position::prm_notation(bit, width) {
            let p = Position::parse(&text).unwrap();
            prop_assert_eq!(p.bit_span(), Some((bit, width)), "{}", text);
        }
    }
}
