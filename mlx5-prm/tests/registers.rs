//! Access registers typed by id: the generated `reg` types and table agree with each other,
//! with the spec's register id enum and with the image layouts.

use mlx5_prm::reg::{self, Paos, Ppcnt};
use mlx5_prm::rt::{AccessReg, RegAccess, View};
use mlx5_prm::AccessRegisterId;

#[test]
fn every_register_id_is_the_one_the_id_enum_names() {
    assert!(reg::ALL.len() >= 13);
    for r in reg::ALL {
        let named = AccessRegisterId::from_raw(r.id.into()).unwrap_or_else(|| {
            panic!(
                "register `{}` id 0x{:x} is not in access_register_id",
                r.name, r.id
            )
        });
        assert_eq!(named.spec_name(), r.name, "register id 0x{:x}", r.id);
    }
}

#[test]
fn lookups_by_id_and_name_find_the_same_entry() {
    for r in reg::ALL {
        assert_eq!(reg::by_id(r.id), Some(r));
        assert_eq!(reg::by_name(r.name), Some(r));
    }
    assert_eq!(reg::by_id(0x1234), None);
    assert_eq!(reg::by_name("nope"), None);
}

/// Each entry's size and index fields are its layout's (needs the reflection tables).
#[cfg(feature = "reflect")]
#[test]
fn images_and_index_fields_are_the_layouts() {
    for r in reg::ALL {
        let layout = mlx5_prm::layout_by_name(r.layout).expect("image layout has a table");
        assert_eq!(layout.size, r.size, "{}", r.name);
        for f in r.index {
            assert!(layout.field(f).is_some(), "{}: index field {f}", r.name);
        }
    }
}

#[test]
fn the_types_carry_the_table_facts() {
    let paos = reg::by_name("paos").unwrap();
    assert_eq!(
        (Paos::ID, Paos::NAME, Paos::ACCESS),
        (paos.id, paos.name, paos.access)
    );
    assert_eq!(Paos::INDEX, paos.index);
    assert_eq!(<Paos as AccessReg>::Image::<&[u8]>::SIZE, paos.size);
    assert_eq!(Ppcnt::ACCESS, RegAccess::Read);
    assert!(!Ppcnt::ACCESS.writable() && Ppcnt::ACCESS.readable());
    let mut image = [0u8; 0x100];
    let mut p = Ppcnt::image(&mut image[..]).unwrap();
    p.set_local_port(1);
    assert!(Ppcnt::image(&image[..3]).is_err());
}
