//! The generated reflection tables against the IR they come from, for the real spec
//! (`mlx5_prm`) and the toy spec (`prm_tests::toy`, generated from `build.rs`): every nested
//! field names a layout that exists and has the size the field says, every union member's
//! layout exists, selectors sit where the IR resolved them, lookups by name find each table,
//! and `cmd::ALL` holds exactly the spec's commands with layouts that exist.

use mlx5_prm::rt::reflect::{LayoutAccess, NestedKind, NestedTable, UnionAccess, ValueKind};
use mlx5_prm::rt::CommandInfo;
use prm_codegen::ir::{ArrayCount, FieldType, Ir};

/// One generated crate's tables and lookups.
struct Tables {
    what: &'static str,
    ir: Ir,
    layouts: &'static [LayoutAccess],
    unions: &'static [UnionAccess],
    layout_by_name: fn(&str) -> Option<&'static LayoutAccess>,
    union_by_name: fn(&str) -> Option<&'static UnionAccess>,
    commands: &'static [CommandInfo],
    by_opcode: fn(u16) -> Option<&'static CommandInfo>,
}

fn compile(dir: std::path::PathBuf) -> Ir {
    let c = prm_codegen::compile_dir(&dir).unwrap();
    assert!(c.is_ok(), "{}", c.render_human());
    c.ir
}

fn both() -> [Tables; 2] {
    [
        Tables {
            what: "spec/",
            ir: compile(prm_tests::spec_dir()),
            layouts: mlx5_prm::ALL_LAYOUTS,
            unions: mlx5_prm::ALL_UNIONS,
            layout_by_name: mlx5_prm::layout_by_name,
            union_by_name: mlx5_prm::union_by_name,
            commands: mlx5_prm::cmd::ALL,
            by_opcode: mlx5_prm::cmd::by_opcode,
        },
        Tables {
            what: "toy spec",
            ir: compile(prm_tests::workspace_root().join("codegen/tests/good")),
            layouts: prm_tests::toy::ALL_LAYOUTS,
            unions: prm_tests::toy::ALL_UNIONS,
            layout_by_name: prm_tests::toy::layout_by_name,
            union_by_name: prm_tests::toy::union_by_name,
            commands: prm_tests::toy::cmd::ALL,
            by_opcode: prm_tests::toy::cmd::by_opcode,
        },
    ]
}

#[test]
fn every_nested_field_names_a_layout_of_its_size() {
    for t in both() {
        let mut checked = 0;
        for (l, s) in t.layouts.iter().zip(&t.ir.structs) {
            assert_eq!(l.name, s.name, "{}", t.what);
            let nested: Vec<_> = s
                .fields
                .iter()
                .filter(|f| matches!(f.ty, FieldType::Struct(_) | FieldType::Union(_)))
                .collect();
            assert_eq!(l.nested.len(), nested.len(), "{}: {}", t.what, s.name);
            for (n, f) in l.nested.iter().zip(nested) {
                let at = format!("{}: {}.{}", t.what, s.name, f.name);
                assert_eq!(n.name, f.name, "{at}");
                assert_eq!(n.layout, f.ty.name(), "{at}");
                assert_eq!(n.byte_offset * 8, f.bit_offset as usize, "{at}");
                assert_eq!(n.size * 8, f.width as usize, "{at}");
                assert_eq!(n.stride, n.size, "{at}: arrays are packed");
                // The table the entry points at is the one of that name.
                let linked = match n.table {
                    NestedTable::Struct(x) => (x.name, x.size),
                    NestedTable::Union(x) => (x.name, x.size),
                };
                assert_eq!(linked, (n.layout, n.size), "{at}: linked table");
                let size = match (&f.ty, n.kind()) {
                    (FieldType::Struct(_), NestedKind::Struct) => {
                        (t.layout_by_name)(n.layout).map(|x| x.size)
                    }
                    (FieldType::Union(_), NestedKind::Union) => {
                        (t.union_by_name)(n.layout).map(|x| x.size)
                    }
                    (ty, kind) => panic!("{at}: {ty:?} listed as {kind:?}"),
                };
                assert_eq!(
                    size,
                    Some(n.size),
                    "{at}: the layout exists with the field's size"
                );
                let (count, trailing) = match f.count {
                    None => (1, false),
                    Some(ArrayCount::Fixed(c)) => (c as usize, false),
                    Some(ArrayCount::Trailing) => (0, true),
                };
                assert_eq!((n.count, n.trailing), (count, trailing), "{at}");
                let runs_on = t.ir.open_nested(s).is_some_and(|o| o.name == f.name);
                assert_eq!(n.runs_on, runs_on, "{at}");
                checked += 1;
            }
        }
        assert!(checked > 0, "{}", t.what);
    }
}

#[test]
fn every_union_member_and_selector_exists() {
    for t in both() {
        assert_eq!(t.unions.len(), t.ir.unions.len(), "{}", t.what);
        let mut selectors = 0;
        for (u, iu) in t.unions.iter().zip(&t.ir.unions) {
            let at = format!("{}: union {}", t.what, iu.name);
            assert_eq!(
                (u.name, u.size),
                (iu.name.as_str(), iu.size as usize),
                "{at}"
            );
            assert_eq!(u.members.len(), iu.members.len(), "{at}");
            for (m, im) in u.members.iter().zip(&iu.members) {
                assert_eq!(
                    (m.name, m.layout, m.when),
                    (im.name.as_str(), im.ty.as_str(), im.when),
                    "{at}"
                );
                let l = (t.layout_by_name)(m.layout)
                    .unwrap_or_else(|| panic!("{at}: member {} has no layout", m.name));
                assert!(
                    std::ptr::eq(l, m.table) || (l.name, l.size) == (m.table.name, m.table.size),
                    "{at}: member {} links another table",
                    m.name
                );
                assert!(
                    l.size <= u.size,
                    "{at}: member {} is larger than the union",
                    m.name
                );
            }
            match (&u.selector, &iu.selector) {
                (None, None) => {}
                (Some(s), Some(is)) => {
                    selectors += 1;
                    assert_eq!(
                        (
                            s.layout,
                            s.field,
                            s.bit_offset,
                            s.width as u64,
                            s.shift as u64
                        ),
                        (
                            is.structure.as_str(),
                            is.field.as_str(),
                            is.bit_offset as usize,
                            is.width,
                            is.shift
                        ),
                        "{at}"
                    );
                    let holder = (t.layout_by_name)(s.layout).expect("selector layout");
                    assert!(s.bit_offset + s.width as usize <= holder.size * 8, "{at}");
                    // A selector at the top of its layout is that layout's field, so
                    // reading its bits gives what the generated getter gives.
                    if let Some(f) = holder.field(s.field) {
                        assert_eq!((f.bit_offset, f.width), (s.bit_offset, s.width), "{at}");
                        let mut buf = vec![0u8; holder.size];
                        (f.set.expect("writable"))(&mut buf, 0, u64::MAX);
                        let all = if s.width == 64 {
                            u64::MAX
                        } else {
                            (1 << s.width) - 1
                        };
                        assert_eq!(s.read(&buf), Some(all), "{at}");
                        assert_eq!(
                            s.read(&buf[..(s.bit_offset + s.width as usize) / 8 - 1]),
                            None,
                            "{at}"
                        );
                    }
                    for m in u.members {
                        let raw = m.when.unwrap() << s.shift;
                        assert_eq!(u.member_for(raw).map(|x| x.name), Some(m.name), "{at}");
                    }
                }
                (s, is) => panic!("{at}: selector {s:?} but the IR has {is:?}"),
            }
        }
        assert!(selectors > 0, "{}", t.what);
    }
}

#[test]
fn lookups_by_name_find_every_table_and_nothing_else() {
    for t in both() {
        for l in t.layouts {
            assert!(
                std::ptr::eq((t.layout_by_name)(l.name).unwrap(), l),
                "{}: {}",
                t.what,
                l.name
            );
            assert!(
                (t.union_by_name)(l.name).is_none(),
                "{}: {}",
                t.what,
                l.name
            );
        }
        for u in t.unions {
            assert!(
                std::ptr::eq((t.union_by_name)(u.name).unwrap(), u),
                "{}: {}",
                t.what,
                u.name
            );
            assert!(
                (t.layout_by_name)(u.name).is_none(),
                "{}: {}",
                t.what,
                u.name
            );
        }
        for missing in ["", "no_such_layout", "zzzz", "cqc_", "CQC"] {
            assert!((t.layout_by_name)(missing).is_none(), "{missing}");
            assert!((t.union_by_name)(missing).is_none(), "{missing}");
        }
    }
}

#[test]
fn the_command_table_is_exactly_the_specs_commands() {
    for t in both() {
        // Spec order: module by module, as the specs are loaded.
        let mut expected: Vec<_> = t.ir.commands.iter().collect();
        expected.sort_by_key(|c| c.module);
        assert_eq!(t.commands.len(), expected.len(), "{}", t.what);
        for (c, ic) in t.commands.iter().zip(expected) {
            let at = format!("{}: {}", t.what, ic.name);
            assert_eq!(
                (c.name, u64::from(c.opcode), c.input, c.output),
                (
                    ic.name.as_str(),
                    ic.opcode,
                    ic.input.as_str(),
                    ic.output.as_str()
                ),
                "{at}"
            );
            let op_mods: Vec<(&str, u64)> = c
                .op_mods
                .iter()
                .map(|m| (m.name, u64::from(m.value)))
                .collect();
            let want: Vec<(&str, u64)> = ic
                .op_mods
                .iter()
                .map(|m| (m.name.as_str(), m.value))
                .collect();
            assert_eq!(op_mods, want, "{at}");
            for m in c.op_mods {
                assert_eq!(c.op_mod_name(m.value), Some(m.name), "{at}");
            }
            assert!((t.layout_by_name)(c.input).is_some(), "{at}: input layout");
            assert!(
                (t.layout_by_name)(c.output).is_some(),
                "{at}: output layout"
            );
        }
        for opcode in 0..=u16::MAX {
            let want = t.commands.iter().find(|c| c.opcode == opcode);
            assert_eq!(
                (t.by_opcode)(opcode),
                want,
                "{}: opcode {opcode:#x}",
                t.what
            );
        }
    }
}

#[test]
fn the_command_table_agrees_with_the_command_types() {
    use mlx5_prm::rt::{Command, View};
    fn check<C: Command>(by_opcode: fn(u16) -> Option<&'static CommandInfo>) {
        let info = by_opcode(C::OPCODE).expect("listed");
        assert_eq!(info.name, C::NAME);
        assert_eq!(info.input, <C::Input<&[u8]> as View<&[u8]>>::NAME);
        assert_eq!(info.output, <C::Output<&[u8]> as View<&[u8]>>::NAME);
    }
    check::<mlx5_prm::cmd::QueryHcaCap>(mlx5_prm::cmd::by_opcode);
    check::<mlx5_prm::cmd::CreateSq>(mlx5_prm::cmd::by_opcode);
    check::<mlx5_prm::cmd::Sqerr2rtsQp>(mlx5_prm::cmd::by_opcode);
    check::<prm_tests::toy::cmd::QueryToyCap>(prm_tests::toy::cmd::by_opcode);
}

#[test]
fn every_scalar_and_bytes_field_is_listed_with_its_kind() {
    for t in both() {
        let mut flags = 0;
        let mut enums = 0;
        let mut bytes = 0;
        for (l, s) in t.layouts.iter().zip(&t.ir.structs) {
            let listed: Vec<_> = s
                .fields
                .iter()
                .filter(|f| !matches!(f.ty, FieldType::Struct(_) | FieldType::Union(_)))
                .collect();
            assert_eq!(l.fields.len(), listed.len(), "{}: {}", t.what, s.name);
            for (a, f) in l.fields.iter().zip(listed) {
                let at = format!("{}: {}.{}", t.what, s.name, f.name);
                assert_eq!(
                    (a.name, a.bit_offset, a.width as u64),
                    (f.name.as_str(), f.bit_offset as usize, f.width),
                    "{at}"
                );
                let readable = f.access != Some(prm_codegen::ir::Access::Wo);
                assert_eq!(a.readable, readable, "{at}");
                match (&f.ty, a.kind) {
                    (FieldType::Bool, ValueKind::Flag) => flags += 1,
                    (FieldType::Bytes, ValueKind::Bytes) => {
                        assert!(a.get.is_none() && a.set.is_none(), "{at}");
                        bytes += 1;
                    }
                    (FieldType::Enum(e), ValueKind::Enum { name, value_name }) => {
                        assert_eq!(name, e, "{at}");
                        let ie = t.ir.enums.iter().find(|x| &x.name == e).unwrap();
                        for v in &ie.values {
                            assert_eq!(value_name(v.value), Some(v.name.as_str()), "{at}");
                        }
                        enums += 1;
                    }
                    (FieldType::Bool | FieldType::Bytes | FieldType::Enum(_), k) => {
                        panic!("{at}: {:?} listed as {k:?}", f.ty)
                    }
                    (_, ValueKind::Number) => {}
                    (ty, k) => panic!("{at}: {ty:?} listed as {k:?}"),
                }
            }
        }
        assert!(
            flags > 0 && enums > 0,
            "{}: {flags} flags, {enums} enums",
            t.what
        );
        if t.what == "spec/" {
            assert!(bytes > 0, "{}", t.what);
        }
    }
}
