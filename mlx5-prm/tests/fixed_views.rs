//! Views borrowed from slices with `from_slice` / `from_slice_mut`: their storage is a
//! `&[u8; SIZE]` (the length in the type, so accessors need no bounds check; see
//! `tests/zero_cost.rs` for the instructions), cut from the front of the slice after the
//! length check `new_checked` makes, with the same error. A layout that runs on has no such
//! constructor: that compile-fail case is `ui-tests/tests/prm/fixed_views`.

use mlx5_prm::rt::{LayoutError, View};
use mlx5_prm::{Ads, Cqc, Qpc};

#[test]
fn from_slice_borrows_the_first_size_bytes() {
    let mut buf = [0u8; 80];
    buf[12] = 0x0a; // log_cq_size 10
    buf[64] = 0xff; // past the layout: not part of the view
    let c: Cqc<&[u8; 64]> = Cqc::from_slice(&buf).unwrap();
    assert_eq!(c.log_cq_size(), 10);
    assert!(core::ptr::eq(
        *c.storage(),
        buf.first_chunk::<64>().unwrap()
    ));
    // Exactly `SIZE` bytes are enough.
    assert!(Cqc::from_slice(&buf[..64]).is_ok());
}

#[test]
fn from_slice_mut_writes_through_to_the_slice() {
    let mut buf = vec![0u8; 70];
    let mut c: Cqc<&mut [u8; 64]> = Cqc::from_slice_mut(&mut buf).unwrap();
    c.set_log_cq_size(10);
    c.set_uar_page(0xab_cdef);
    assert_eq!(c.log_cq_size(), 10);
    assert_eq!(&buf[12..16], &[0x0a, 0xab, 0xcd, 0xef]);
    assert!(buf[16..].iter().all(|b| *b == 0));
}

#[test]
fn short_slices_are_refused_as_new_checked_refuses_them() {
    let want = LayoutError {
        layout: "cqc",
        needed: 64,
        actual: 63,
    };
    let mut buf = [0x5au8; 63];
    assert_eq!(Cqc::from_slice(&buf).err(), Some(want));
    assert_eq!(Cqc::new_checked(&buf[..]).err(), Some(want));
    assert_eq!(Cqc::from_slice_mut(&mut buf).err(), Some(want));
    assert_eq!(buf, [0x5a; 63], "a refused slice is left alone");
    assert_eq!(
        Cqc::from_slice(&[]).err(),
        Some(LayoutError {
            layout: "cqc",
            needed: 64,
            actual: 0
        })
    );
    assert_eq!(
        Qpc::from_slice_mut(&mut [0u8; 0xe7]).err(),
        Some(LayoutError {
            layout: "qpc",
            needed: 0xe8,
            actual: 0xe7
        })
    );
}

#[test]
fn nested_views_and_the_view_trait_work_on_borrowed_arrays() {
    let mut buf = [0u8; 0x100];
    let mut q = Qpc::from_slice_mut(&mut buf).unwrap();
    q.primary_address_path_mut().set_pkey_index(0x1234);
    assert_eq!(q.primary_address_path().pkey_index(), 0x1234);
    assert_eq!(<Qpc<&mut [u8; 0xe8]> as View<_>>::SIZE, 0xe8);
    let q = Qpc::from_slice(&buf).unwrap();
    assert_eq!(q.primary_address_path().pkey_index(), 0x1234);
    let at = Qpc::PRIMARY_ADDRESS_PATH.bit_offset / 8 + Ads::PKEY_INDEX.bit_offset / 8;
    assert_eq!(&buf[at..at + 2], &[0x12, 0x34]);
}
