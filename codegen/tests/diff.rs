//! `prmc diff`: the fixture pair under tests/diff (OLD and NEW differ by one change of each
//! kind), checked by hand against what the YAML says, snapshotted as text and JSON; the real
//! spec against itself and against the installed kernel header. The command line is tested in
//! `diff_cli.rs`.

use prm_codegen::diff::{self, Change, ChangeKind, ItemKind, Level, Report, Rust, Wire};
use prm_codegen::Compilation;
use proptest::prelude::*;
use std::path::Path;

fn load(dir: &str) -> Compilation {
    let c = diff::input::load(Path::new(dir)).unwrap_or_else(|e| panic!("{dir}: {e:?}"));
    assert!(c.is_ok(), "{}", c.render_human());
    c
}

fn fixture() -> Report {
    let (o, n) = (load("tests/diff/old"), load("tests/diff/new"));
    diff::diff(&o.ir, &n.ir, "old", "new")
}

/// The one change of `item`'s `member` (or the item itself) of that kind.
fn find<'a>(r: &'a Report, item: &str, member: Option<&str>, kind: ChangeKind) -> &'a Change {
    let hits: Vec<&Change> = r
        .changes
        .iter()
        .filter(|c| c.item == item && c.member.as_deref() == member && c.kind == kind)
        .collect();
    assert_eq!(hits.len(), 1, "{item} {member:?} {kind:?}: {hits:#?}");
    hits[0]
}

fn impacts(c: &Change) -> (Wire, Rust, Level) {
    (c.wire, c.rust, c.level)
}

#[test]
fn fields_each_kind_by_hand() {
    let r = fixture();
    // mv: 0x00[3:0] -> 0x00[7:4]: same width, MSB-first bit 28 -> 24.
    let c = find(&r, "ctx", Some("mv"), ChangeKind::Moved);
    assert_eq!(impacts(c), (Wire::Breaking, Rust::None, Level::Major));
    assert!(c.old.as_deref().unwrap().contains("bit 0x1c"), "{c:?}");
    assert!(c.new.as_deref().unwrap().contains("bit 0x18"), "{c:?}");
    // narrow: 12 -> 10 bits, both u16: compiles, silently narrower.
    let c = find(&r, "ctx", Some("narrow"), ChangeKind::Resized);
    assert_eq!(impacts(c), (Wire::Breaking, Rust::Silent, Level::Major));
    assert!(c
        .note
        .as_deref()
        .unwrap()
        .contains("12 to 10 bits within u16"));
    // 0x08[27:16]: dword 2, MSB-first bit 64 + (31 - 27) = 0x44; [25:16]: 0x46.
    let at = |p: &Option<diff::Place>| {
        p.as_ref()
            .map(|p| (p.bit_offset, p.width, p.rust_type.clone()))
    };
    assert_eq!(at(&c.old_at), Some((0x44, 12, "u16".to_string())));
    assert_eq!(at(&c.new_at), Some((0x46, 10, "u16".to_string())));
    // wide: 8 -> 12 bits, u8 -> u16: does not compile.
    let c = find(&r, "ctx", Some("wide"), ChangeKind::Resized);
    assert_eq!(impacts(c), (Wire::Breaking, Rust::Breaking, Level::Major));
    assert!(c.note.as_deref().unwrap().contains("from u8 to u16"));
    // grow: 4 -> 6 bits within u8: the wire changes, the API does not.
    let c = find(&r, "ctx", Some("grow"), ChangeKind::Resized);
    assert_eq!(impacts(c), (Wire::Breaking, Rust::None, Level::Major));
    // A resize is not also reported as a move, though the MSB-first offset changed.
    assert!(!r
        .changes
        .iter()
        .any(|c| c.member.as_deref() == Some("grow") && c.kind == ChangeKind::Moved));
    // old_name -> new_name at 0x0c[31:24], 8 bits: a rename, wire-neutral.
    let c = find(&r, "ctx", Some("new_name"), ChangeKind::Renamed);
    assert_eq!(impacts(c), (Wire::None, Rust::Breaking, Level::Major));
    assert!(c
        .old
        .as_deref()
        .unwrap()
        .starts_with("old_name 0x0c[31:24]"));
    // mode: uint -> enum mode_e, same bits.
    let c = find(&r, "ctx", Some("mode"), ChangeKind::Retyped);
    assert_eq!(impacts(c), (Wire::None, Rust::Breaking, Level::Major));
    assert!(c.new.as_deref().unwrap().ends_with("ModeE (raw u8)"));
    // added_ok at 0x10, past the old end (0x10 bytes): compatible.
    let c = find(&r, "ctx", Some("added_ok"), ChangeKind::Added);
    assert_eq!(impacts(c), (Wire::Compatible, Rust::Additive, Level::Minor));
    // over (0x04[31:20]) covers the removed gone (0x04[31:24]).
    let c = find(&r, "ctx", Some("over"), ChangeKind::Added);
    assert_eq!(c.wire, Wire::Breaking);
    assert_eq!(c.note.as_deref(), Some("overlaps old field(s) gone"));
    let c = find(&r, "ctx", Some("gone"), ChangeKind::Removed);
    assert_eq!(impacts(c), (Wire::Breaking, Rust::Breaking, Level::Major));
    let c = find(&r, "ctx", None, ChangeKind::SizeChanged);
    assert_eq!(
        (c.old.as_deref(), c.new.as_deref()),
        (Some("0x10 bytes"), Some("0x14 bytes"))
    );
    assert_eq!(c.level, Level::Minor);
    let c = find(&r, "ctx", Some("flag"), ChangeKind::DocChanged);
    assert_eq!(impacts(c), (Wire::None, Rust::Doc, Level::Patch));
    // Unchanged fields are not mentioned.
    assert!(!r
        .changes
        .iter()
        .any(|c| c.member.as_deref() == Some("syndrome")));
}

#[test]
fn embedded_layout_reported_once_with_its_holders() {
    let r = fixture();
    // ctx grew; do_in and again_in embed it and did not change otherwise.
    assert!(!r
        .changes
        .iter()
        .any(|c| c.item == "do_in" || c.item == "again_in"));
    let e = r.embeddings.iter().find(|e| e.layout == "ctx").unwrap();
    assert_eq!(e.embedded_in, ["do_in.ctx", "again_in.ctx", "pick.as_ctx"]);
}

#[test]
fn enums_commands_constants_unions_by_hand() {
    let r = fixture();
    let c = find(&r, "color", Some("green"), ChangeKind::ValueChanged);
    assert_eq!(
        (c.old.as_deref(), c.new.as_deref()),
        (Some("0x1"), Some("0x3"))
    );
    assert_eq!(impacts(c), (Wire::Breaking, Rust::Silent, Level::Major));
    let c = find(&r, "color", Some("amber"), ChangeKind::Renamed);
    assert_eq!(c.old.as_deref(), Some("yellow = 0x2"));
    assert_eq!(c.wire, Wire::None);
    let c = find(&r, "color", Some("blue"), ChangeKind::Added);
    assert_eq!((c.wire, c.rust), (Wire::Compatible, Rust::Breaking));
    find(&r, "color", Some("red"), ChangeKind::Removed);
    // 4 -> 8 bits keeps the repr u8.
    let c = find(&r, "color", None, ChangeKind::SizeChanged);
    assert_eq!(c.level, Level::None);
    find(&r, "mode_e", None, ChangeKind::Added);
    let c = find(&r, "do_it", None, ChangeKind::OpcodeChanged);
    assert_eq!(
        (c.old.as_deref(), c.new.as_deref()),
        (Some("0x100"), Some("0x110"))
    );
    find(&r, "do_it", Some("op_mod.cur"), ChangeKind::ValueChanged);
    find(&r, "do_it", Some("op_mod.other"), ChangeKind::Added);
    let c = find(&r, "again", None, ChangeKind::InputChanged);
    assert_eq!(c.new.as_deref(), Some("again2_in"));
    assert_eq!(
        find(&r, "fresh", None, ChangeKind::Added).level,
        Level::Minor
    );
    assert_eq!(
        find(&r, "legacy", None, ChangeKind::Removed).level,
        Level::Major
    );
    find(&r, "legacy_in", None, ChangeKind::Removed);
    let c = find(&r, "page_size", None, ChangeKind::ValueChanged);
    assert_eq!(c.rust, Rust::Silent);
    assert_eq!(
        find(&r, "max_vls", None, ChangeKind::Added).level,
        Level::Minor
    );
    let c = find(&r, "pick", Some("as_out"), ChangeKind::ValueChanged);
    assert_eq!(c.new.as_deref(), Some("when 0x5"));
    find(&r, "pick", Some("as_fresh"), ChangeKind::Added);
    find(&r, "pick", Some("dropped"), ChangeKind::Removed);
    assert_eq!(r.verdict, Level::Major);
    let items: Vec<_> = r.changes.iter().map(|c| (c.item_kind, &c.item)).collect();
    assert!(items.contains(&(ItemKind::Union, &"pick".to_string())));
    // Totals add up.
    let t = &r.totals;
    assert_eq!(
        t.major + t.minor + t.patch,
        r.changes.iter().filter(|c| c.level != Level::None).count()
    );
}

#[test]
fn access_registers_by_hand() {
    let r = fixture();
    let c = find(&r, "port_status", None, ChangeKind::IdChanged);
    assert_eq!(
        (c.old.as_deref(), c.new.as_deref()),
        (Some("0x5006"), Some("0x5007"))
    );
    assert_eq!(impacts(c), (Wire::Breaking, Rust::Silent, Level::Major));
    let c = find(&r, "port_status", None, ChangeKind::IndexChanged);
    assert_eq!(c.new.as_deref(), Some("wide, grow"));
    let c = find(&r, "port_mtu", None, ChangeKind::LayoutChanged);
    assert_eq!((c.wire, c.rust), (Wire::Breaking, Rust::Breaking));
    // Gaining a direction adds an impl; losing one breaks code that used it.
    let c = find(&r, "port_mtu", None, ChangeKind::AccessChanged);
    assert_eq!(
        (c.new.as_deref(), c.rust),
        (Some("read_write"), Rust::Additive)
    );
    let c = find(&r, "port_count", None, ChangeKind::AccessChanged);
    assert_eq!(
        (c.old.as_deref(), c.rust),
        (Some("read_write"), Rust::Breaking)
    );
    assert_eq!(
        find(&r, "newcomer", None, ChangeKind::Added).level,
        Level::Minor
    );
    assert_eq!(
        find(&r, "retired", None, ChangeKind::Removed).level,
        Level::Major
    );
    assert!(r
        .changes
        .iter()
        .filter(|c| c.item_kind == ItemKind::AccessRegister)
        .all(|c| [
            "port_status",
            "port_mtu",
            "port_count",
            "newcomer",
            "retired"
        ]
        .contains(&c.item.as_str())));
}

#[test]
fn snapshots_text_and_json() {
    let r = fixture();
    insta::assert_snapshot!("diff_fixture_text", diff::render::text(&r));
    insta::assert_snapshot!("diff_fixture_json", diff::render::json(&r));
}

#[test]
fn additions_only_are_minor() {
    let old = prm_codegen::compile_str(
        "a.yaml",
        "structs:\n  s:\n    size: 8\n    fields:\n      a: \"0x00[31:16]\"\n",
    );
    let new = prm_codegen::compile_str(
        "a.yaml",
        "structs:\n  s:\n    size: 8\n    fields:\n      a: \"0x00[31:16]\"\n      b: \"0x04[7:0]\"\n",
    );
    assert!(old.is_ok() && new.is_ok());
    let r = diff::diff(&old.ir, &new.ir, "a", "b");
    assert_eq!(r.verdict, Level::Minor);
    assert_eq!(r.changes.len(), 1);
    let back = diff::diff(&new.ir, &old.ir, "b", "a");
    assert_eq!(back.verdict, Level::Major);
}

#[test]
fn real_spec_against_itself_has_no_changes() {
    let c = load("../spec");
    let r = diff::diff(&c.ir, &c.ir, "spec", "spec");
    assert!(
        r.changes.is_empty(),
        "{:#?}",
        &r.changes[..r.changes.len().min(5)]
    );
    assert_eq!(r.verdict, Level::None);
    // The spec is large enough for that to mean something.
    assert!(c.ir.structs.len() > 50, "{}", c.ir.structs.len());
}

/// The mlx5_ifc.h installed with the guest kernel's headers (Debian's 6.12), when present:
/// against our spec, the fields that share a name must mostly agree on their bits.
#[test]
fn installed_kernel_header_against_the_spec() {
    let Some(h) = std::fs::read_dir("/usr/src").ok().and_then(|d| {
        d.filter_map(Result::ok)
            .map(|e| e.path().join("include/linux/mlx5/mlx5_ifc.h"))
            .find(|p| p.is_file())
    }) else {
        eprintln!("no kernel header under /usr/src; skipped");
        return;
    };
    let Ok(hdr) = diff::input::load(&h) else {
        eprintln!("{} does not import yet; skipped", h.display());
        return;
    };
    let spec = load("../spec");
    let r = diff::diff(&hdr.ir, &spec.ir, "header", "spec");
    // The spec is checked against this header: no shared field moved or changed size.
    let wire_moves: Vec<&Change> = r
        .changes
        .iter()
        .filter(|c| matches!(c.kind, ChangeKind::Moved | ChangeKind::Resized))
        .collect();
    assert!(wire_moves.is_empty(), "{wire_moves:#?}");
    // Types differ (the header has no enums or flags; the spec does), bits do not: every
    // retyping is wire-neutral. (Which fields are retyped depends on the importer, which may
    // learn flags and enums; this holds either way.)
    for c in r.changes.iter().filter(|c| c.kind == ChangeKind::Retyped) {
        assert_eq!(c.wire, Wire::None, "{c:#?}");
    }
    let same = diff::diff(&hdr.ir, &hdr.ir, "header", "header");
    assert!(same.changes.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any spec the compiler accepts (the NEW fixture with one number changed) diffs against
    /// OLD without a panic, against itself with no change, and the verdict is the largest level.
    #[test]
    fn mutated_specs_diff_without_panic(at in 0usize..4000, digit in 0u8..16) {
        let text = std::fs::read_to_string("tests/diff/new/pair.yaml").unwrap();
        let digits: Vec<usize> = text
            .match_indices("0x")
            .map(|(i, _)| i + 2)
            .filter(|&i| text.as_bytes().get(i).is_some_and(u8::is_ascii_hexdigit))
            .collect();
        let i = digits[at % digits.len()];
        let mut bytes = text.into_bytes();
        bytes[i] = b"0123456789abcdef"[digit as usize];
        let text = String::from_utf8(bytes).unwrap();
        let c = prm_codegen::compile_str("new/pair.yaml", &text);
        prop_assume!(c.is_ok());
        let old = load("tests/diff/old");
        let r = diff::diff(&old.ir, &c.ir, "old", "mutated");
        let _ = diff::render::text(&r);
        let _ = diff::render::json(&r);
        prop_assert_eq!(r.verdict, r.changes.iter().map(|c| c.level).max().unwrap_or(Level::None));
        prop_assert!(diff::diff(&c.ir, &c.ir, "m", "m").changes.is_empty());
    }
}

#[test]
fn generated_tables_read_back_like_the_spec() {
    // The fresh generation's tables agree with the IR on every scalar field of cqc.
    let c = load("../spec");
    let files = prm_codegen::gen::Config::for_mlx5_prm()
        .generate(&c.ir)
        .unwrap();
    let ir = diff::generated::tables_ir(files.iter().map(|f| f.contents.as_str()));
    let (spec_cqc, table_cqc) = (
        c.ir.find_struct("cqc").unwrap(),
        ir.find_struct("cqc").unwrap(),
    );
    assert_eq!(spec_cqc.size, table_cqc.size);
    let f = table_cqc
        .fields
        .iter()
        .find(|f| f.name == "log_cq_size")
        .unwrap();
    assert_eq!((f.bit_offset, f.width), (0x63, 5));
    assert_eq!(spec_cqc.fields.len(), table_cqc.fields.len());
    // What each field holds comes back too: flags, enums by name, numbers.
    let ty = |name: &str| {
        let f = table_cqc.fields.iter().find(|f| f.name == name).unwrap();
        f.ty.clone()
    };
    use prm_codegen::ir::FieldType;
    assert_eq!(ty("cqe_sz"), FieldType::Enum("cqe_size".into()));
    assert_eq!(ty("oi"), FieldType::Bool);
    assert_eq!(ty("uar_page"), FieldType::Uint);
    // Every field of every layout reads back with the spec's kind (enums, flags and bytes
    // as such; every other number as a plain one).
    for s in &c.ir.structs {
        let t = ir.find_struct(&s.name).unwrap();
        assert_eq!(s.fields.len(), t.fields.len(), "{}", s.name);
        for a in &s.fields {
            let b = t.fields.iter().find(|b| b.name == a.name);
            let b = b.unwrap_or_else(|| panic!("{}.{} read back", s.name, a.name));
            let want = match &a.ty {
                FieldType::Enum(_) | FieldType::Bool | FieldType::Bytes => a.ty.clone(),
                FieldType::Struct(_) | FieldType::Union(_) => a.ty.clone(),
                _ => FieldType::Uint,
            };
            assert_eq!((&a.name, &b.ty), (&b.name, &want), "{}", s.name);
        }
    }
    // Nested layouts come back as nested entries with their type.
    let cin = ir.find_struct("create_cq_in").unwrap();
    let n = cin.fields.iter().find(|f| f.name == "cq_context").unwrap();
    assert_eq!(n.ty, prm_codegen::ir::FieldType::Struct("cqc".into()));
    assert_eq!(diff::diff(&ir, &ir, "a", "a").changes.len(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The table reader takes any text without a panic.
    #[test]
    fn table_reader_never_panics(lines in proptest::collection::vec(proptest::sample::select(&[
        "rt::reflect::LayoutAccess {", "rt::reflect::FieldAccess {", "rt::reflect::NestedAccess {",
        "name: \"x\",", "name: \"", "size: 99999999999999999999999,", "size: 0x10,", "bit_offset: 4,",
        "width: 18446744073709551615,", "count: 0,", "trailing: true,", "layout: \"y\",",
        "kind: rt::reflect::NestedKind::Union,", "byte_offset: 18446744073709551615,", "}", ": ", "",
        "kind: rt::reflect::ValueKind::Enum {", "kind: rt::reflect::ValueKind::Flag,",
        "table: rt::reflect::NestedTable::Union(", "name: 7,",
    ][..]), 0..80), junk in "\\PC{0,200}") {
        let mut text = lines.join("\n");
        text.push_str(&junk);
        let ir = diff::generated::tables_ir([text.as_str()]);
        let r = diff::diff(&ir, &prm_codegen::ir::Ir::default(), "a", "b");
        let _ = diff::render::text(&r);
    }
}

#[test]
fn register_access_by_direction() {
    let spec = |access: &str| {
        let c = prm_codegen::compile_str(
            "r.yaml",
            &format!("registers:\n  regs:\n    size: 8\n    fields:\n      a: {{ at: \"0x00[31:0]\"{access} }}\n"),
        );
        assert!(c.is_ok(), "{}", c.render_human());
        c
    };
    let (none, rw, ro) = (spec(""), spec(", access: rw"), spec(", access: ro"));
    // No access is read-write, as the generator reads it: nothing to report.
    assert!(diff::diff(&none.ir, &rw.ir, "a", "b").changes.is_empty());
    let r = diff::diff(&rw.ir, &ro.ir, "a", "b");
    let c = find(&r, "regs", Some("a"), ChangeKind::Retyped);
    assert_eq!(
        (c.old.as_deref(), c.new.as_deref()),
        (Some("access rw"), Some("access ro"))
    );
    assert_eq!((c.wire, c.rust), (Wire::None, Rust::Breaking));
    let c = &diff::diff(&ro.ir, &rw.ir, "a", "b").changes[0];
    assert_eq!(c.rust, Rust::Additive);
}
