//! Snapshots of `prmc show` and `prmc layout --json` on a small spec that uses every kind of
//! item, and of the resolved offsets the kernel numbering predicts.

use prm_codegen::{compile_dir, layout, show};
use std::path::Path;

fn good() -> prm_codegen::Compilation {
    let c = compile_dir(Path::new("tests/good")).expect("fixture dir readable");
    assert!(c.diagnostics.is_empty(), "{}", c.render_human());
    c
}

#[test]
fn show_tables() {
    let c = good();
    for s in &c.ir.structs {
        insta::assert_snapshot!(format!("show_{}", s.name), show::table(&c.ir, s));
    }
    for u in &c.ir.unions {
        insta::assert_snapshot!(format!("show_{}", u.name), show::union_table(&c.ir, u));
    }
}

#[test]
fn layout_json() {
    let c = good();
    insta::assert_snapshot!("layout_json", layout::to_json(&c.ir));
}

#[test]
fn layout_text_lists_words_after_fields() {
    let c = good();
    let text = layout::to_text(&layout::layout(&c.ir));
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("toy_init_seg\t"))
        .collect();
    // The word's row: name, offset of its first bit, width, kind `word`, the fields inside.
    assert_eq!(
        rows.last(),
        Some(&"toy_init_seg\tring\t0x40\t32\tword\tdoorbell")
    );
    assert!(rows.len() > 1, "the fields come first: {rows:?}");
}

#[test]
fn offsets_use_the_kernel_numbering() {
    let c = good();
    let s = c.ir.find_struct("toy_general_cap").unwrap();
    let f = |n: &str| s.fields.iter().find(|f| f.name == n).unwrap();
    // 0x00[4:0]: the five low bits of dword 0 start 27 bits after its MSB.
    assert_eq!((f("log_max_qp").bit_offset, f("log_max_qp").width), (27, 5));
    assert_eq!(
        (f("sys_image_guid").bit_offset, f("sys_image_guid").width),
        (0x40, 64)
    );
    assert_eq!((f("mac").bit_offset, f("mac").width), (0x90, 48));
    assert_eq!((f("gid").bit_offset, f("gid").width), (0x100, 128));

    // Nested union expanded with dotted paths and absolute offsets.
    let out = c.ir.find_struct("query_toy_cap_out").unwrap();
    let l = layout::struct_layout(&c.ir, out);
    let e = l
        .fields
        .iter()
        .find(|f| f.name == "capability.port.up")
        .expect("expanded union member field");
    assert_eq!((e.bit_offset, e.width), (0x80 + 31, 1));
}

#[test]
fn every_cross_file_reference_resolves() {
    let c = good();
    let u = c.ir.find_union("toy_cap_union").unwrap();
    let sel = u.selector.as_ref().unwrap();
    assert_eq!(
        (
            sel.structure.as_str(),
            sel.field.as_str(),
            sel.bit_offset,
            sel.width,
            sel.shift
        ),
        ("query_toy_cap_in", "op_mod", 0x30, 16, 1)
    );
    assert_eq!(c.ir.find_command("query_toy_cap").unwrap().opcode, 0x100);
}

#[test]
fn two_files_may_not_make_one_module() {
    let c = prm_codegen::compile_sources(vec![
        ("a/cq.yaml".into(), "doc: one\n".into()),
        ("b/cq.yaml".into(), "doc: two\n".into()),
    ]);
    let codes: Vec<&str> = c.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["module-name"], "{}", c.render_human());
}
