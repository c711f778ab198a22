use super::*;

fn read32(c: &mut ConfigSpace, off: u64) -> u32 {
    let mut b = [0u8; 4];
    c.read(off, &mut b).unwrap();
    u32::from_le_bytes(b)
}

fn write32(c: &mut ConfigSpace, off: u64, v: u32) -> ConfigEffect {
    c.write(off, &v.to_le_bytes()).unwrap()
}

/// Walks the capability list: (id, offset) in order.
fn caps(c: &mut ConfigSpace) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    c.read(CAP_PTR as u64, &mut b).unwrap();
    let mut at = b[0] as usize;
    while at != 0 && out.len() < 48 {
        let mut h = [0u8; 2];
        c.read(at as u64, &mut h).unwrap();
        out.push((h[0], at));
        at = h[1] as usize;
    }
    out
}

#[test]
fn identity_class_and_capability_list() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    assert_eq!(read32(&mut c, 0), 0x1017_15b3);
    assert_eq!(read32(&mut c, 8) >> 8, 0x02_0000);
    assert_ne!(read32(&mut c, 4) >> 16 & u32::from(STATUS_CAP_LIST), 0);
    assert_eq!(
        caps(&mut c),
        vec![
            (CAP_ID_PM, CAP_PM),
            (CAP_ID_PCIE, CAP_PCIE),
            (CAP_ID_MSIX, CAP_MSIX),
            (CAP_ID_VNDR, CAP_VSEC)
        ]
    );
    // PCI Express endpoint, FLR capable; MSI-X with 64 vectors, table and PBA in BAR 0.
    assert_eq!(read32(&mut c, CAP_PCIE as u64) >> 16 & 0xf0, 0);
    assert_ne!(
        read32(&mut c, (CAP_PCIE + PCIE_DEVCAP) as u64) & DEVCAP_FLR,
        0
    );
    assert_eq!(read32(&mut c, CAP_MSIX as u64) >> 16 & 0x7ff, 63);
    assert_eq!(
        read32(&mut c, CAP_MSIX as u64 + 4),
        MSIX_TABLE_OFFSET as u32
    );
    assert_eq!(read32(&mut c, CAP_MSIX as u64 + 8), MSIX_PBA_OFFSET as u32);
    // No INTx pin.
    assert_eq!(read32(&mut c, INTERRUPT_LINE as u64) >> 8 & 0xff, 0);
}

#[test]
fn msix_structures_are_clear_of_the_init_segment_and_every_uar_page() {
    let init_seg_end = mlx5_prm::InitialSeg::<[u8; 16396]>::SIZE as u64;
    let first_uar = u64::from(mlx5_sim::FIRST_UAR) * mlx5_sim::UAR_PAGE_SIZE as u64;
    let table_end = MSIX_TABLE_OFFSET + 64 * MSIX_ENTRY_SIZE;
    assert!(
        MSIX_TABLE_OFFSET >= init_seg_end,
        "table overlaps the init segment"
    );
    assert!(table_end <= MSIX_PBA_OFFSET);
    assert!(
        MSIX_PBA_OFFSET + 8 <= first_uar,
        "PBA overlaps UAR page {}",
        mlx5_sim::FIRST_UAR
    );
}

#[test]
fn bar0_is_64_bit_prefetchable_and_sizes_by_all_ones() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    assert_eq!(read32(&mut c, BAR0 as u64) & 0xf, 0xc);
    write32(&mut c, BAR0 as u64, u32::MAX);
    write32(&mut c, BAR1 as u64, u32::MAX);
    let lo = read32(&mut c, BAR0 as u64);
    let hi = read32(&mut c, BAR1 as u64);
    let size = !((u64::from(hi) << 32) | u64::from(lo & !0xf)) + 1;
    assert_eq!(size, 8 << 20);
    assert_eq!(lo & 0xf, 0xc, "type bits are read-only");
    write32(&mut c, BAR0 as u64, 0xfe00_0000);
    write32(&mut c, BAR1 as u64, 0x1);
    assert_eq!(c.bar0(), 0x1_fe00_0000);
}

#[test]
fn read_only_registers_ignore_writes() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    write32(&mut c, 0, 0);
    write32(&mut c, 8, 0);
    assert_eq!(read32(&mut c, 0), 0x1017_15b3);
    assert_eq!(read32(&mut c, 8) >> 8, 0x02_0000);
    // Command register: memory and bus master stick; the status half is read-only.
    write32(&mut c, COMMAND as u64, 0xffff_0006);
    assert!(c.bus_master());
    assert_eq!(
        read32(&mut c, COMMAND as u64) >> 16,
        u32::from(STATUS_CAP_LIST)
    );
}

#[test]
fn accesses_outside_the_space_are_refused() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    let mut b = [0u8; 4];
    assert!(c.read(4094, &mut b).is_none());
    assert!(c.read(u64::MAX, &mut b).is_none());
    assert!(c.write(4093, &[0; 4]).is_none());
    assert!(c.read(4092, &mut b).is_some());
}

#[test]
fn initiate_flr_resets_and_reads_back_zero() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    let devctl = (CAP_PCIE + PCIE_DEVCTL) as u64;
    let mut b = [0u8; 2];
    c.read(devctl, &mut b).unwrap();
    let v = u16::from_le_bytes(b) | 0x8000;
    assert_eq!(
        c.write(devctl, &v.to_le_bytes()),
        Some(ConfigEffect::FunctionReset)
    );
    c.read(devctl, &mut b).unwrap();
    assert_eq!(u16::from_le_bytes(b) & 0x8000, 0);
}

#[test]
fn msix_control_changes_are_reported() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    let ctl = (CAP_MSIX + 2) as u64;
    let e = c.write(ctl, &(MSIX_ENABLE | MSIX_FUNCTION_MASK).to_le_bytes());
    assert_eq!(
        e,
        Some(ConfigEffect::MsixControl {
            enabled: true,
            masked: true
        })
    );
    assert_eq!(c.msix_control(), (true, true));
    // The table size is read-only.
    assert_eq!(read32(&mut c, CAP_MSIX as u64) >> 16 & 0x7ff, 63);
}

#[test]
fn vendor_gateway_semaphore_and_unsupported_spaces() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    let base = CAP_VSEC as u64;
    // The kernel's lock: semaphore free, read the counter, write it, read it back.
    assert_eq!(read32(&mut c, base + 0xc), 0);
    let counter = read32(&mut c, base + 0x8);
    assert_ne!(
        read32(&mut c, base + 0x8),
        counter,
        "the counter moves on every read"
    );
    let counter = read32(&mut c, base + 0x8);
    write32(&mut c, base + 0xc, counter);
    assert_eq!(read32(&mut c, base + 0xc), counter);
    // Taken: another writer does not get it.
    write32(&mut c, base + 0xc, counter.wrapping_add(7));
    assert_eq!(read32(&mut c, base + 0xc), counter);
    // Space selection: status 0 (not supported) for a space the model does not have, the
    // crash-dump scan space (7) among them; an access there never completes.
    for space in [0x3, 0x7] {
        write32(&mut c, base + 0x4, space);
        assert_eq!(
            read32(&mut c, base + 0x4),
            space,
            "status 0, space as written"
        );
        write32(&mut c, base + 0x10, 0x40);
        assert_eq!(
            read32(&mut c, base + 0x10) >> 31,
            0,
            "a read never sets the flag"
        );
    }
    write32(&mut c, base + 0xc, 0);
    assert_eq!(read32(&mut c, base + 0xc), 0);
}

/// Drives the semaphore domain the way `mlx5_vsc_sem_set_space` does before a software reset:
/// select space 0xa, write a counter-derived id into the semaphore at 0x20 with the flag set,
/// wait for the flag to clear, read it back (flag clear, wait for it to set) and compare.
fn sem_set(c: &mut ConfigSpace, id: u32) -> u32 {
    let base = CAP_VSEC as u64;
    write32(c, base + 0x4, 0xa);
    assert_eq!(
        read32(c, base + 0x4) >> 29,
        1,
        "the semaphore domain is supported"
    );
    write32(c, base + 0x14, id);
    write32(c, base + 0x10, 0x20 | 1 << 31);
    assert_eq!(
        read32(c, base + 0x10) >> 30,
        0,
        "write done (flag clear), no syndrome"
    );
    write32(c, base + 0x10, 0x20);
    assert_eq!(
        read32(c, base + 0x10) >> 30,
        0b10,
        "read done (flag set), no syndrome"
    );
    read32(c, base + 0x14)
}

#[test]
fn vendor_gateway_semaphore_domain() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    let base = CAP_VSEC as u64;
    let first = read32(&mut c, base + 0x8);
    assert_eq!(sem_set(&mut c, first), first, "a free semaphore is taken");
    let second = read32(&mut c, base + 0x8);
    assert_eq!(
        sem_set(&mut c, second),
        first,
        "a held semaphore keeps its owner: the second locker reads another id (-EBUSY)"
    );
    assert_eq!(sem_set(&mut c, 0), 0, "writing 0 releases it");
    assert_eq!(
        sem_set(&mut c, second),
        second,
        "and then the next locker gets it"
    );
    // Out of the domain (or unaligned): done at once, with the syndrome bit set.
    for addr in [0x100, 0x22] {
        write32(&mut c, base + 0x10, addr);
        assert_eq!(read32(&mut c, base + 0x10), addr | 0b11 << 30);
        write32(&mut c, base + 0x10, addr | 1 << 31);
        assert_eq!(read32(&mut c, base + 0x10), addr | 1 << 30);
    }
    // A reset frees every semaphore.
    c.reset();
    assert_eq!(sem_set(&mut c, 5), 5);
}

#[test]
fn reset_restores_power_on_values() {
    let mut c = ConfigSpace::new(8 << 20, 64);
    write32(&mut c, COMMAND as u64, 0x6);
    write32(&mut c, BAR0 as u64, 0xfe00_0000);
    c.reset();
    assert!(!c.bus_master());
    assert_eq!(c.bar0(), 0);
    assert_eq!(read32(&mut c, CAP_MSIX as u64) >> 16 & 0x7ff, 63);
}
