//! Unit tests of the DMA space: allocation, guards, freeing, copies, external mappings.

use super::*;
use mlx5_prm::rt::{Bytes as _, BytesMut as _};

#[test]
fn regions_are_zeroed_aligned_and_guarded() {
    let dma = DmaSpace::default();
    let a = dma.alloc(100, 1 << 16).unwrap();
    assert_eq!(a.len, 4096);
    assert_eq!(a.iova % (1 << 16), 0);
    assert_eq!(a.va as usize % (1 << 16), 0);
    assert_ne!(a.iova, a.va as u64);
    let w = dma.window(a.iova, 4096).unwrap();
    assert!((0..4096).all(|i| w.read_u8(i) == 0));
    assert!(dma.window(a.iova + 4095, 2).is_none(), "guard page");
    assert!(dma.window(a.iova - 1, 1).is_none());
    assert_eq!(dma.allocated(), 4096);
}

#[test]
fn held_windows_last_until_a_region_is_freed() {
    let dma = DmaSpace::default();
    let a = dma.alloc(4096, 4096).unwrap();
    let b = dma.alloc(4096, 4096).unwrap();
    let h = dma.hold(a.iova, 4).unwrap();
    dma.window(a.iova, 4).unwrap().write_be32(0, 5);
    assert_eq!(
        dma.held(&h).map(|w| w.read_be32(0)),
        Some(5),
        "a fresh read"
    );
    dma.alloc(4096, 4096).unwrap();
    assert!(dma.held(&h).is_some(), "mapping more changes nothing");
    dma.free(b.iova).unwrap();
    assert!(dma.held(&h).is_none(), "any free: made again");
    assert!(dma.hold(a.iova, 4).is_some());
    dma.free(a.iova).unwrap();
    assert!(dma.hold(a.iova, 4).is_none(), "then it faults");
}

#[test]
fn free_unmaps_and_never_reuses() {
    let dma = DmaSpace::default();
    let a = dma.alloc(4096, 4096).unwrap();
    dma.window(a.iova, 8).unwrap().write_be64(0, 7);
    dma.free(a.iova).unwrap();
    assert!(dma.window(a.iova, 1).is_none());
    assert_eq!(dma.free(a.iova), Err(DmaError::NotMapped(a.iova)));
    let b = dma.alloc(4096, 4096).unwrap();
    assert!(b.iova > a.iova);
    assert_eq!(dma.allocated(), 4096);
}

#[test]
fn copies_at_every_alignment() {
    let dma = DmaSpace::default();
    let a = dma.alloc(4096, 4096).unwrap();
    let data: Vec<u8> = (0..100u8).collect();
    for start in 0..9u64 {
        for len in [0usize, 1, 7, 8, 9, 23, 64, 91] {
            dma.write(a.iova + 200, &[0xee; 120]).unwrap();
            dma.write(a.iova + 200 + start, &data[..len]).unwrap();
            let mut back = vec![0u8; 120];
            dma.read(a.iova + 200, &mut back).unwrap();
            let s = start as usize;
            assert!(back[..s].iter().all(|&b| b == 0xee));
            assert_eq!(&back[s..s + len], &data[..len]);
            assert!(back[s + len..].iter().all(|&b| b == 0xee));
            let mut part = vec![0u8; len];
            dma.read(a.iova + 200 + start, &mut part).unwrap();
            assert_eq!(part, &data[..len]);
            if start % 4 == 0 && len % 4 == 0 {
                let mut dw = vec![0u8; len];
                assert!(dma.read_dwords(a.iova + 200 + start, &mut dw));
                assert_eq!(dw, &data[..len]);
            }
            let mut appended = vec![7u8];
            assert!(dma.append(a.iova + 200 + start, len, &mut appended));
            assert_eq!((appended[0], &appended[1..]), (7, &data[..len]));
        }
    }
}

#[test]
fn words_go_out_big_endian() {
    let dma = DmaSpace::default();
    let a = dma.alloc(4096, 4096).unwrap();
    let mut w = dma.window(a.iova + 64, 64).unwrap();
    assert!(store_words(&mut w, &[0x0102_0304_0506_0708, 0x1122]));
    let mut back = [0u8; 16];
    dma.read(a.iova + 64, &mut back).unwrap();
    assert_eq!(back[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(back[8..], [0, 0, 0, 0, 0, 0, 0x11, 0x22]);
    assert!(!store_words(&mut w, &[0; 9]), "longer than the window");
    let mut odd = dma.window(a.iova + 4, 16).unwrap();
    assert!(!store_words(&mut odd, &[1]), "not aligned");
}

#[test]
fn bad_requests() {
    let dma = DmaSpace::new(8192);
    assert_eq!(dma.alloc(0, 4096), Err(DmaError::ZeroLength));
    assert_eq!(dma.alloc(1, 3), Err(DmaError::BadAlign(3)));
    assert!(matches!(
        dma.alloc(3 * 4096, 4096),
        Err(DmaError::Exhausted { .. })
    ));
    assert!(matches!(
        dma.alloc(usize::MAX, 4096),
        Err(DmaError::Exhausted { .. })
    ));
    assert!(dma.window(u64::MAX, 16).is_none());
    let mut out = vec![1u8];
    assert!(!dma.append(0, 4, &mut out));
    assert_eq!(out, [1]);
    assert!(dma.window(0, 16).is_none());
}

/// A region mapped for the device to read only (a guest's DMA_TO_DEVICE buffer behind an
/// IOMMU): send gathers read it; every path that writes (windows, `write_dev`, host copies,
/// the writability check of rings and pages) refuses it, through the cache too.
#[test]
fn read_only_regions_are_read_and_never_written() {
    let dma = DmaSpace::external();
    let layout = Layout::from_size_align(2 * 4096, 4096).unwrap();
    // SAFETY: a fresh allocation, freed at the end after the space is gone.
    let mem = unsafe { alloc_zeroed(layout) };
    // SAFETY: `mem` is valid for two pages until it is freed below, after the space is dropped.
    unsafe {
        mem.add(4096).write_bytes(7, 4096);
        dma.map(0x10000, mem, 4096).unwrap();
        dma.map_read_only(0x11000, mem.add(4096), 4096).unwrap();
    }
    let mut out = [0u8; 8];
    for _ in 0..2 {
        // The second round goes through the translation cache.
        assert!(dma.read_dev(0x11000, &mut out));
        assert_eq!(out, [7; 8]);
        let mut v = Vec::new();
        assert!(dma.append(0x11ff8, 8, &mut v));
        assert_eq!(v, [7; 8]);
        assert!(
            dma.window(0x11000, 8).is_none(),
            "no window that could write"
        );
        assert!(!dma.write_dev(0x11000, &[1; 8]));
        assert!(!dma.is_mapped(0x11000, 8));
        assert!(dma.write(0x11000, &[1; 8]).is_err());
        // The writable neighbour is unaffected.
        assert!(dma.write_dev(0x10000, &[1; 8]) && dma.is_mapped(0x10000, 4096));
    }
    assert!(
        dma.read_dev(0x11000, &mut out) && out == [7; 8],
        "never written"
    );
    drop(dma);
    // SAFETY: the space (the only user) is gone.
    unsafe { dealloc(mem, layout) };
}
