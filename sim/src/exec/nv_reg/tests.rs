//! The store's own tests: type words and lengths as Linux's, next until a reset, refusals
//! that change nothing, read-only capabilities, MNVQC, and no panic on any image.

use super::*;
use mlx5_prm::rt::View;
use mlx5_prm::{
    CmdStatus, ConfigurationItemTypeClassGlobal, ConfigurationItemTypeClassPerHostPf, MnvqcReg,
    NvGlobalItem, NvPerHostPfItem, NvSwpL4CsumMode, NvTypeClass,
};

impl Item {
    /// Every item, in the order the tests list them.
    pub const ALL: [Item; 6] = [
        Item::GlobalPciConf,
        Item::GlobalPciCap,
        Item::SwOffloadConf,
        Item::SwOffloadCap,
        Item::SwAccelerateConf,
        Item::PfPciConf,
    ];

    /// The item's type word (`mnvda_reg.type`), built with the spec's class layouts (the
    /// model only parses them; the tests build them).
    pub fn type_word(self) -> u32 {
        let global = |index: NvGlobalItem| {
            let mut w = ConfigurationItemTypeClassGlobal::zeroed();
            w.set_type_class(NvTypeClass::Global);
            w.set_parameter_index(index);
            u32::from_be_bytes(w.into_inner())
        };
        match self {
            Item::GlobalPciConf => global(NvGlobalItem::NvGlobalPciConf),
            Item::GlobalPciCap => global(NvGlobalItem::NvGlobalPciCap),
            Item::SwOffloadConf => global(NvGlobalItem::NvSwOffloadConfig),
            Item::SwOffloadCap => global(NvGlobalItem::NvSwOffloadCap),
            Item::SwAccelerateConf => global(NvGlobalItem::NvSwAccelerateConf),
            Item::PfPciConf => {
                let mut w = ConfigurationItemTypeClassPerHostPf::zeroed();
                w.set_type_class(NvTypeClass::PerHostPf);
                w.set_parameter_index(NvPerHostPfItem::NvPfPciConf);
                u32::from_be_bytes(w.into_inner())
            }
        }
    }
}

const SIZE: usize = MnvdaReg::<&[u8]>::SIZE;

/// An MNVDA image for `item`'s type word with `length` and `mode` set.
fn image(word: u32, length: u16, mode: u8) -> Vec<u8> {
    let mut img = vec![0u8; SIZE];
    let mut r = MnvdaReg::new_unchecked(&mut img[..]);
    r.set_type(word);
    r.set_length(length);
    r.set_access_mode_raw(mode);
    img
}

fn read(nv: &mut NvStore, item: Item, mode: NvAccessMode) -> Vec<u8> {
    let mut img = image(item.type_word(), item.size() as u16, mode.raw());
    mnvda(nv, &mut img, false).expect("read");
    img
}

fn sriov(img: &[u8]) -> (bool, u16) {
    let r = MnvdaReg::new_unchecked(img);
    let d = r.configuration_item_data();
    let c = d.global_pci_conf();
    (c.sriov_en(), c.total_vfs())
}

fn refused(f: Fail, syndrome: u32) {
    assert_eq!(
        (f.status, f.syndrome),
        (CmdStatus::BadParamErr.raw(), syndrome)
    );
}

#[test]
fn type_words_are_the_kernels() {
    // nv_param.c: class 0 in the top byte, index below; class 3 likewise.
    assert_eq!(Item::GlobalPciConf.type_word(), 0x0000_0080);
    assert_eq!(Item::GlobalPciCap.type_word(), 0x0000_0081);
    assert_eq!(Item::SwOffloadConf.type_word(), 0x0000_010a);
    assert_eq!(Item::SwOffloadCap.type_word(), 0x0000_010b);
    assert_eq!(Item::SwAccelerateConf.type_word(), 0x0000_011d);
    assert_eq!(Item::PfPciConf.type_word(), 0x0300_0080);
    for item in Item::ALL {
        assert_eq!(Item::from_type_word(item.type_word()), Some(item));
    }
    // Another PF, another bus, another class or index: not an item here.
    for word in [
        0x0304_0080,
        0x0300_0480,
        0x0100_0080,
        0x0000_0082,
        0xffff_ffff,
    ] {
        assert_eq!(Item::from_type_word(word), None, "{word:#x}");
    }
    assert_eq!(
        [0xc, 0x10, 0x8, 0x4, 0x8, 0x10],
        Item::ALL.map(Item::size),
        "lengths Linux sets"
    );
}

#[test]
fn a_write_is_next_until_a_reset() {
    let mut nv = NvStore::default();
    let mut w = image(Item::GlobalPciConf.type_word(), 0xc, 0);
    {
        let mut r = MnvdaReg::new_unchecked(&mut w[..]);
        let mut d = r.configuration_item_data_mut();
        let mut c = d.global_pci_conf_mut();
        c.set_sriov_valid(true);
        c.set_sriov_en(true);
        c.set_total_vfs(8);
    }
    // A reserved bit of the data is dropped.
    w[0x0c + 3] |= 0x01;
    mnvda(&mut nv, &mut w, true).expect("write");
    assert_eq!(sriov(&w), (true, 8), "the answer shows what was written");
    assert!(nv.pending());
    assert_eq!(
        sriov(&read(&mut nv, Item::GlobalPciConf, NvAccessMode::Next)),
        (true, 8)
    );
    let current = read(&mut nv, Item::GlobalPciConf, NvAccessMode::Current);
    assert_eq!(sriov(&current), (false, 0));
    assert_eq!(current[0x0c + 3] & 1, 0);

    let mut nv = nv.after_reset();
    assert!(!nv.pending());
    assert_eq!(
        sriov(&read(&mut nv, Item::GlobalPciConf, NvAccessMode::Current)),
        (true, 8)
    );
    assert_eq!(
        sriov(&read(&mut nv, Item::GlobalPciConf, NvAccessMode::Default)),
        (false, 0)
    );
    assert_eq!(
        read(&mut nv, Item::GlobalPciConf, NvAccessMode::Next)[0x0c + 3] & 1,
        0,
        "reserved bits never stored"
    );
}

#[test]
fn refusals_change_nothing() {
    let mut nv = NvStore::default();
    let before = nv.clone();
    let conf = Item::GlobalPciConf.type_word();
    let cases: &[(Vec<u8>, bool, u32)] = &[
        (image(0x0000_0099, 0xc, 0), false, s::NV_UNKNOWN_ITEM),
        (image(0x0300_0081, 0x10, 0), true, s::NV_UNKNOWN_ITEM),
        (image(conf, 0xb, 0), false, s::NV_BAD_LENGTH),
        (image(conf, 0x1ff, 0), true, s::NV_BAD_LENGTH),
        (image(conf, 0xc, 3), false, s::NV_BAD_ACCESS_MODE),
        (image(conf, 0xc, 1), true, s::NV_BAD_ACCESS_MODE),
        (
            image(Item::GlobalPciCap.type_word(), 0x10, 0),
            true,
            s::NV_READ_ONLY_ITEM,
        ),
    ];
    for (img, write, syndrome) in cases {
        let mut img = img.clone();
        refused(mnvda(&mut nv, &mut img, *write).unwrap_err(), *syndrome);
    }
    // Values the items cannot hold.
    let mut w = image(conf, 0xc, 0);
    w[0x0c + 6..0x0c + 8].copy_from_slice(&(MAX_VFS_PER_PF + 1).to_be_bytes());
    refused(mnvda(&mut nv, &mut w, true).unwrap_err(), s::NV_BAD_VALUE);
    let mut w = image(Item::SwOffloadConf.type_word(), 0x8, 0);
    w[0x0c + 3] = 0x7;
    refused(mnvda(&mut nv, &mut w, true).unwrap_err(), s::NV_BAD_VALUE);
    // A short image (never from reg.rs, which sizes it) is refused too.
    let f = mnvda(&mut nv, &mut [0u8; 8], false).unwrap_err();
    assert_eq!(
        (f.status, f.syndrome),
        (CmdStatus::BadInpLenErr.raw(), s::REG_INPUT_SHORT)
    );
    assert_eq!(nv, before);
}

#[test]
fn the_capability_is_read_only_and_the_same_in_every_copy() {
    let mut nv = NvStore::default();
    for mode in NvAccessMode::ALL {
        let img = read(&mut nv, Item::GlobalPciCap, *mode);
        let r = MnvdaReg::new_unchecked(&img[..]);
        let d = r.configuration_item_data();
        let c = d.global_pci_cap();
        assert!(c.sriov_support() && c.per_pf_total_vf_supported());
        assert_eq!(c.max_vfs_per_pf(), MAX_VFS_PER_PF);
    }
}

/// The SWP L4 checksum mode of copy `mode`.
fn csum_mode(nv: &mut NvStore, mode: NvAccessMode) -> u8 {
    let img = read(nv, Item::SwAccelerateConf, mode);
    let r = MnvdaReg::new_unchecked(&img[..]);
    let d = r.configuration_item_data();
    let raw = d.sw_accelerate_conf().swp_l4_csum_mode_raw();
    raw
}

/// An MNVDA write of nv_sw_accelerate_conf with `raw` as swp_l4_csum_mode and every other
/// bit of the item set.
fn csum_write(nv: &mut NvStore, raw: u8) -> Outcome<()> {
    let mut w = image(Item::SwAccelerateConf.type_word(), 0x8, 0);
    w[0x0c..0x0c + 8].fill(0xff);
    {
        let mut r = MnvdaReg::new_unchecked(&mut w[..]);
        let mut d = r.configuration_item_data_mut();
        d.sw_accelerate_conf_mut().set_swp_l4_csum_mode_raw(raw);
    }
    mnvda(nv, &mut w, true)
}

#[test]
fn the_swp_l4_checksum_mode_follows_its_capability() {
    let mut nv = NvStore::default();
    let default = NvSwpL4CsumMode::Default.raw();
    let (full, l4) = (
        NvSwpL4CsumMode::FullCsum.raw(),
        NvSwpL4CsumMode::L4Only.raw(),
    );
    for mode in NvAccessMode::ALL {
        assert_eq!(csum_mode(&mut nv, *mode), default, "the factory value");
        let img = read(&mut nv, Item::SwOffloadCap, *mode);
        let r = MnvdaReg::new_unchecked(&img[..]);
        assert!(r
            .configuration_item_data()
            .sw_offload_cap()
            .swp_l4_csum_mode_l4_only());
    }
    csum_write(&mut nv, l4).expect("l4_only with the capability");
    assert_eq!(csum_mode(&mut nv, NvAccessMode::Next), l4);
    assert_eq!(csum_mode(&mut nv, NvAccessMode::Current), default);
    // The reserved bits written with it are dropped.
    let img = read(&mut nv, Item::SwAccelerateConf, NvAccessMode::Next);
    assert_eq!(&img[0x0c..0x0c + 8], &[0x80, 0, 0, 0, 0, 0, 0, 0]);
    let mut nv = nv.after_reset();
    assert_eq!(csum_mode(&mut nv, NvAccessMode::Current), l4);
    assert_eq!(csum_mode(&mut nv, NvAccessMode::Default), default);
    // Back to the factory value, as a reset to the default writes it.
    csum_write(&mut nv, default).expect("default may be written");
    refused(csum_write(&mut nv, 3).unwrap_err(), s::NV_BAD_VALUE);

    // An adapter without l4_only: refused, nothing changes; full_csum still goes.
    let mut nv = NvStore::new(&Config {
        swp_l4_csum_l4_only: false,
        ..Config::default()
    });
    let img = read(&mut nv, Item::SwOffloadCap, NvAccessMode::Current);
    let r = MnvdaReg::new_unchecked(&img[..]);
    assert!(!r
        .configuration_item_data()
        .sw_offload_cap()
        .swp_l4_csum_mode_l4_only());
    let before = nv.clone();
    refused(csum_write(&mut nv, l4).unwrap_err(), s::NV_BAD_VALUE);
    assert_eq!(nv, before);
    csum_write(&mut nv, full).expect("full_csum needs no capability");
    assert_eq!(csum_mode(&mut nv, NvAccessMode::Next), full);
    // The capability is read only.
    let mut w = image(Item::SwOffloadCap.type_word(), 0x4, 0);
    refused(
        mnvda(&mut nv, &mut w, true).unwrap_err(),
        s::NV_READ_ONLY_ITEM,
    );
}

#[test]
fn sub_function_fields_are_kept() {
    let mut nv = NvStore::default();
    let mut w = image(Item::PfPciConf.type_word(), 0x10, 0);
    {
        let mut r = MnvdaReg::new_unchecked(&mut w[..]);
        let mut d = r.configuration_item_data_mut();
        let mut c = d.pf_pci_conf_mut();
        c.set_log_sf_bar_size(12);
        c.set_pf_total_sf_en(true);
        c.set_total_sf(300);
    }
    mnvda(&mut nv, &mut w, true).expect("write");
    let img = read(&mut nv, Item::PfPciConf, NvAccessMode::Next);
    let r = MnvdaReg::new_unchecked(&img[..]);
    let d = r.configuration_item_data();
    let c = d.pf_pci_conf();
    assert_eq!(
        (c.log_sf_bar_size(), c.pf_total_sf_en(), c.total_sf()),
        (12, true, 300)
    );
    let mut w = image(Item::GlobalPciConf.type_word(), 0xc, 0);
    {
        let mut r = MnvdaReg::new_unchecked(&mut w[..]);
        let mut d = r.configuration_item_data_mut();
        d.global_pci_conf_mut().set_per_pf_num_sf(true);
    }
    mnvda(&mut nv, &mut w, true).expect("write");
    let img = read(&mut nv, Item::GlobalPciConf, NvAccessMode::Next);
    let r = MnvdaReg::new_unchecked(&img[..]);
    assert!(r
        .configuration_item_data()
        .global_pci_conf()
        .per_pf_num_sf());
}

#[test]
fn mnvqc_lists_what_exists() {
    for (word, rd, wr) in [
        (Item::GlobalPciConf.type_word(), true, true),
        (Item::GlobalPciCap.type_word(), true, false),
        (Item::SwOffloadConf.type_word(), true, true),
        (Item::SwOffloadCap.type_word(), true, false),
        (Item::SwAccelerateConf.type_word(), true, true),
        (Item::PfPciConf.type_word(), true, true),
        (0x0000_1234, false, false),
    ] {
        let mut img = [0u8; 8];
        img[..4].copy_from_slice(&word.to_be_bytes());
        mnvqc(&mut img).expect("read");
        let r = MnvqcReg::new_unchecked(&img[..]);
        assert_eq!((r.support_rd(), r.support_wr(), r.r#type()), (rd, wr, word));
    }
}

#[test]
fn no_image_panics() {
    // Every type word class, length and mode, both directions, over random data.
    let mut nv = NvStore::default();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut img = vec![0u8; SIZE];
        for (i, b) in img.iter_mut().enumerate() {
            *b = (x >> (i % 8 * 8)) as u8 ^ i as u8;
        }
        let item = Item::ALL[(x % Item::ALL.len() as u64) as usize];
        if x & 0x100 != 0 {
            img[4..8].copy_from_slice(&item.type_word().to_be_bytes());
        }
        if x & 0x200 != 0 {
            let mut r = MnvdaReg::new_unchecked(&mut img[..]);
            r.set_length(item.size() as u16);
        }
        let _ = mnvda(&mut nv, &mut img, x & 0x400 != 0);
        let _ = mnvqc(&mut img[..8]);
    }
}
