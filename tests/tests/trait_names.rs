//! Generated code for fields, members and a selector path named like std's trait methods
//! (`tests/names/trait_names.yaml`). That it compiles is the first check: the generator used
//! to call getters with method syntax in the reflection tables and in `select_by`, where
//! `v.into()` is `Into::into` (which takes `self`) rather than the getter (which takes
//! `&self`). The rest reads and writes through each path: the getter called by path (method
//! syntax would pick the trait's method for the caller too), the reflection table, and the
//! union's selector.

use prm_tests::names::trait_names::{Choice, ChoiceRef, Inner, Mode, Outer};

fn field(layout: &str, name: &str) -> &'static mlx5_prm::rt::reflect::FieldAccess {
    let l = prm_tests::names::layout_by_name(layout).expect("layout");
    l.fields.iter().find(|f| f.name == name).expect("field")
}

#[test]
fn getters_named_like_trait_methods_read_what_their_setters_wrote() {
    let mut v = Inner::zeroed();
    v.set_into(0x12);
    v.set_clone(0x34);
    v.set_try_into(Mode::B);
    v.set_into_iter(2, 0x56).expect("in range");
    assert_eq!(Inner::into(&v), 0x12);
    assert_eq!(Inner::clone(&v), 0x34);
    assert_eq!(Inner::try_into(&v), Ok(Mode::B));
    assert_eq!(Inner::into_iter(&v, 2), Some(0x56));
    // The view's own Clone is still there, through the trait.
    let copy = Clone::clone(&v);
    assert_eq!(copy, v);
}

#[test]
fn reflection_reads_and_writes_fields_named_like_trait_methods() {
    let into = field("inner", "into");
    let mut bytes = [0u8; 20];
    (into.set.expect("writable"))(&mut bytes, 0, 0x9a);
    assert_eq!((into.get.expect("readable"))(&bytes, 0), 0x9a);
    assert_eq!(Inner::into(&Inner::new_checked(&bytes[..]).unwrap()), 0x9a);
    let mode = field("inner", "try_into");
    (mode.set.expect("writable"))(&mut bytes, 0, 1);
    assert_eq!((mode.get.expect("readable"))(&bytes, 0), 1);
    let list = field("inner", "into_iter");
    (list.set.expect("writable"))(&mut bytes, 3, 0x77);
    assert_eq!((list.get.expect("readable"))(&bytes, 3), 0x77);
}

#[test]
fn a_selector_path_through_fields_named_into_picks_the_member() {
    let mut outer = Outer::zeroed();
    Outer::into_mut(&mut outer).set_into(0);
    let choice = Choice::zeroed();
    assert!(matches!(choice.select_by(&outer), Ok(ChoiceRef::Into(_))));
    Outer::into_mut(&mut outer).set_into(1);
    assert!(choice.select_by(&outer).is_err());
}
