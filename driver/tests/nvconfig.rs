//! The non-volatile configuration on the model: a setting written is the next value while the
//! current one stays; after a function reset the new value is current; a new device is back
//! at the defaults; what the device refuses (an unknown item, a bad length, a read-only item)
//! is `Error::Register` with the model's status and syndrome, and bad values are refused
//! before anything is sent, naming the setting. The SWP L4 checksum mode goes by devlink's
//! names, refuses `default` (written only by a restore of the default) and refuses `l4_only`
//! on an adapter whose capability lacks it, after reading that capability and nothing else.

mod common;

use common::{up, up_with};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::nvconfig::{ConfigItem, NvItem, NvSetting};
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::{CmdStatus, NvAccessMode};
use mlx5_sim::{syndrome as syn, Config, Mode};

/// `(current, next, default)` of `item`.
fn copies<B: mlx5_driver::backend::Backend>(hca: &Hca<B>, item: NvItem) -> (u32, u32, u32) {
    let s = hca.nv_config().query(item).unwrap();
    (s.current, s.next, s.default)
}

/// The status and syndrome of a refused MNVDA access.
#[track_caller]
fn refused(e: Error, direction: &str) -> (u8, u32) {
    match e {
        Error::Register {
            register: "mnvda",
            id: 0x9024,
            direction: d,
            source,
        } if d == direction => match *source {
            Error::Command {
                status, syndrome, ..
            } => (status, syndrome),
            other => panic!("{other}"),
        },
        other => panic!("{other}"),
    }
}

const BAD_PARAM: u8 = CmdStatus::BadParamErr as u8;

#[test]
fn a_value_is_next_until_a_reset_and_a_new_device_has_defaults() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (hca, dev) = up(mode);
        let nv = hca.nv_config();
        let all = nv.query_all().unwrap();
        assert_eq!(all.len(), NvItem::ALL.len());
        assert!(all
            .iter()
            .all(|s| !s.pending && s.current == s.default && s.next == s.current));
        let max = all.iter().find(|s| s.item == "max_vfs_per_pf").unwrap();
        assert_eq!((max.current, max.writable), (127, false));

        let done = nv.set(NvItem::SriovEn, 1).unwrap();
        assert_eq!((done.current, done.next, done.pending), (0, 1, true));
        nv.set_text("total_vfs", "8").unwrap();
        nv.set_text("cqe_compression", "aggressive").unwrap();
        nv.set(NvItem::PfTotalVf, 4).unwrap();
        assert_eq!(copies(&hca, NvItem::SriovEn), (0, 1, 0));
        assert_eq!(copies(&hca, NvItem::TotalVfs), (0, 8, 0));
        assert_eq!(copies(&hca, NvItem::CqeCompression), (0, 1, 0));
        assert_eq!(copies(&hca, NvItem::PfTotalVf), (0, 4, 0));
        let pending: Vec<&str> = nv
            .query_all()
            .unwrap()
            .into_iter()
            .filter(|s: &NvSetting| s.pending)
            .map(|s| s.item)
            .collect();
        assert_eq!(
            pending,
            ["sriov_en", "total_vfs", "pf_total_vf", "cqe_compression"]
        );
        let done = nv.set_text("swp_l4_csum_mode", "l4_only").unwrap();
        assert_eq!((done.current, done.next, done.pending), (0, 2, true));
        // Setting the value in force is not pending.
        let same = nv.set(NvItem::PerPfTotalVf, 0).unwrap();
        assert!(!same.pending);

        // A function reset: the HCA goes, the device resets, a new HCA comes up on it.
        hca.teardown().unwrap();
        dev.reset();
        let hca = Hca::bring_up(
            SimBackend::over(dev.clone(), mode == Mode::Threaded),
            &HcaConfig::default(),
        )
        .unwrap();
        assert_eq!(copies(&hca, NvItem::SriovEn), (1, 1, 0), "{mode:?}");
        assert_eq!(copies(&hca, NvItem::TotalVfs), (8, 8, 0));
        assert_eq!(copies(&hca, NvItem::CqeCompression), (1, 1, 0));
        assert_eq!(copies(&hca, NvItem::SwpL4CsumMode), (2, 2, 0), "{mode:?}");
        // Back to the factory value, the one way to write `default`.
        let back = hca
            .nv_config()
            .restore_default(NvItem::SwpL4CsumMode)
            .unwrap();
        assert_eq!((back.current, back.next, back.pending), (2, 0, true));
        hca.nv_config()
            .set_text("swp_l4_csum_mode", "l4_only")
            .unwrap();
        assert!(hca
            .nv_config()
            .query_all()
            .unwrap()
            .iter()
            .all(|s| !s.pending));
        hca.teardown().unwrap();

        // A new adapter.
        let (hca, _dev) = up(mode);
        assert_eq!(copies(&hca, NvItem::SriovEn), (0, 0, 0));
        assert_eq!(copies(&hca, NvItem::TotalVfs), (0, 0, 0));
    }
}

#[test]
fn the_device_refuses_with_its_syndromes() {
    let (hca, _dev) = up(Mode::Inline);
    let nv = hca.nv_config();
    // An item the device does not have.
    let e = nv.read_raw(0x0000_0099, 0xc, 0).unwrap_err();
    assert_eq!(refused(e, "read"), (BAD_PARAM, syn::NV_UNKNOWN_ITEM));
    // A length other than the item's.
    let e = nv
        .read_raw(ConfigItem::GlobalPciConf.type_word(), 0xb, 0)
        .unwrap_err();
    assert_eq!(refused(e, "read"), (BAD_PARAM, syn::NV_BAD_LENGTH));
    let e = nv
        .write_raw(|r| {
            r.set_type(ConfigItem::PfPciConf.type_word());
            r.set_length(0x1ff);
        })
        .unwrap_err();
    assert_eq!(refused(e, "write"), (BAD_PARAM, syn::NV_BAD_LENGTH));
    // A read-only item, through the typed API and raw.
    let e = nv.set(NvItem::MaxVfsPerPf, 3).unwrap_err();
    assert_eq!(refused(e, "write"), (BAD_PARAM, syn::NV_READ_ONLY_ITEM));
    let e = nv
        .write_raw(|r| {
            r.set_type(ConfigItem::GlobalPciCap.type_word());
            r.set_length(ConfigItem::GlobalPciCap.length());
        })
        .unwrap_err();
    assert_eq!(refused(e, "write"), (BAD_PARAM, syn::NV_READ_ONLY_ITEM));
    // Header fields too wide never reach the device.
    assert!(matches!(
        nv.read_raw(0x80, 0x200, 0),
        Err(Error::InvalidArgument { .. })
    ));
    // Nothing changed.
    assert!(nv.query_all().unwrap().iter().all(|s| !s.pending));
    let caps = nv.capabilities().unwrap();
    let writable: Vec<bool> = caps.iter().map(|c| c.writable).collect();
    assert_eq!(writable, [true, false, true, false, true, true]);
    assert!(caps.iter().all(|c| c.readable && c.config_item.is_some()));
    let unknown = nv.capability_raw(0x0000_0099).unwrap();
    assert!(!unknown.readable && !unknown.writable && unknown.config_item.is_none());
    let r = nv
        .read(ConfigItem::GlobalPciCap, NvAccessMode::Default)
        .unwrap();
    assert_eq!(r.length(), 0x10);
}

#[test]
fn bad_values_name_the_setting_and_send_nothing() {
    let (hca, dev) = up(Mode::Inline);
    let nv = hca.nv_config();
    let before = dev.commands_executed();
    for (item, text) in [
        ("sriov_en", "2"),
        ("total_vfs", "lots"),
        ("cqe_compression", "max"),
    ] {
        let e = nv.set_text(item, text).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { what, .. } if *what == item),
            "{e}"
        );
    }
    assert!(nv.set_text("num_of_vfs", "1").is_err());
    assert_eq!(dev.commands_executed(), before, "nothing sent");
    // Above the capability's limit: refused after reading it, before writing.
    let e = nv.set(NvItem::TotalVfs, 128).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("total_vfs: invalid argument: 128 VFs"),
        "{e}"
    );
    assert_eq!(copies(&hca, NvItem::TotalVfs), (0, 0, 0));
}

#[test]
fn the_swp_l4_checksum_mode_goes_by_name_and_capability() {
    let (hca, dev) = up(Mode::Inline);
    let nv = hca.nv_config();
    let s = nv.query(NvItem::SwpL4CsumMode).unwrap();
    assert_eq!((s.current, s.next, s.default), (0, 0, 0));
    assert_eq!(NvItem::SwpL4CsumMode.format(s.current), "default");
    assert_eq!(nv.query(NvItem::SwpL4CsumModeL4Only).unwrap().current, 1);
    // `default` is reported but never set, as devlink refuses it; nothing is written.
    let before = dev.commands_executed();
    let e = nv.set_text("swp_l4_csum_mode", "default").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument { what: "swp_l4_csum_mode", why }
            if why.starts_with("`default` is the factory value")),
        "{e}"
    );
    assert_eq!(dev.commands_executed(), before, "nothing sent");
    let done = nv.set_text("swp_l4_csum_mode", "full_csum").unwrap();
    assert_eq!((done.next, done.pending), (1, true));
    // The capability is read only.
    let e = nv.set(NvItem::SwpL4CsumModeL4Only, 0).unwrap_err();
    assert_eq!(refused(e, "write"), (BAD_PARAM, syn::NV_READ_ONLY_ITEM));
    // Raw, the device itself refuses the reserved value 3.
    let e = nv
        .write_raw(|r| {
            r.set_type(ConfigItem::SwAccelerateConf.type_word());
            r.set_length(ConfigItem::SwAccelerateConf.length());
            r.configuration_item_data_mut()
                .sw_accelerate_conf_mut()
                .set_swp_l4_csum_mode_raw(3);
        })
        .unwrap_err();
    assert_eq!(refused(e, "write"), (BAD_PARAM, syn::NV_BAD_VALUE));
}

#[test]
fn l4_only_is_refused_without_the_capability() {
    let (hca, dev) = up_with(
        Config {
            swp_l4_csum_l4_only: false,
            ..Config::default()
        },
        &HcaConfig::default(),
    );
    let nv = hca.nv_config();
    assert_eq!(nv.query(NvItem::SwpL4CsumModeL4Only).unwrap().current, 0);
    let before = dev.commands_executed();
    let e = nv.set(NvItem::SwpL4CsumMode, 2).unwrap_err();
    match &e {
        Error::InvalidArgument { what, why } => {
            assert_eq!(*what, "swp_l4_csum_mode");
            assert!(
                why.starts_with("l4_only is not supported by this device"),
                "{why}"
            );
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        dev.commands_executed(),
        before + 1,
        "one read of the capability, no write"
    );
    assert_eq!(copies(&hca, NvItem::SwpL4CsumMode), (0, 0, 0));
    // The device refuses it too, when a tool writes it raw.
    let e = nv
        .write_raw(|r| {
            r.set_type(ConfigItem::SwAccelerateConf.type_word());
            r.set_length(ConfigItem::SwAccelerateConf.length());
            r.configuration_item_data_mut()
                .sw_accelerate_conf_mut()
                .set_swp_l4_csum_mode_raw(2);
        })
        .unwrap_err();
    assert_eq!(refused(e, "write"), (BAD_PARAM, syn::NV_BAD_VALUE));
    // full_csum needs no capability.
    assert_eq!(
        nv.set_text("swp_l4_csum_mode", "full_csum").unwrap().next,
        1
    );
}

#[test]
fn sub_functions_are_set_per_pf() {
    let (hca, _dev) = up(Mode::Inline);
    let nv = hca.nv_config();
    // What devlink's max_sfs writes for 16 sub-functions.
    nv.set(NvItem::PerPfNumSf, 1).unwrap();
    nv.set(NvItem::PfLogSfBarSize, 12).unwrap();
    nv.set(NvItem::PfTotalSfEn, 1).unwrap();
    nv.set(NvItem::PfTotalSf, 16).unwrap();
    assert_eq!(copies(&hca, NvItem::PerPfNumSf), (0, 1, 0));
    assert_eq!(copies(&hca, NvItem::PfLogSfBarSize), (0, 12, 0));
    assert_eq!(copies(&hca, NvItem::PfTotalSfEn), (0, 1, 0));
    assert_eq!(copies(&hca, NvItem::PfTotalSf), (0, 16, 0));
    // Sub-function counts are not VF counts: max_vfs_per_pf does not bound them.
    nv.set(NvItem::PfTotalSf, 1000).unwrap();
    // The VF fields of the same item are untouched.
    assert_eq!(copies(&hca, NvItem::PfTotalVf), (0, 0, 0));
}
