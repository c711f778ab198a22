//! Guest memory as a virtual IOMMU's client maps it: page by page, the same pages under
//! several addresses, unmapped in ranges that cover many regions.

use super::*;
use std::os::fd::{FromRawFd, OwnedFd};

/// Guest RAM as QEMU's `memory-backend-memfd` makes it: a memfd that can be sealed.
fn memfd(len: u64) -> File {
    memfd_with(len, libc::MFD_ALLOW_SEALING)
}

fn memfd_with(len: u64, flags: libc::c_uint) -> File {
    // SAFETY: memfd_create reads only the NUL-terminated name, a static C string.
    let fd = unsafe { libc::memfd_create(c"ram".as_ptr(), flags) };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor, ours.
    let f = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    f.set_len(len).unwrap();
    f
}

#[test]
fn pages_of_one_file_share_one_mapping() {
    let ram = memfd(1 << 20);
    let mut m = GuestMemory::default();
    // 256 pages mapped one by one at IOVAs far from their offsets, in reverse order.
    for k in (0..256u64).rev() {
        let r = m
            .map(
                0xffff_0000_0000 + k * PAGE,
                PAGE,
                k * PAGE,
                Some(&ram),
                true,
            )
            .unwrap();
        assert_eq!(r.map.as_ref().unwrap().len(), PAGE as usize);
    }
    assert_eq!((m.len(), m.bytes(), m.files_mapped()), (256, 1 << 20, 1));
    // The same page under a second IOVA: the same host byte.
    let a = m
        .map(0x1000, PAGE, 5 * PAGE, Some(&ram), true)
        .unwrap()
        .map
        .as_ref()
        .unwrap()
        .ptr();
    let b = m
        .regions()
        .find(|r| r.iova == 0xffff_0000_0000 + 5 * PAGE)
        .unwrap();
    assert_eq!(a, b.map.as_ref().unwrap().ptr());
    assert_eq!(m.files_mapped(), 1);
    // Read-only regions of the file are a mapping of their own.
    m.map(0x2000, PAGE, 0, Some(&ram), false).unwrap();
    assert_eq!(m.files_mapped(), 2);
}

#[test]
fn a_range_unmaps_every_region_inside_it_and_none_it_cuts() {
    let ram = memfd(1 << 20);
    let mut m = GuestMemory::default();
    for k in 0..16u64 {
        m.map(0x10_0000 + k * PAGE, PAGE, k * PAGE, Some(&ram), true)
            .unwrap();
    }
    m.map(0x20_0000, 4 * PAGE, 0, Some(&ram), true).unwrap();
    // Cutting through the four-page region: refused, nothing unmapped.
    assert_eq!(
        m.unmap(0x20_1000, PAGE).unwrap_err(),
        MapError::NotMapped {
            address: 0x20_1000,
            size: PAGE
        }
    );
    assert_eq!(
        m.unmap(0x1f_f000, 2 * PAGE).unwrap_err(),
        MapError::NotMapped {
            address: 0x1f_f000,
            size: 2 * PAGE
        }
    );
    // A range with nothing inside it.
    assert!(m.unmap(0x30_0000, PAGE).is_err());
    assert_eq!(m.len(), 17);
    // Eight of the page regions at once.
    let gone = m.unmap(0x10_4000, 8 * PAGE).unwrap();
    assert_eq!(
        gone.iter().map(|r| r.iova).collect::<Vec<_>>(),
        (4..12).map(|k| 0x10_0000 + k * PAGE).collect::<Vec<_>>()
    );
    assert_eq!((m.len(), m.bytes()), (9, 12 * PAGE));
    // Everything, as QEMU does when the guest's IOMMU domain goes away.
    let rest = m.unmap(0, u64::MAX / 2).unwrap();
    assert_eq!(rest.len(), 9);
    assert!(m.is_empty());
    assert_eq!(m.files_mapped(), 1, "the views are still held here");
    drop((gone, rest));
    assert_eq!(m.files_mapped(), 0, "the last view unmapped the file");
}

#[test]
fn overlaps_and_limits_are_still_refused() {
    let ram = memfd(1 << 20);
    let mut m = GuestMemory::default();
    m.map(0x10_0000, 4 * PAGE, 0, Some(&ram), true).unwrap();
    for (iova, size) in [
        (0x10_0000, PAGE),
        (0x10_3000, 2 * PAGE),
        (0xf_f000, 2 * PAGE),
        (0xf_0000, 0x20_0000),
    ] {
        assert!(
            matches!(
                m.map(iova, size, 0, Some(&ram), true),
                Err(MapError::Overlap { .. })
            ),
            "{iova:#x}+{size:#x}"
        );
    }
    // Adjacent on both sides is fine.
    m.map(0xf_f000, PAGE, 0, Some(&ram), true).unwrap();
    m.map(0x10_4000, PAGE, 0, Some(&ram), true).unwrap();
    // Past the file's end.
    assert!(matches!(
        m.map(0x40_0000, 2 * PAGE, (1 << 20) - PAGE, Some(&ram), true),
        Err(MapError::OutsideFile { .. })
    ));
}

/// The file grows after its first mapping: a region past the old end gets a new mapping,
/// and the regions made before keep theirs.
#[test]
fn a_file_that_grows_is_mapped_again() {
    let ram = memfd(4 * PAGE);
    let mut m = GuestMemory::default();
    m.map(0x1000, PAGE, 0, Some(&ram), true).unwrap();
    ram.set_len(16 * PAGE).unwrap();
    m.map(0x10_0000, PAGE, 8 * PAGE, Some(&ram), true).unwrap();
    assert_eq!(
        m.files_mapped(),
        1,
        "the new mapping replaced the old in the table"
    );
    assert_eq!(m.len(), 2);
    drop(m.unmap(0x1000, PAGE).unwrap());
    drop(m.unmap(0x10_0000, PAGE).unwrap());
    assert_eq!(m.files_mapped(), 0);
}

/// A file the server cannot keep from shrinking is refused: a page of it could vanish under
/// the mapping, and the model's next access there would be a SIGBUS.
#[test]
fn a_file_that_cannot_be_sealed_is_refused() {
    let mut m = GuestMemory::default();
    let unsealable = memfd_with(1 << 20, 0);
    assert!(
        m.map(0x10_0000, PAGE, 0, Some(&unsealable), true).is_err(),
        "a memfd without MFD_ALLOW_SEALING was mapped"
    );
    let path = std::env::temp_dir().join(format!("guestmem-plain-{}", std::process::id()));
    let plain = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    plain.set_len(1 << 20).unwrap();
    assert!(
        m.map(0x20_0000, PAGE, 0, Some(&plain), true).is_err(),
        "a plain file was mapped"
    );
    assert!(m.is_empty());
    assert_eq!(m.files_mapped(), 0);
}

#[test]
fn a_mapped_file_can_no_longer_shrink() {
    let ram = memfd(1 << 20);
    let mut m = GuestMemory::default();
    m.map(0x10_0000, PAGE, (1 << 20) - PAGE, Some(&ram), true)
        .unwrap();
    assert!(
        ram.set_len(0).is_err(),
        "the client could still truncate a mapped file"
    );
    // Growing stays allowed (QEMU's own seals forbid it; nothing here depends on it).
    ram.set_len(2 << 20).unwrap();
}

/// The limit counts what is mapped into this process: a one-page region of a sparse 60 TiB
/// file would map all 60 TiB.
#[test]
fn a_small_region_of_a_huge_sparse_file_is_refused() {
    let huge = memfd(60 << 40);
    let mut m = GuestMemory::default();
    assert!(matches!(
        m.map(0x10_0000, PAGE, 0, Some(&huge), true),
        Err(MapError::Limit { .. })
    ));
    assert!(m.is_empty());
    assert_eq!(m.files_mapped(), 0);
}

/// A file grown after its first mapping is mapped again, whole, while the old mapping lives
/// on under its regions: both count.
#[test]
fn growing_a_file_counts_every_live_mapping() {
    let ram = memfd(40 << 30);
    let mut m = GuestMemory::default();
    m.map(0x1000, PAGE, 0, Some(&ram), true).unwrap();
    ram.set_len(50 << 30).unwrap();
    assert!(matches!(
        m.map(0x10_0000, PAGE, 45 << 30, Some(&ram), true),
        Err(MapError::Limit { .. })
    ));
    // Once the old mapping is gone, the grown file fits.
    drop(m.unmap(0x1000, PAGE).unwrap());
    m.map(0x10_0000, PAGE, 45 << 30, Some(&ram), true).unwrap();
    assert_eq!(m.files_mapped(), 1);
}

/// The older mapping of a grown file leaves the table when the file is mapped again, but not
/// the address space: the limit still counts it until its last region goes.
#[test]
fn a_grown_files_older_mapping_counts_after_it_is_replaced() {
    let ram = memfd(20 << 30);
    let mut m = GuestMemory::default();
    m.map(0x1000, PAGE, 0, Some(&ram), true).unwrap();
    ram.set_len(30 << 30).unwrap();
    m.map(0x2000, PAGE, 25 << 30, Some(&ram), true).unwrap();
    assert_eq!(m.files_mapped(), 1);
    assert_eq!(m.bytes_mapped(), 50 << 30);
    // 50 GiB live + 20 GiB: past the limit, though the table names only 30 GiB.
    let other = memfd(20 << 30);
    assert!(matches!(
        m.map(0x10_0000, PAGE, 0, Some(&other), true),
        Err(MapError::Limit { .. })
    ));
    drop(m.unmap(0x1000, PAGE).unwrap());
    assert_eq!(m.bytes_mapped(), 30 << 30);
    m.map(0x10_0000, PAGE, 0, Some(&other), true).unwrap();
    assert_eq!(m.bytes_mapped(), 50 << 30);
    drop(m.take_all());
    assert_eq!(m.bytes_mapped(), 0);
}
