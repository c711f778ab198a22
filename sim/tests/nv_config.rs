//! The non-volatile configuration registers MNVDA and MNVQC through the command interface, as
//! a driver (Linux's nv_param.c, mlxconfig) reaches them: a value written is the next value
//! until a reset makes it current; both resets (the host's function reset and the firmware
//! reset a driver asks for through the NIC interface bits) apply it, inline and threaded; a
//! new device starts from the defaults; refusals carry their own syndromes. The SWP L4
//! checksum mode (nv_sw_accelerate_conf) survives resets the same way, and `l4_only` is
//! accepted only when the read-only nv_sw_offload_cap says so, which the device's
//! configuration decides.

mod common;

use common::{Host, Reply};
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{
    cmd, AccessRegisterId, CmdStatus, MnvdaReg, MnvqcReg, NvAccessMode, NvSwpL4CsumMode,
};
use mlx5_sim::{syndrome as syn, Config, Mode};

const BAD_PARAM: u8 = CmdStatus::BadParamErr as u8;
const IMAGE: usize = MnvdaReg::<&[u8]>::SIZE;
/// nv_global_pci_conf's type word (class 0, index 0x80) and data length.
const GLOBAL_PCI_CONF: (u32, u16) = (0x80, 0xc);

/// ACCESS_REGISTER of `reg` (op_mod 0 write, 1 read) with an image `fill` writes.
fn access(
    host: &Host,
    reg: AccessRegisterId,
    op_mod: u16,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Reply {
    let mut input = vec![0u8; 0x10 + len];
    input[..2].copy_from_slice(&cmd::AccessRegister::OPCODE.to_be_bytes());
    input[6..8].copy_from_slice(&op_mod.to_be_bytes());
    input[10..12].copy_from_slice(&reg.raw().to_be_bytes());
    fill(&mut input[0x10..]);
    host.exec(&input, 0x10 + len)
}

/// MNVDA with the header `(type, length)` and `mode`, and `data` as the item's first dwords.
fn mnvda(host: &Host, write: bool, item: (u32, u16), mode: NvAccessMode, data: &[u8]) -> Reply {
    access(
        host,
        AccessRegisterId::Mnvda,
        u16::from(!write),
        IMAGE,
        |img| {
            let mut r = MnvdaReg::new_unchecked(&mut img[..]);
            r.set_type(item.0);
            r.set_length(item.1);
            r.set_access_mode(mode);
            img[0x0c..0x0c + data.len()].copy_from_slice(data);
        },
    )
}

/// `(sriov_en, total_vfs)` of the global PCI configuration's copy `mode`.
fn sriov(host: &Host, mode: NvAccessMode) -> (bool, u16) {
    let r = mnvda(host, false, GLOBAL_PCI_CONF, mode, &[]).ok();
    let img = MnvdaReg::new_unchecked(&r.out[0x10..]);
    let d = img.configuration_item_data();
    let c = d.global_pci_conf();
    (c.sriov_en(), c.total_vfs())
}

/// The global PCI configuration's data with SR-IOV on and `vfs` VFs.
fn conf(vfs: u16) -> [u8; 12] {
    let mut d = [0u8; 12];
    d[0] = 0x80; // sriov_valid
    d[4] = 0x80; // sriov_en
    d[6..8].copy_from_slice(&vfs.to_be_bytes());
    d
}

/// Programs the command queue again and enables the function, as a driver does after a reset.
fn restart(host: &Host) {
    host.dev.write32(0x10, (host.cmdq.iova >> 32) as u32);
    host.dev.write32(0x14, host.cmdq.iova as u32);
    host.simple::<cmd::EnableHca>(0).ok();
}

#[test]
fn written_values_wait_for_a_reset_and_survive_it() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let host = Host::new(Config {
            mode,
            ..Config::default()
        });
        host.simple::<cmd::EnableHca>(0).ok();
        assert_eq!(sriov(&host, NvAccessMode::Current), (false, 0), "{mode:?}");
        let w = mnvda(&host, true, GLOBAL_PCI_CONF, NvAccessMode::Next, &conf(8)).ok();
        assert_eq!(
            &w.out[0x10 + 0x0c..0x10 + 0x18],
            &conf(8),
            "the answer is the next value"
        );
        assert_eq!(sriov(&host, NvAccessMode::Next), (true, 8));
        assert_eq!(
            sriov(&host, NvAccessMode::Current),
            (false, 0),
            "not before a reset"
        );
        // DISABLE_HCA and ENABLE_HCA are no reset of the configuration.
        host.simple::<cmd::DisableHca>(0).ok();
        host.simple::<cmd::EnableHca>(0).ok();
        assert_eq!(sriov(&host, NvAccessMode::Current), (false, 0));

        // The host's function reset.
        host.dev.reset();
        restart(&host);
        assert_eq!(sriov(&host, NvAccessMode::Current), (true, 8), "{mode:?}");
        assert_eq!(sriov(&host, NvAccessMode::Next), (true, 8));
        assert_eq!(sriov(&host, NvAccessMode::Default), (false, 0));

        // The firmware reset a driver asks for (NIC interface 7), as Linux's recovery does.
        mnvda(&host, true, GLOBAL_PCI_CONF, NvAccessMode::Next, &conf(4)).ok();
        assert_eq!(sriov(&host, NvAccessMode::Current), (true, 8));
        host.dev.write32(0x14, host.cmdq.iova as u32 | 7 << 8);
        host.dev.sync();
        restart(&host);
        assert_eq!(sriov(&host, NvAccessMode::Current), (true, 4), "{mode:?}");

        // A new adapter has the defaults.
        let fresh = Host::new(Config {
            mode,
            ..Config::default()
        });
        fresh.simple::<cmd::EnableHca>(0).ok();
        assert_eq!(sriov(&fresh, NvAccessMode::Current), (false, 0));
        assert_eq!(sriov(&fresh, NvAccessMode::Next), (false, 0));
    }
}

#[test]
fn refusals_name_their_check() {
    let host = Host::new(Config::default());
    host.simple::<cmd::EnableHca>(0).ok();
    let next = NvAccessMode::Next;
    for (write, item, mode, syndrome) in [
        (false, (0x99, 0xc), next, syn::NV_UNKNOWN_ITEM),
        (true, (0x0301_0080, 0x10), next, syn::NV_UNKNOWN_ITEM),
        (false, (0x80, 0x10), next, syn::NV_BAD_LENGTH),
        (true, (0x81, 0x10), next, syn::NV_READ_ONLY_ITEM),
        (
            true,
            (0x80, 0xc),
            NvAccessMode::Current,
            syn::NV_BAD_ACCESS_MODE,
        ),
    ] {
        mnvda(&host, write, item, mode, &[]).fails(BAD_PARAM, syndrome);
    }
    mnvda(&host, true, GLOBAL_PCI_CONF, next, &conf(128)).fails(BAD_PARAM, syn::NV_BAD_VALUE);
    // The reserved access mode.
    access(&host, AccessRegisterId::Mnvda, 1, IMAGE, |img| {
        img[1] = 0xc0;
        img[3] = 0x0c;
        img[7] = 0x80;
    })
    .fails(BAD_PARAM, syn::NV_BAD_ACCESS_MODE);
    // MNVQC is read only; a read of an item the model lacks says so without failing.
    access(&host, AccessRegisterId::Mnvqc, 0, 8, |_| {}).fails(BAD_PARAM, syn::REG_READ_ONLY);
    let r = access(&host, AccessRegisterId::Mnvqc, 1, 8, |img| img[3] = 0x99).ok();
    let q = MnvqcReg::new_unchecked(&r.out[0x10..]);
    assert!(!q.support_rd() && !q.support_wr());
    let r = access(&host, AccessRegisterId::Mnvqc, 1, 8, |img| img[3] = 0x80).ok();
    let q = MnvqcReg::new_unchecked(&r.out[0x10..]);
    assert!(q.support_rd() && q.support_wr());
    // Nothing refused changed anything.
    assert_eq!(sriov(&host, NvAccessMode::Next), (false, 0));
}

/// nv_sw_accelerate_conf's and nv_sw_offload_cap's type words and data lengths.
const SW_ACCELERATE_CONF: (u32, u16) = (0x11d, 0x8);
const SW_OFFLOAD_CAP: (u32, u16) = (0x10b, 0x4);

/// The SWP L4 checksum mode of copy `mode`.
fn csum_mode(host: &Host, mode: NvAccessMode) -> u8 {
    let r = mnvda(host, false, SW_ACCELERATE_CONF, mode, &[]).ok();
    let img = MnvdaReg::new_unchecked(&r.out[0x10..]);
    let d = img.configuration_item_data();
    let raw = d.sw_accelerate_conf().swp_l4_csum_mode_raw();
    raw
}

/// nv_sw_offload_cap.swp_l4_csum_mode_l4_only.
fn l4_only_cap(host: &Host) -> bool {
    let r = mnvda(host, false, SW_OFFLOAD_CAP, NvAccessMode::Current, &[]).ok();
    let img = MnvdaReg::new_unchecked(&r.out[0x10..]);
    let d = img.configuration_item_data();
    let cap = d.sw_offload_cap().swp_l4_csum_mode_l4_only();
    cap
}

#[test]
fn the_swp_l4_checksum_mode_survives_resets_and_follows_its_capability() {
    let (full, l4) = (
        NvSwpL4CsumMode::FullCsum.raw(),
        NvSwpL4CsumMode::L4Only.raw(),
    );
    for mode in [Mode::Inline, Mode::Threaded] {
        let host = Host::new(Config {
            mode,
            ..Config::default()
        });
        host.simple::<cmd::EnableHca>(0).ok();
        assert!(l4_only_cap(&host), "supported by default");
        assert_eq!(csum_mode(&host, NvAccessMode::Current), 0, "default");
        // l4_only is the top bits of the item's first byte: 0b10 << 6.
        mnvda(
            &host,
            true,
            SW_ACCELERATE_CONF,
            NvAccessMode::Next,
            &[l4 << 6],
        )
        .ok();
        assert_eq!(csum_mode(&host, NvAccessMode::Next), l4);
        assert_eq!(csum_mode(&host, NvAccessMode::Current), 0);
        host.dev.reset();
        restart(&host);
        assert_eq!(csum_mode(&host, NvAccessMode::Current), l4, "{mode:?}");
        assert_eq!(csum_mode(&host, NvAccessMode::Default), 0);
        // The reserved value; the read-only capability.
        mnvda(
            &host,
            true,
            SW_ACCELERATE_CONF,
            NvAccessMode::Next,
            &[3 << 6],
        )
        .fails(BAD_PARAM, syn::NV_BAD_VALUE);
        mnvda(&host, true, SW_OFFLOAD_CAP, NvAccessMode::Next, &[])
            .fails(BAD_PARAM, syn::NV_READ_ONLY_ITEM);
    }
    // An adapter without l4_only.
    let host = Host::new(Config {
        swp_l4_csum_l4_only: false,
        ..Config::default()
    });
    host.simple::<cmd::EnableHca>(0).ok();
    assert!(!l4_only_cap(&host));
    mnvda(
        &host,
        true,
        SW_ACCELERATE_CONF,
        NvAccessMode::Next,
        &[l4 << 6],
    )
    .fails(BAD_PARAM, syn::NV_BAD_VALUE);
    assert_eq!(csum_mode(&host, NvAccessMode::Next), 0, "nothing stored");
    mnvda(
        &host,
        true,
        SW_ACCELERATE_CONF,
        NvAccessMode::Next,
        &[full << 6],
    )
    .ok();
    assert_eq!(csum_mode(&host, NvAccessMode::Next), full);
}
