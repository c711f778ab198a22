//! `prmc import` on a small header that uses every construct of `mlx5_ifc.h`: the YAML it
//! writes is snapshotted, checks clean, and lays every field where the header puts it.

use prm_codegen::import::import;
use std::path::PathBuf;

fn toy() -> prm_codegen::import::Import {
    import(&[PathBuf::from("tests/import/toy_ifc.h")]).expect("readable")
}

/// Compiles the spec files an import wrote; they must check clean.
fn compile_clean(imp: prm_codegen::import::Import) -> prm_codegen::Compilation {
    let c = prm_codegen::compile_sources(
        imp.files
            .into_iter()
            .map(|(n, t)| (PathBuf::from(n), t))
            .collect(),
    );
    assert!(c.is_ok(), "{}", c.render_human());
    c
}

#[test]
fn yaml_and_diagnostics_are_stable() {
    let imp = toy();
    assert_eq!(imp.files.len(), 1);
    insta::assert_snapshot!("toy_ifc_yaml", &imp.files[0].1);
    let rendered: String = imp
        .diagnostics
        .sorted()
        .into_iter()
        .map(|d| prm_codegen::diag::render_human(d, &imp.sources))
        .collect();
    insta::assert_snapshot!("toy_ifc_diagnostics", rendered);
}

#[test]
fn imported_layouts_check_clean_and_keep_offsets() {
    let imp = toy();
    // The one broken `_bits` structure is an error; the helper C struct is skipped silently.
    assert_eq!(imp.diagnostics.error_count(), 1);
    let c = compile_clean(imp);
    let q = c.ir.find_struct("toy_query_in").unwrap();
    let f = |n: &str| {
        let f = q
            .fields
            .iter()
            .find(|f| f.name == n)
            .unwrap_or_else(|| panic!("{n}"));
        (f.bit_offset, f.span_bits())
    };
    assert_eq!(f("hdr"), (0, 0x40));
    assert_eq!(f("big_flag"), (0x40, 1)); // lower-cased from Big_Flag
    assert_eq!(f("vlan"), (0x50, 0x10));
    assert_eq!(f("mac"), (0x60, 0x30));
    assert_eq!(f("nibbles"), (0x90, 0x20));
    assert_eq!(f("addr"), (0xc0, 0x40));
    assert_eq!(f("odd_mask"), (0x100, 0x2c)); // crosses a dword off byte boundaries: bit array
    assert_eq!(f("counters"), (0x140, 3 * 0x20)); // TOY_NUM_COUNTERS = 2 + 1
    assert_eq!(f("choice"), (0x1a0, 0x40));
    assert_eq!(f("inner_a"), (0x1e0, 0x10)); // anonymous struct flattened
    assert_eq!(f("smalls"), (0x200, 0x20)); // 16-bit structs: written as bytes
    assert_eq!(f("cap"), (0x220, 0x40));
    assert_eq!(q.size * 8, 0x260);
    assert!(c.ir.find_struct("toy_helper").is_none());
    assert!(c.ir.find_union("toy_query_in_choice").is_some());
    assert!(c.ir.find_struct("toy_cap_union_raw_word").is_some());
}

/// `DECLARE_FLEX_ARRAY` (6.12's `rqtc`): a trailing array; in an anonymous union of such
/// arrays, the first is written and each other one is a warning, not an error. A structure
/// that is only a flexible array (6.12's `qp_pas_list_in`) is skipped with a warning, and so
/// is a union member of its type.
#[test]
fn declare_flex_array_is_a_trailing_array() {
    let imp = import(&[PathBuf::from("tests/import/flex_ifc.h")]).expect("readable");
    assert_eq!(imp.diagnostics.error_count(), 0);
    let warnings: Vec<String> = imp
        .diagnostics
        .sorted()
        .into_iter()
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("`wide_entry`") && warnings[0].contains("`entry`"));
    assert!(warnings[1].contains("`toy_only_entries` is empty"));
    let c = compile_clean(imp);
    let trailing = |s: &str, f: &str| {
        let st = c.ir.find_struct(s).unwrap_or_else(|| panic!("{s}"));
        let fl = st.fields.iter().find(|x| x.name == f).unwrap();
        assert_eq!(st.fields.len(), 2, "{s}: {:?}", st.fields);
        (st.size, fl.bit_offset, fl.count, fl.ty.clone())
    };
    use prm_codegen::ir::{ArrayCount, FieldType};
    let entry = FieldType::Struct("toy_entry".into());
    assert_eq!(
        trailing("toy_table", "entry"),
        (4, 0x20, Some(ArrayCount::Trailing), entry.clone())
    );
    assert_eq!(
        trailing("toy_list", "item"),
        (4, 0x20, Some(ArrayCount::Trailing), entry)
    );
    let create = c.ir.find_struct("toy_create_in").unwrap();
    assert_eq!(create.size, 8);
    assert!(c.ir.find_struct("toy_only_entries").is_none());
    let tail = c.ir.find_union("toy_tail").unwrap();
    let members: Vec<&str> = tail.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(members, ["counted"]);
}

#[test]
fn missing_header_is_an_io_error() {
    assert!(import(&[PathBuf::from("tests/import/nope.h")]).is_err());
}

/// A flexible array in an anonymous union with reserved room (7.x's `query_esw_functions_out`):
/// the structure keeps the size the room gives it (the C `sizeof`: a flexible array adds
/// nothing), and the array is written as the elements that fit in the room, each a warning.
#[test]
fn flexible_array_over_reserved_room_keeps_the_size() {
    let imp = import(&[PathBuf::from("tests/import/flex_room_ifc.h")]).expect("readable");
    assert_eq!(imp.diagnostics.error_count(), 0);
    let warnings: Vec<String> = imp
        .diagnostics
        .sorted()
        .into_iter()
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("`picks`") && warnings[0].contains("the 2 element(s)"));
    assert!(warnings[1].contains("`pairs`") && warnings[1].contains("the 0 element(s)"));
    let c = compile_clean(imp);
    use prm_codegen::ir::{ArrayCount, FieldType};
    // By hand from the fixture: 0x40 bits of header + 0xa0 bits of room = 0xe0 bits = 0x1c
    // bytes; `picks` at bit 0x40, two 0x40-bit elements, then 0x20 reserved bits.
    let report = c.ir.find_struct("toy_report_out").unwrap();
    assert_eq!(report.size, 0x1c);
    let picks = report.fields.iter().find(|f| f.name == "picks").unwrap();
    assert_eq!(
        (
            picks.bit_offset,
            picks.span_bits(),
            picks.count,
            picks.ty.clone()
        ),
        (
            0x40,
            0x80,
            Some(ArrayCount::Fixed(2)),
            FieldType::Union("toy_pick".into())
        )
    );
    let names: Vec<&str> = report.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["status", "entries", "picks"]);
    // 0x20 + 0x20 bits = 8 bytes, nothing but `status`.
    let short = c.ir.find_struct("toy_short_out").unwrap();
    assert_eq!(short.size, 8);
    let names: Vec<&str> = short.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["status"]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, ..Default::default() })]

    /// Whatever the room and element widths, the members written for a flexible array over
    /// reserved room fill the room exactly, with as many whole elements as fit.
    #[test]
    fn flexible_array_over_room_fills_the_room(room in 0u64..1 << 24, elem in 0u64..1 << 16) {
        use prm_codegen::import::{flex, Member};
        let list = Member::Nested {
            union: false,
            tag: "t".into(),
            name: "l".into(),
            count: Some(None),
            span: Default::default(),
        };
        let (laid, warning) = flex::as_fixed(&list, room, elem).expect("a flexible array");
        let mut total = 0;
        let mut fit = 0;
        for m in &laid {
            match m {
                Member::Nested { count: Some(Some(n)), .. } => { fit = *n; total += n * elem; }
                Member::Field { dims, .. } => total += dims[0].unwrap(),
                other => proptest::prop_assert!(false, "{other:?}"),
            }
        }
        proptest::prop_assert_eq!(total, room);
        // By definition: the whole elements that fit (none of a zero-width type).
        let expected = match elem {
            0 => 0,
            e => room / e,
        };
        proptest::prop_assert_eq!(fit, expected);
        let said = format!("the {fit} element(s)");
        proptest::prop_assert!(warning.contains(&said), "{}", warning);
    }
}

/// Opcode constants become commands where the header has both mailboxes with the PRM's
/// headers: `MLX5_CMD_OP_TOY_GO` pairs `toy_go_in`/`toy_go_out`; `TOY_HALF` has no output
/// layout and `TOY_BAD`'s input has no op_mod, so neither is a command.
#[test]
fn opcodes_pair_with_their_mailboxes() {
    let header = "enum {\n\tMLX5_CMD_OP_TOY_GO = 0x901,\n\tMLX5_CMD_OP_TOY_HALF = 0x902,\n\tMLX5_CMD_OP_TOY_BAD = 0x903,\n};\n\
struct mlx5_ifc_toy_go_in_bits {\n\tu8 opcode[0x10];\n\tu8 uid[0x10];\n\tu8 reserved_at_20[0x10];\n\tu8 op_mod[0x10];\n\tu8 arg[0x20];\n\tu8 reserved_at_60[0x20];\n};\n\
struct mlx5_ifc_toy_go_out_bits {\n\tu8 status[0x8];\n\tu8 reserved_at_8[0x18];\n\tu8 syndrome[0x20];\n\tu8 reserved_at_40[0x40];\n};\n\
struct mlx5_ifc_toy_half_in_bits {\n\tu8 opcode[0x10];\n\tu8 uid[0x10];\n\tu8 reserved_at_20[0x10];\n\tu8 op_mod[0x10];\n};\n\
struct mlx5_ifc_toy_bad_in_bits {\n\tu8 opcode[0x10];\n\tu8 uid[0x10];\n\tu8 reserved_at_20[0x20];\n};\n\
struct mlx5_ifc_toy_bad_out_bits {\n\tu8 status[0x8];\n\tu8 reserved_at_8[0x18];\n\tu8 syndrome[0x20];\n};\n";
    let imp =
        prm_codegen::import::import_sources(vec![(PathBuf::from("cmd_ifc.h"), header.into())]);
    assert_eq!(imp.diagnostics.error_count(), 0);
    assert_eq!(imp.commands, 1);
    let text = &imp.files[0].1;
    assert!(
        text.contains("commands:\n  toy_go: { opcode: 0x901, in: toy_go_in, out: toy_go_out }\n"),
        "{text}"
    );
    assert!(
        !text.contains("toy_half:") && !text.contains("toy_bad:"),
        "{text}"
    );
    let c = prm_codegen::compile_sources(
        imp.files
            .iter()
            .map(|(n, t)| (PathBuf::from(n), t.clone()))
            .collect(),
    );
    assert!(c.is_ok(), "{}", c.render_human());
    assert_eq!(c.ir.commands.len(), 1);
    assert_eq!(c.ir.commands[0].opcode, 0x901);
}

/// The header's enums become spec enums: a tagged one by its tag, an anonymous one by its
/// constants' common prefix (nine in ten share it; the odd one keeps its own name), values by
/// the rest; one whose value names collide is left out.
#[test]
fn header_enums_become_spec_enums() {
    let header = "enum mlx5_port_status {\n\tMLX5_PORT_UP = 1,\n\tMLX5_PORT_DOWN = 2,\n};\n\
enum {\n\tMLX5_TOY_OP_A = 0x10,\n\tMLX5_TOY_OP_B,\n\tMLX5_TOY_OP_C = 0x20,\n\tMLX5_TOY_OP_D,\n\tMLX5_TOY_OP_E,\n\tMLX5_TOY_OP_F,\n\tMLX5_TOY_OP_G,\n\tMLX5_TOY_OP_H,\n\tMLX5_TOY_OP_I,\n\tMLX5_TOY_OPCODE_Z = 0x30,\n};\n\
enum {\n\tMLX5_CLASH_X_A = 1,\n\tMLX5_CLASH_X_a = 2,\n};\n\
struct mlx5_ifc_toy_bits {\n\tu8 a[0x20];\n};\n";
    let imp = prm_codegen::import::import_sources(vec![(PathBuf::from("e_ifc.h"), header.into())]);
    assert_eq!(imp.diagnostics.error_count(), 0);
    assert_eq!(imp.spec_enums, 2, "{}", imp.files[0].1);
    let c = prm_codegen::compile_sources(
        imp.files
            .iter()
            .map(|(n, t)| (PathBuf::from(n), t.clone()))
            .collect(),
    );
    assert!(c.is_ok(), "{}", c.render_human());
    let status = c.ir.find_enum("port_status").expect("tagged enum");
    let v: Vec<(&str, u64)> = status
        .values
        .iter()
        .map(|v| (v.name.as_str(), v.value))
        .collect();
    assert_eq!(v, [("up", 1), ("down", 2)]);
    let op = c.ir.find_enum("toy_op").expect("anonymous enum by prefix");
    let v: Vec<(&str, u64)> = op
        .values
        .iter()
        .map(|v| (v.name.as_str(), v.value))
        .collect();
    assert_eq!(v[..3], [("a", 0x10), ("b", 0x11), ("c", 0x20)]);
    assert_eq!(v.last(), Some(&("toy_opcode_z", 0x30)));
    assert!(
        c.ir.enums.iter().all(|e| !e.name.starts_with("clash")),
        "colliding names left out"
    );
}

/// Text the importer skips or cannot read is scanned a run at a time (header.pest's `*_text`
/// rules), not a character at a time; what is read stays as before: a "/" that starts no
/// comment is plain text, comments hide braces, brackets and semicolons, a comment after an
/// array size or an enumerator's value is not part of it. A comment never closed is one error
/// where it opens, the header unread (it used to hide the rest of the file without a word).
#[test]
fn skipped_text_runs() {
    let header = r#"#define HALF (0x10 \
	/ 2)
int ratio = 3 / 2; /* ; { */
struct helper { int q; /* } */ char c[2 / 1]; };
struct mlx5_ifc_runs_bits {
	u8 a[0x8 /* eight ] */];
	u8 b[ HALF ];
	u8 c[0x10/2 // half
	];
	garbage / here ;
	u8 d[0x8];
};
enum { RUNS_A = 1 /* , */, RUNS_B = 4 / 2, RUNS_C };
int tail = 1 / /* c */ 1;
"#;
    let imp = prm_codegen::import::import_sources(vec![("runs.h".into(), header.to_string())]);
    let errors: Vec<&str> = imp
        .diagnostics
        .iter()
        .filter(|d| d.severity == prm_codegen::diag::Severity::Error)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        errors,
        ["cannot read `garbage / here ;` in `mlx5_ifc_runs_bits`"],
        "only the unreadable member is an error"
    );
    // The bad member leaves its layout out; the same header without it shows how the rest
    // was read.
    let fixed = header.replace("\tgarbage / here ;\n", "");
    let imp = prm_codegen::import::import_sources(vec![("runs.h".into(), fixed)]);
    assert_eq!(imp.diagnostics.error_count(), 0);
    let c = compile_clean(imp);
    let s = c.ir.find_struct("runs").expect("runs imported");
    let widths: Vec<(String, u32)> = s
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("reserved"))
        .map(|f| (f.name.clone(), f.span_bits() as u32))
        .collect();
    let want = [("a", 8), ("b", 8), ("c", 8), ("d", 8)].map(|(n, w)| (n.to_string(), w));
    assert_eq!(widths, want);

    let unclosed =
        format!("{header}/* unterminated\nstruct mlx5_ifc_hidden_bits {{ u8 x[0x20]; }};\n");
    let imp = prm_codegen::import::import_sources(vec![("runs.h".into(), unclosed)]);
    let d = imp.diagnostics.sorted();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].message,
        "this `/*` is never closed by a `*/`: the header is not read"
    );
    assert_eq!((d[0].span.line, d[0].span.col), (15, 1));
}

/// A `_bits` layout the grammar cannot read as one is an error where reading stopped, not text
/// skipped without a word (as it was when its members read but it did not end with `};`, or
/// held a stray `;`); an inline structure with an array size is one unreadable member, not a
/// `;` inside it taken for the end of the member.
#[test]
fn a_layout_that_does_not_read_is_an_error_where_it_stops() {
    let cases = [
        (
            "struct mlx5_ifc_a_bits {\n\tu8 a[0x20];;\n};\n",
            (2, 13),
            "cannot read `mlx5_ifc_a_bits` from here on: the layout is left out",
        ),
        (
            "struct mlx5_ifc_a_bits {\n\tu8 a[0x20];\n} __packed;\n",
            (3, 2),
            "`mlx5_ifc_a_bits` must end with `;` after its closing brace: the layout is left out",
        ),
        (
            "union mlx5_ifc_a_bits {\n\tu8 a[0x20];\n}\nstruct mlx5_ifc_b_bits {\n\tu8 b[0x20];\n};\n",
            (3, 2),
            "`mlx5_ifc_a_bits` must end with `;` after its closing brace: the layout is left out",
        ),
        (
            "struct mlx5_ifc_a_bits {\n\tunion {\n\t\tu8 b[0x20];\n\t\tstruct { u8 c[0x20]; } d[2];\n\t};\n};\n",
            (4, 3),
            "cannot read `struct { u8 c[0x20]; } d[2];` in `mlx5_ifc_a_bits`",
        ),
    ];
    for (text, at, message) in cases {
        let imp = prm_codegen::import::import_sources(vec![(PathBuf::from("t.h"), text.into())]);
        let d = imp.diagnostics.sorted();
        assert_eq!(d.len(), 1, "{text}: {d:?}");
        assert_eq!((d[0].span.line, d[0].span.col), at, "{text}");
        assert_eq!(d[0].message, message, "{text}");
        assert_eq!(imp.layouts, 0, "{text}");
    }
    // Other structures that are not layouts are still skipped quietly, their array sizes
    // unread (Linux's device.h and driver.h size some with `MLX5_ST_SZ_BYTES(...)`).
    let text = "struct mlx5_ifc_helper { int x; } __packed;\nstruct other { int y;; };\n\
                struct mlx5_rl_entry { u8 rl_raw[MLX5_ST_SZ_BYTES(set_pp_rate_limit_context)]; };\n";
    let imp = prm_codegen::import::import_sources(vec![(PathBuf::from("t.h"), text.into())]);
    assert!(imp.diagnostics.is_empty(), "{:?}", imp.diagnostics.sorted());
}

/// Headers are read within limits, each refused before it is read with the reason: a FIFO
/// (its read would block forever), `/dev/zero` (never ends), a file over the size limit, text
/// that is not UTF-8 (at its line and column), an import of more headers than the limit; and a
/// quoted include that leaves the includer's directory is a warning, not a read.
#[test]
fn headers_are_read_within_limits() {
    use prm_codegen::import::read::{MAX_HEADERS, MAX_HEADER_BYTES};
    let dir = tempfile::tempdir().unwrap();
    let err = |path: PathBuf| import(&[path]).expect_err("refused").to_string();

    let fifo = dir.path().join("fifo.h");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    // Were the FIFO opened for reading, this writer would let the open return (and the
    // read end at once), so the import would succeed and the test fail instead of hanging.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::os::unix::fs::OpenOptionsExt;
            for _ in 0..20 {
                let open = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                    .open(&fifo);
                if open.is_ok() {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            false
        })
    };
    assert!(err(fifo).ends_with("fifo.h: not a regular file: a header is read from a file"));
    assert!(!writer.join().unwrap(), "the FIFO was opened for reading");
    assert!(err("/dev/zero".into()).contains("not a regular file"));

    let big = dir.path().join("big.h");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(MAX_HEADER_BYTES + 1).unwrap(); // sparse: nothing is written or read
    assert!(err(big).ends_with(&format!(
        "big.h: {} bytes, more than the 16 MiB a header may hold",
        MAX_HEADER_BYTES + 1
    )));

    let latin1 = dir.path().join("latin1.h");
    std::fs::write(
        &latin1,
        "/* ok */\n/* café */ /* caf"
            .bytes()
            .chain([0xe9])
            .collect::<Vec<_>>(),
    )
    .unwrap();
    // Column 18: the 17 characters before the byte, "é" one of them.
    let e = err(latin1);
    assert!(
        e.ends_with("latin1.h:2:18: byte 0xe9 is not UTF-8: a header is C source text"),
        "{e}"
    );

    // A chain of headers, each including the next, one longer than the limit.
    for i in 0..=MAX_HEADERS {
        let text = format!("#include \"h{}.h\"\n", i + 1);
        std::fs::write(dir.path().join(format!("h{i}.h")), text).unwrap();
    }
    assert!(
        err(dir.path().join("h0.h")).contains("one header more than the 256 an import may read")
    );

    // Outside the includer's directory: not read, however readable.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let layout = "struct mlx5_ifc_secret_bits {\n\tu8 a[0x20];\n};\n";
    std::fs::write(dir.path().join("secret.h"), layout).unwrap();
    let includer = sub.join("inc.h");
    let abs = dir.path().join("secret.h");
    let text = format!("#include \"../secret.h\"\n#include \"{}\"\n", abs.display());
    std::fs::write(&includer, text).unwrap();
    let imp = import(&[includer]).expect("readable");
    assert_eq!((imp.layouts, imp.sources.files.len()), (0, 1));
    let warnings: Vec<_> = imp.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        warnings,
        [
            "`#include \"../secret.h\"` leaves this header's directory: not followed".to_string(),
            format!(
                "`#include \"{}\"` leaves this header's directory: not followed",
                abs.display()
            )
        ]
    );
    // Beside the includer, the same layout is read.
    std::fs::write(sub.join("secret.h"), layout).unwrap();
    std::fs::write(sub.join("ok.h"), "#include \"secret.h\"\n").unwrap();
    assert_eq!(import(&[sub.join("ok.h")]).expect("readable").layouts, 1);
}

/// A layout of another header (as `mlx5_ifc_vdpa.h` uses `mlx5_ifc.h`'s command headers) is an
/// error with the way out: importing both together reads it.
#[test]
fn a_type_of_another_header_says_to_import_both() {
    let user = "struct mlx5_ifc_user_bits {\n\tstruct mlx5_ifc_hdr_bits hdr;\n};\n";
    let hdr = "struct mlx5_ifc_hdr_bits {\n\tu8 opcode[0x20];\n};\n";
    let imp = prm_codegen::import::import_sources(vec![("user.h".into(), user.into())]);
    let d = imp.diagnostics.sorted();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].message, "unknown type `mlx5_ifc_hdr_bits`");
    assert!(d[0]
        .hint
        .as_deref()
        .unwrap_or("")
        .contains("prmc import mlx5_ifc.h HEADER"));
    let both = vec![("hdr.h".into(), hdr.into()), ("user.h".into(), user.into())];
    let imp = prm_codegen::import::import_sources(both);
    assert_eq!((imp.diagnostics.error_count(), imp.layouts), (0, 2));
}
