use super::super::slab::PIECES;
use super::*;

#[test]
fn with_an_iommu_any_buffer_maps_and_large_ones_use_huge_pages() {
    let p = plan(100, 64, IommuMode::Iommu, true).unwrap();
    assert_eq!(
        p,
        Plan {
            map_len: PAGE,
            huge: false,
            len: PAGE
        }
    );
    let p = plan(3 * PAGE + 1, 1 << 16, IommuMode::Iommu, true).unwrap();
    assert_eq!(
        p,
        Plan {
            map_len: 4 * PAGE,
            huge: false,
            len: 4 * PAGE
        }
    );
    let p = plan(HUGE + 1, PAGE, IommuMode::Iommu, true).unwrap();
    assert_eq!(
        p,
        Plan {
            map_len: 2 * HUGE,
            huge: true,
            len: HUGE + PAGE
        }
    );
    let p = plan(HUGE, PAGE, IommuMode::Iommu, false).unwrap();
    assert!(!p.huge);
    assert!(plan(usize::MAX, PAGE, IommuMode::Iommu, true).is_err());
    assert!(plan(PAGE, 3, IommuMode::Iommu, true).is_err());
}

#[test]
fn without_an_iommu_every_buffer_is_carved_from_a_huge_page() {
    for (len, align) in [(1, PAGE), (PAGE, PAGE), (2 * PAGE, PAGE), (PAGE, 1 << 16)] {
        let p = plan(len, align, IommuMode::NoIommu, true).unwrap();
        assert_eq!(
            p,
            Plan {
                map_len: HUGE,
                huge: true,
                len: len.next_multiple_of(PAGE)
            },
            "{len} bytes aligned to {align}"
        );
    }
    let p = plan(HUGE, HUGE, IommuMode::NoIommu, true).unwrap();
    assert_eq!(p.len, HUGE);
    // Not even a 4 KiB buffer may be a normal page.
    let e = plan(PAGE, PAGE, IommuMode::NoIommu, false).unwrap_err();
    assert!(e.to_string().contains("nr_hugepages"), "{e}");
    let e = plan(HUGE + 1, PAGE, IommuMode::NoIommu, true).unwrap_err();
    assert!(e.to_string().contains("physically contiguous"), "{e}");
    let e = plan(PAGE, 2 * HUGE, IommuMode::NoIommu, true).unwrap_err();
    assert!(e.to_string().contains("physically contiguous"), "{e}");
}

#[test]
fn no_free_huge_page_says_how_to_reserve_some() {
    let e = no_huge_page(
        64,
        VfioError::Ioctl {
            what: "mmap".into(),
            errno: Errno::ENOMEM,
        },
    );
    let text = e.to_string();
    assert!(text.contains("no 2 MiB huge page free"), "{text}");
    assert!(text.contains("echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"));
    let e = no_huge_page(
        64,
        VfioError::Ioctl {
            what: "mmap".into(),
            errno: Errno::EINVAL,
        },
    );
    assert!(e.to_string().contains("EINVAL"), "{e}");
    assert!(e.to_string().contains("nr_hugepages"), "{e}");
}

/// Free 2 MiB huge pages, from sysfs (0 when the kernel has none configured).
fn free_huge_pages() -> u64 {
    std::fs::read_to_string("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// A huge page for the tests below, or `None` (saying why) when this machine cannot
/// give one: it has no free huge page, or, not being root, the pagemap hides physical
/// addresses (which must then be the error that says so).
fn test_huge_page(pagemap: &Pagemap) -> Option<HugePage> {
    match HugePage::map(PAGE, pagemap) {
        Ok(page) => Some(page),
        Err(e) if e.to_string().contains("nr_hugepages") => {
            assert_eq!(free_huge_pages(), 0, "huge pages are free, yet: {e}");
            eprintln!(
                "skipped: no free 2 MiB huge page on this machine (`echo 64 > \
                 /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages` to run it)"
            );
            None
        }
        Err(e) => {
            assert!(matches!(e, VfioError::PagemapHidden), "{e}");
            eprintln!("skipped: not root, so the pagemap hides physical addresses");
            None
        }
    }
}

/// No-IOMMU mode's pinning on this machine: a huge page, once locked, has a physical
/// address that is 2 MiB aligned and covers the whole page.
#[test]
fn pinned_huge_pages_are_whole_aligned_frames() {
    let pagemap = Pagemap::open().unwrap();
    let Some(page) = test_huge_page(&pagemap) else {
        return;
    };
    assert!(page.pa != 0 && page.pa % HUGE as u64 == 0, "{:#x}", page.pa);
    for k in [0, 1, 255, 511] {
        let at = page.va.as_ptr() as usize + k * PAGE;
        assert_eq!(pagemap.physical(at).unwrap(), page.pa + (k * PAGE) as u64);
    }
    page.unmap();
}

/// The pool on real huge pages: pieces lie where their physical address says, a piece
/// freed is zeroed and reused, a full page opens another, a piece still in use (as a
/// quarantined one is) keeps its page, and a page goes when its last piece does.
#[test]
fn the_pool_carves_zeroes_reuses_and_unmaps_huge_pages() {
    let pagemap = Pagemap::open().unwrap();
    let Some(probe) = test_huge_page(&pagemap) else {
        return;
    };
    probe.unmap();
    let mut pool = Pool::default();
    let write = |c: &Chunk, v: u8| {
        // SAFETY: a chunk of the pool, `len` bytes, not reachable by any device.
        unsafe { c.va.as_ptr().write_bytes(v, c.len) }
    };
    let zero = |c: &Chunk| {
        // SAFETY: as above.
        (0..c.len).all(|i| unsafe { c.va.as_ptr().add(i).read_volatile() } == 0)
    };
    let piece = |c: &Chunk| match c.backing {
        Backing::Piece(p) => p,
        Backing::Mapping(_) => unreachable!(),
    };

    let a = pool.carve(100, PAGE, &pagemap).unwrap();
    let b = pool.carve(2 * PAGE, 1 << 16, &pagemap).unwrap();
    assert_eq!(pool.slab.pages(), 1, "both pieces from one huge page");
    assert_eq!((a.len, b.len), (PAGE, 2 * PAGE));
    assert_eq!(b.iova % (1 << 16), 0);
    for c in [&a, &b] {
        assert!(zero(c));
        let pa = pagemap.physical(c.va.as_ptr() as usize).unwrap();
        assert_eq!(pa, c.iova, "the device's address is the piece's frame");
        let last = pagemap
            .physical(c.va.as_ptr() as usize + c.len - 1)
            .unwrap();
        assert_eq!(last, c.iova + c.len as u64 - 1);
    }
    write(&a, 0xa5);
    // SAFETY: `a` is the pool's, no device or buffer reaches it.
    unsafe { pool.free(piece(&a)) };
    let again = pool.carve(PAGE, PAGE, &pagemap).unwrap();
    assert_eq!(
        (again.va, again.iova),
        (a.va, a.iova),
        "the freed piece is reused"
    );
    assert!(zero(&again), "a reused piece is zeroed");

    // Fill the rest of the page (all but `again` and `b`'s two pieces, the hole before
    // `b` included): the next piece opens a second one.
    let fill: Vec<Chunk> = (0..PIECES - 3)
        .map(|_| pool.carve(PAGE, PAGE, &pagemap).unwrap())
        .collect();
    assert_eq!(pool.slab.pages(), 1);
    let other = pool.carve(PAGE, PAGE, &pagemap).unwrap();
    assert_eq!(pool.slab.pages(), 2, "a full page opens another");
    assert_ne!(other.iova & !(HUGE as u64 - 1), a.iova & !(HUGE as u64 - 1));

    // `b` stays in use (a quarantined buffer does): its page stays mapped and writable.
    for c in fill.iter().chain([&again, &other]) {
        // SAFETY: the pool's, out of any device's reach, freed once.
        unsafe { pool.free(piece(c)) };
    }
    assert_eq!((pool.slab.pages(), pool.slab.busy()), (1, 2));
    write(&b, 0x5a);
    // Its release (after a reset) unmaps the last page.
    // SAFETY: as above.
    unsafe { pool.free(piece(&b)) };
    assert_eq!(pool.slab.pages(), 0);
}

#[test]
fn anonymous_memory_maps_zeroed_and_unmaps() {
    let p = plan(3 * PAGE, PAGE, IommuMode::Iommu, false).unwrap();
    let va = map_anon(p).unwrap();
    // SAFETY: the mapping just made, p.map_len bytes.
    let zero = (0..p.map_len).all(|i| unsafe { va.as_ptr().add(i).read_volatile() } == 0);
    assert!(zero);
    unmap_anon(va, p);
}
