//! `prmc import` on hostile headers: each shape a fuzzer (or a review) found that took the
//! grammar time out of proportion to its size, overflowed its stack or flooded the output is
//! one error, at the place it should be, within the grammar's budget of calls
//! (`import::budget`), which grows with the text.

use std::path::PathBuf;

fn import(name: &str, text: String) -> Vec<prm_codegen::diag::Diagnostic> {
    let imp = prm_codegen::import::import_sources(vec![(PathBuf::from(name), text)]);
    imp.diagnostics.sorted().into_iter().cloned().collect()
}

fn gave_up(d: &[prm_codegen::diag::Diagnostic]) -> bool {
    d.iter().any(|d| d.message.contains("gave up"))
}

#[test]
fn a_header_nested_too_deep_is_refused_at_once() {
    // Thousands of nested unions with a stray byte took the grammar over 10 s (the fuzzer's
    // timeout: codegen/fuzz/seeds/import/regress_timeout_deep_unions.h); nesting past the
    // limit is now one error at the bracket that goes too deep, before the grammar runs.
    let seed = std::fs::read_to_string("fuzz/seeds/import/regress_timeout_deep_unions.h").unwrap();
    let n = 5000;
    let built = format!(
        "struct mlx5_ifc_a_bits {{{}u8 x[0x20];{}}};\n",
        "union {".repeat(n),
        "};".repeat(n)
    );
    for text in [seed, built] {
        let start = std::time::Instant::now();
        let imp = prm_codegen::import::import_sources(vec![(PathBuf::from("deep.h"), text)]);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        let d: Vec<_> = imp.diagnostics.sorted();
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("nest deeper than 64 levels"), "{d:?}");
        // The 65th bracket: `struct … {` (column 24) is the first, then `union {` every 7.
        assert_eq!((d[0].span.line, d[0].span.col), (1, 25 + 63 * 7 + 6));
    }
    // As deep as the limit still reads: the struct, 62 unions and the array's `[`.
    let ok = format!(
        "struct mlx5_ifc_b_bits {{{}u8 x[0x20];{}}};\n",
        "union {".repeat(62),
        "};".repeat(62)
    );
    let imp = prm_codegen::import::import_sources(vec![(PathBuf::from("ok.h"), ok)]);
    assert!(!imp
        .diagnostics
        .sorted()
        .iter()
        .any(|d| d.message.contains("nest deeper")));
}

/// Unions nested inside each other with an unreadable member in each (a long fuzz run found a
/// 3 KB header of them: codegen/fuzz/seeds/import/regress_timeout_nested_bad_unions.h) made the
/// grammar read the text after each stray `;` again at every level outside it: time doubled
/// with each level, 2.3 s for that file in a release build. Read once, each shape gives the
/// error it should, far inside the grammar's budget of calls, which the old grammar ran out of.
#[test]
fn nested_unreadable_unions_are_read_once() {
    let import = |text: String| {
        let imp = prm_codegen::import::import_sources(vec![(PathBuf::from("nested.h"), text)]);
        let d: Vec<_> = imp.diagnostics.sorted().into_iter().cloned().collect();
        assert!(
            !d.iter().any(|d| d.message.contains("gave up")),
            "the grammar ran out of its budget: {d:?}"
        );
        d
    };
    let seed = std::fs::read("fuzz/seeds/import/regress_timeout_nested_bad_unions.h").unwrap();
    let d = import(String::from_utf8_lossy(&seed).into_owned());
    assert_eq!(d.len(), 1, "{d:?}");
    // Never closed: one error, at the end where a `}` is missing.
    let n = 60;
    let open = format!("struct mlx5_ifc_a_bits {{{}", "union { x;".repeat(n));
    let d = import(format!("{open}}};"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].message.contains("unbalanced braces"), "{d:?}");
    // Closed: each unreadable member is an error of its own, the layout is left out.
    let d = import(format!("{open}{}}};", "};".repeat(n)));
    assert_eq!(d.len(), n, "{d:?}");
    assert!(d
        .iter()
        .all(|d| d.message == "cannot read `x;` in `mlx5_ifc_a_bits`"));
}

/// An array size read past a `}` or `;` (`struct { u8 a[0x10} ;];`) let a member end outside
/// the block that held it, where `bad`, which counts braces, ended it inside; each reading
/// retried the other's text, and time doubled with every such member: a long fuzz run's
/// 5 KB header took 362 M instructions (codegen/fuzz/seeds/import/
/// regress_slow_sizes_past_braces.h), 20 members of it 275 M pest calls. A size now stops at
/// a brace or `;`, so each is an unreadable member, reported once.
#[test]
fn sizes_stop_at_braces() {
    let seed = std::fs::read("fuzz/seeds/import/regress_slow_sizes_past_braces.h").unwrap();
    let d = import("seed.h", String::from_utf8_lossy(&seed).into_owned());
    assert!(!gave_up(&d), "{d:?}");
    assert_eq!(d.len(), 1, "{d:?}");
    let n = 20;
    let text = format!(
        "struct mlx5_ifc_a_bits {{\n{}}};\n",
        "\tstruct {\n\t\tu8 a[0x10}\n\t;];\n".repeat(n)
    );
    let d = import("sizes.h", text);
    assert!(!gave_up(&d), "{d:?}");
    // Each `struct { u8 a[0x10}` is one member to its `;`, and so is each `];`.
    assert_eq!(d.len(), 2 * n, "{d:?}");
    assert!(d
        .iter()
        .all(|d| d.message.starts_with("cannot read `")
            && d.message.ends_with("in `mlx5_ifc_a_bits`")));
}

/// A `/*` with no `*/` after it made every rule that tried a comment there scan to the end:
/// 20,000 of them (60 KB) ran the grammar out of its budget. It is one error where the first
/// one opens, wherever it stands, before the grammar runs.
#[test]
fn an_unclosed_comment_is_one_error_where_it_opens() {
    let layout = "struct mlx5_ifc_a_bits {\n\tu8 a[0x20];\n};\n";
    for (text, at) in [
        ("/* ".repeat(20_000), (1, 1)),
        (
            format!("{layout}{}", " u8 a[0x8]; /*".repeat(20_000)),
            (4, 13),
        ),
        (
            format!("/* closed */\n{layout}#define X /* open\n"),
            (5, 11),
        ),
    ] {
        let d = import("comment.h", text);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0].message,
            "this `/*` is never closed by a `*/`: the header is not read"
        );
        assert_eq!((d[0].span.line, d[0].span.col), at);
    }
}

/// The grammar knows no string literals, so braces inside one nest for it as any others: with
/// the depth counted as C reads it (the literal skipped), `x"; union { union { …` 20,000 deep
/// on one line reached the grammar unchecked. A release build of `prmc import` overflowed its
/// stack and aborted; in this test's build pest's stack guard gave up first.
#[test]
fn braces_in_a_literal_count_toward_the_depth() {
    let n = 20_000;
    let text = format!(
        "struct mlx5_ifc_a_bits {{ x\"; {} x y;{}}};",
        "union {".repeat(n),
        "};".repeat(n)
    );
    let d = import("literal.h", text);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].message.contains("nest deeper than 64 levels"), "{d:?}");
    // `struct … {` is the first bracket (column 24), then a `union {` every 7 from column 36.
    assert_eq!((d[0].span.line, d[0].span.col), (1, 36 + 63 * 7));
}

/// Header text quoted in an error is cut short: a 200 KB array size was quoted whole, one
/// line of 200,063 characters.
#[test]
fn quoted_text_is_cut_short() {
    let size = format!("1 + {}", "x".repeat(200_000));
    let d = import(
        "long.h",
        format!("struct mlx5_ifc_a_bits {{\n\tu8 a[{size}];\n}};\n"),
    );
    let long = d
        .iter()
        .find(|d| d.message.starts_with("array size"))
        .expect("an error");
    assert!(long.message.chars().count() < 200, "{}", long.message);
    assert!(long.message.contains("1 + xxx"), "{}", long.message);
    let member = format!("garbage {}", "y".repeat(200_000));
    let d = import(
        "member.h",
        format!("struct mlx5_ifc_a_bits {{\n\t{member};\n}};\n"),
    );
    assert!(d.iter().all(|d| d.message.chars().count() < 200), "{d:?}");
    assert!(d
        .iter()
        .any(|d| d.message.starts_with("cannot read `garbage yyy")));
    // What is short enough is quoted whole, however long the message around it.
    let name = "MLX5_CMD_SET_MONITOR_NUM_COUNTERS_NOT_DEFINED_HERE";
    let d = import(
        "name.h",
        format!("struct mlx5_ifc_a_bits {{\n\tu8 a[{name}];\n}};\n"),
    );
    assert!(
        d.iter().any(|d| d.message
            == format!("array size `{name}`: `{name}` is not a #define in the header")),
        "{d:?}"
    );
}

/// Pieces of broken and unusual C: unclosed blocks, sizes that run into braces, literals,
/// directives with comments, comment markers on their own.
const SOUP: &[&str] = &[
    "struct mlx5_ifc_a_bits {\n",
    "union {\n",
    "struct {\n",
    "\tu8 a[0x10}\n",
    "\tu8 b[0x10];\n",
    "\tu8 c[0x1union ",
    ";];\n",
    "};\n",
    "} x;\n",
    "} x y\n",
    "}",
    "{",
    ";",
    "[",
    "]",
    "x\"; ",
    "'{'",
    "#define A /* a\n",
    "#define B \\\n",
    "/* c */",
    "/*",
    "*/",
    "// c\n",
    "enum { E = 1; F = {, };\n",
    "garbage / here ;\n",
];

/// The slow header's member whole, and pieces that open, close or break blocks around it.
const SLOW_MIX: &[&str] = &[
    "\tstruct {\n\t\tu8 a[0x10}\n\t;];\n",
    "\tstruct {\n\t\tu8 a[0x10}\n\t;];\n",
    "union {\n",
    "struct {\n",
    "\tu8 b[0x10];\n",
    "};\n",
    "} x y\n",
    "\tu8 c[0x1union ",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 400, ..Default::default() })]

    /// Whatever the soup, the importer answers without a panic; a header the pre-check lets
    /// through never runs the grammar out of stack, and, nested no deeper than 16 (Linux's
    /// headers: 6), never out of its budget of calls either: the grammar's work grows with
    /// the text, not faster.
    /// The same, with the long run's slow member (`struct { u8 a[0x10} ;];`) as one piece
    /// among the soup's (a sequence that random soup of single pieces rarely makes).
    #[test]
    fn sizes_into_braces_cost_work_in_proportion(parts in proptest::collection::vec(proptest::sample::select(SLOW_MIX), 0..60)) {
        let text = format!("{}{}", SOUP[0], parts.concat());
        let d = import("sizes.h", text);
        proptest::prop_assert!(!gave_up(&d), "{:?}", d);
    }

    #[test]
    fn broken_headers_cost_work_in_proportion(parts in proptest::collection::vec(proptest::sample::select(SOUP), 0..400)) {
        let text: String = parts.concat();
        let shallow = prm_codegen::import::precheck::check(&text, 16).is_none();
        let d = import("soup.h", text);
        proptest::prop_assert!(!d.iter().any(|d| d.message.contains("stack limit")), "{:?}", d);
        if shallow {
            proptest::prop_assert!(!gave_up(&d), "{:?}", d);
        }
    }
}
