//! The configuration items ([`ConfigItem`], one MNVDA type word each) and the settings
//! ([`NvItem`], one field of an item each): names, kinds of value, parsing and printing, and
//! where each lives in an MNVDA image.

use crate::error::{Error, Result};
use mlx5_prm::rt::{Bytes, View};
use mlx5_prm::{
    ConfigurationItemTypeClassGlobal, ConfigurationItemTypeClassPerHostPf, MnvdaReg,
    NvCqeCompression, NvGlobalItem, NvGlobalPciCap, NvGlobalPciConf, NvPerHostPfItem, NvPfPciConf,
    NvSwAccelerateConf, NvSwOffloadCap, NvSwOffloadConf, NvSwpL4CsumMode, NvTypeClass,
};

/// A configuration item: one MNVDA type word and its data layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ConfigItem {
    /// `nv_global_pci_conf` (global class, index 0x80): SR-IOV on the adapter, and whether
    /// sub-functions are set per PF.
    GlobalPciConf,
    /// `nv_global_pci_cap` (global class, index 0x81): what the adapter supports; read only.
    GlobalPciCap,
    /// `nv_sw_offload_conf` (global class, index 0x10a): software offloads.
    SwOffloadConf,
    /// `nv_sw_offload_cap` (global class, index 0x10b): which software settings the adapter
    /// supports; read only.
    SwOffloadCap,
    /// `nv_sw_accelerate_conf` (global class, index 0x11d): software accelerations.
    SwAccelerateConf,
    /// `nv_pf_pci_conf` (per-host-PF class, index 0x80): SR-IOV and sub-functions of this PF.
    PfPciConf,
}

impl ConfigItem {
    /// Every item.
    pub const ALL: [ConfigItem; 6] = [
        ConfigItem::GlobalPciConf,
        ConfigItem::GlobalPciCap,
        ConfigItem::SwOffloadConf,
        ConfigItem::SwOffloadCap,
        ConfigItem::SwAccelerateConf,
        ConfigItem::PfPciConf,
    ];

    /// The item's data layout as the spec names it.
    pub fn name(self) -> &'static str {
        match self {
            ConfigItem::GlobalPciConf => NvGlobalPciConf::<&[u8]>::NAME,
            ConfigItem::GlobalPciCap => NvGlobalPciCap::<&[u8]>::NAME,
            ConfigItem::SwOffloadConf => NvSwOffloadConf::<&[u8]>::NAME,
            ConfigItem::SwOffloadCap => NvSwOffloadCap::<&[u8]>::NAME,
            ConfigItem::SwAccelerateConf => NvSwAccelerateConf::<&[u8]>::NAME,
            ConfigItem::PfPciConf => NvPfPciConf::<&[u8]>::NAME,
        }
    }

    /// The type word (`mnvda_reg.type`): class and parameter index, as nv_param.c sets them
    /// (a per-host-PF item with PF and bus 0: the function asking).
    pub fn type_word(self) -> u32 {
        let global = |index: NvGlobalItem| {
            let mut w = ConfigurationItemTypeClassGlobal::zeroed();
            w.set_type_class(NvTypeClass::Global);
            w.set_parameter_index(index);
            u32::from_be_bytes(w.into_inner())
        };
        match self {
            ConfigItem::GlobalPciConf => global(NvGlobalItem::NvGlobalPciConf),
            ConfigItem::GlobalPciCap => global(NvGlobalItem::NvGlobalPciCap),
            ConfigItem::SwOffloadConf => global(NvGlobalItem::NvSwOffloadConfig),
            ConfigItem::SwOffloadCap => global(NvGlobalItem::NvSwOffloadCap),
            ConfigItem::SwAccelerateConf => global(NvGlobalItem::NvSwAccelerateConf),
            ConfigItem::PfPciConf => {
                let mut w = ConfigurationItemTypeClassPerHostPf::zeroed();
                w.set_type_class(NvTypeClass::PerHostPf);
                w.set_parameter_index(NvPerHostPfItem::NvPfPciConf);
                u32::from_be_bytes(w.into_inner())
            }
        }
    }

    /// The item's data size in bytes: the `length` MNVDA carries (Linux sets it on reads too).
    pub fn length(self) -> u16 {
        let size = match self {
            ConfigItem::GlobalPciConf => NvGlobalPciConf::<&[u8]>::SIZE,
            ConfigItem::GlobalPciCap => NvGlobalPciCap::<&[u8]>::SIZE,
            ConfigItem::SwOffloadConf => NvSwOffloadConf::<&[u8]>::SIZE,
            ConfigItem::SwOffloadCap => NvSwOffloadCap::<&[u8]>::SIZE,
            ConfigItem::SwAccelerateConf => NvSwAccelerateConf::<&[u8]>::SIZE,
            ConfigItem::PfPciConf => NvPfPciConf::<&[u8]>::SIZE,
        };
        // Item layouts are a few dwords (the spec's); the field holds up to 511.
        size as u16
    }

    /// Whether the item may be written (the capabilities are read only).
    pub fn writable(self) -> bool {
        !matches!(self, ConfigItem::GlobalPciCap | ConfigItem::SwOffloadCap)
    }
}

/// What kind of value a setting holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// 0 or 1 (`true`, `false`, `on`, `off` when parsed).
    Flag,
    /// A 16-bit count.
    Count,
    /// An 8-bit number (a log2 size).
    Byte,
    /// `balanced` (0) or `aggressive` (1).
    CqeCompression,
    /// `default` (0), `full_csum` (1) or `l4_only` (2), as devlink names them.
    SwpL4CsumMode,
}

/// A setting: one field of a configuration item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvItem {
    /// SR-IOV enabled (`nv_global_pci_conf.sriov_en`; devlink `enable_sriov`).
    SriovEn,
    /// VFs per PF when SR-IOV is set for the adapter (`nv_global_pci_conf.total_vfs`).
    TotalVfs,
    /// SR-IOV is set per PF (`nv_global_pci_conf.per_pf_total_vf`).
    PerPfTotalVf,
    /// This PF has VFs (`nv_pf_pci_conf.pf_total_vf_en`).
    PfTotalVfEn,
    /// VFs of this PF (`nv_pf_pci_conf.total_vf`; devlink `total_vfs` when per PF).
    PfTotalVf,
    /// Sub-functions are set per PF (`nv_global_pci_conf.per_pf_num_sf`; devlink `max_sfs`
    /// sets it when non-zero).
    PerPfNumSf,
    /// This PF has sub-functions (`nv_pf_pci_conf.pf_total_sf_en`).
    PfTotalSfEn,
    /// Sub-functions of this PF (`nv_pf_pci_conf.total_sf`; devlink `max_sfs`).
    PfTotalSf,
    /// Log2 of each sub-function's BAR size (`nv_pf_pci_conf.log_sf_bar_size`; devlink
    /// `max_sfs` writes 12 with sub-functions, 0 without).
    PfLogSfBarSize,
    /// CQE compression (`nv_sw_offload_conf.cqe_compression`; devlink `cqe_compress_type`).
    CqeCompression,
    /// How the L4 checksum of packets sent with software parser offsets is computed
    /// (`nv_sw_accelerate_conf.swp_l4_csum_mode`; devlink `swp_l4_csum_mode`). `default` is
    /// the factory value and cannot be set; `l4_only` needs
    /// [`NvItem::SwpL4CsumModeL4Only`].
    SwpL4CsumMode,
    /// The adapter supports SR-IOV (`nv_global_pci_cap.sriov_support`; read only).
    SriovSupport,
    /// Most VFs a PF may have (`nv_global_pci_cap.max_vfs_per_pf`; read only).
    MaxVfsPerPf,
    /// `swp_l4_csum_mode` may be `l4_only` (`nv_sw_offload_cap.swp_l4_csum_mode_l4_only`;
    /// read only).
    SwpL4CsumModeL4Only,
}

impl NvItem {
    /// Every setting, in the order a query lists them.
    pub const ALL: [NvItem; 14] = [
        NvItem::SriovEn,
        NvItem::TotalVfs,
        NvItem::PerPfTotalVf,
        NvItem::PfTotalVfEn,
        NvItem::PfTotalVf,
        NvItem::PerPfNumSf,
        NvItem::PfTotalSfEn,
        NvItem::PfTotalSf,
        NvItem::PfLogSfBarSize,
        NvItem::CqeCompression,
        NvItem::SwpL4CsumMode,
        NvItem::SriovSupport,
        NvItem::MaxVfsPerPf,
        NvItem::SwpL4CsumModeL4Only,
    ];

    /// The setting's name (the key of `mlx5 config set`).
    pub fn name(self) -> &'static str {
        match self {
            NvItem::SriovEn => "sriov_en",
            NvItem::TotalVfs => "total_vfs",
            NvItem::PerPfTotalVf => "per_pf_total_vf",
            NvItem::PfTotalVfEn => "pf_total_vf_en",
            NvItem::PfTotalVf => "pf_total_vf",
            NvItem::PerPfNumSf => "per_pf_num_sf",
            NvItem::PfTotalSfEn => "pf_total_sf_en",
            NvItem::PfTotalSf => "pf_total_sf",
            NvItem::PfLogSfBarSize => "pf_log_sf_bar_size",
            NvItem::CqeCompression => "cqe_compression",
            NvItem::SwpL4CsumMode => "swp_l4_csum_mode",
            NvItem::SriovSupport => "sriov_support",
            NvItem::MaxVfsPerPf => "max_vfs_per_pf",
            NvItem::SwpL4CsumModeL4Only => "swp_l4_csum_mode_l4_only",
        }
    }

    /// The setting called `name`, or an error listing the settings.
    pub fn by_name(name: &str) -> Result<NvItem> {
        NvItem::ALL
            .into_iter()
            .find(|i| i.name() == name)
            .ok_or_else(|| Error::InvalidArgument {
                what: "non-volatile setting",
                why: format!(
                    "`{name}` is not one (settings: {})",
                    NvItem::ALL.map(NvItem::name).join(", ")
                ),
            })
    }

    /// The configuration item that holds it.
    pub fn config_item(self) -> ConfigItem {
        match self {
            NvItem::SriovEn | NvItem::TotalVfs | NvItem::PerPfTotalVf | NvItem::PerPfNumSf => {
                ConfigItem::GlobalPciConf
            }
            NvItem::PfTotalVfEn
            | NvItem::PfTotalVf
            | NvItem::PfTotalSfEn
            | NvItem::PfTotalSf
            | NvItem::PfLogSfBarSize => ConfigItem::PfPciConf,
            NvItem::CqeCompression => ConfigItem::SwOffloadConf,
            NvItem::SwpL4CsumMode => ConfigItem::SwAccelerateConf,
            NvItem::SriovSupport | NvItem::MaxVfsPerPf => ConfigItem::GlobalPciCap,
            NvItem::SwpL4CsumModeL4Only => ConfigItem::SwOffloadCap,
        }
    }

    /// What kind of value it holds.
    pub fn kind(self) -> ValueKind {
        match self {
            NvItem::TotalVfs | NvItem::PfTotalVf | NvItem::MaxVfsPerPf | NvItem::PfTotalSf => {
                ValueKind::Count
            }
            NvItem::PfLogSfBarSize => ValueKind::Byte,
            NvItem::CqeCompression => ValueKind::CqeCompression,
            NvItem::SwpL4CsumMode => ValueKind::SwpL4CsumMode,
            _ => ValueKind::Flag,
        }
    }

    /// Whether the setting may be written (the capabilities' are read only).
    pub fn writable(self) -> bool {
        self.config_item().writable()
    }

    /// Whether the value is a number of VFs, checked against the capability's
    /// `max_vfs_per_pf` before it is written.
    pub(super) fn is_vf_count(self) -> bool {
        matches!(self, NvItem::TotalVfs | NvItem::PfTotalVf)
    }

    /// `text` as a value of this setting; the error names the setting.
    pub fn parse(self, text: &str) -> Result<u32> {
        let t = text.trim().to_ascii_lowercase();
        let bad = |why: String| Error::InvalidArgument {
            what: self.name(),
            why,
        };
        let number = || match t.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => t.parse::<u32>().ok(),
        };
        match self.kind() {
            ValueKind::Flag => match t.as_str() {
                "1" | "true" | "on" | "yes" => Ok(1),
                "0" | "false" | "off" | "no" => Ok(0),
                _ => Err(bad(format!("`{text}` is not true or false"))),
            },
            ValueKind::Count => number()
                .filter(|&n| n <= u32::from(u16::MAX))
                .ok_or_else(|| bad(format!("`{text}` is not a count from 0 to 65535"))),
            ValueKind::Byte => number()
                .filter(|&n| n <= u32::from(u8::MAX))
                .ok_or_else(|| bad(format!("`{text}` is not a number from 0 to 255"))),
            ValueKind::CqeCompression => NvCqeCompression::ALL
                .iter()
                .find(|c| c.spec_name() == t)
                .map(|c| u32::from(c.raw()))
                .or_else(|| number().filter(|&n| NvCqeCompression::from_raw(n.into()).is_some()))
                .ok_or_else(|| bad(format!("`{text}` is not balanced or aggressive"))),
            ValueKind::SwpL4CsumMode => NvSwpL4CsumMode::ALL
                .iter()
                .find(|c| c.spec_name() == t)
                .map(|c| u32::from(c.raw()))
                .or_else(|| number().filter(|&n| NvSwpL4CsumMode::from_raw(n.into()).is_some()))
                .ok_or_else(|| bad(format!("`{text}` is not default, full_csum or l4_only"))),
        }
    }

    /// `value` as text: `true`/`false`, a number, or the value's name.
    pub fn format(self, value: u32) -> String {
        match self.kind() {
            ValueKind::Flag => (value != 0).to_string(),
            ValueKind::Count | ValueKind::Byte => value.to_string(),
            ValueKind::CqeCompression => NvCqeCompression::from_raw(value.into())
                .map(|c| c.spec_name().to_string())
                .unwrap_or_else(|| format!("unknown({value})")),
            ValueKind::SwpL4CsumMode => NvSwpL4CsumMode::from_raw(value.into())
                .map(|c| c.spec_name().to_string())
                .unwrap_or_else(|| format!("unknown({value})")),
        }
    }

    /// The setting's value in an MNVDA image of its item.
    pub(super) fn get<T: Bytes>(self, r: &MnvdaReg<T>) -> u32 {
        let d = r.configuration_item_data();
        match self {
            NvItem::SriovEn => d.global_pci_conf().sriov_en().into(),
            NvItem::TotalVfs => d.global_pci_conf().total_vfs().into(),
            NvItem::PerPfTotalVf => d.global_pci_conf().per_pf_total_vf().into(),
            NvItem::PerPfNumSf => d.global_pci_conf().per_pf_num_sf().into(),
            NvItem::PfTotalVfEn => d.pf_pci_conf().pf_total_vf_en().into(),
            NvItem::PfTotalVf => d.pf_pci_conf().total_vf().into(),
            NvItem::PfTotalSfEn => d.pf_pci_conf().pf_total_sf_en().into(),
            NvItem::PfTotalSf => d.pf_pci_conf().total_sf().into(),
            NvItem::PfLogSfBarSize => d.pf_pci_conf().log_sf_bar_size().into(),
            NvItem::CqeCompression => d.sw_offload_conf().cqe_compression_raw().into(),
            NvItem::SwpL4CsumMode => d.sw_accelerate_conf().swp_l4_csum_mode_raw().into(),
            NvItem::SriovSupport => d.global_pci_cap().sriov_support().into(),
            NvItem::MaxVfsPerPf => d.global_pci_cap().max_vfs_per_pf().into(),
            NvItem::SwpL4CsumModeL4Only => d.sw_offload_cap().swp_l4_csum_mode_l4_only().into(),
        }
    }

    /// Sets the value (already checked against [`NvItem::kind`]) in an image of its item;
    /// the SR-IOV fields are marked valid, as Linux marks them.
    pub(super) fn put(self, r: &mut MnvdaReg<&mut [u8]>, value: u32) {
        let mut d = r.configuration_item_data_mut();
        let flag = value != 0;
        let count = u16::try_from(value).unwrap_or(u16::MAX);
        let byte = u8::try_from(value).unwrap_or(u8::MAX);
        match self {
            NvItem::SriovEn | NvItem::TotalVfs | NvItem::PerPfTotalVf => {
                let mut c = d.global_pci_conf_mut();
                c.set_sriov_valid(true);
                match self {
                    NvItem::SriovEn => c.set_sriov_en(flag),
                    NvItem::TotalVfs => c.set_total_vfs(count),
                    _ => c.set_per_pf_total_vf(flag),
                }
            }
            NvItem::PerPfNumSf => d.global_pci_conf_mut().set_per_pf_num_sf(flag),
            NvItem::PfTotalVfEn => d.pf_pci_conf_mut().set_pf_total_vf_en(flag),
            NvItem::PfTotalVf => d.pf_pci_conf_mut().set_total_vf(count),
            NvItem::PfTotalSfEn => d.pf_pci_conf_mut().set_pf_total_sf_en(flag),
            NvItem::PfTotalSf => d.pf_pci_conf_mut().set_total_sf(count),
            NvItem::PfLogSfBarSize => d.pf_pci_conf_mut().set_log_sf_bar_size(byte),
            NvItem::CqeCompression => d
                .sw_offload_conf_mut()
                .set_cqe_compression_raw((value & 0x7) as u8),
            NvItem::SwpL4CsumMode => d
                .sw_accelerate_conf_mut()
                .set_swp_l4_csum_mode_raw((value & 0x3) as u8),
            NvItem::SriovSupport => d.global_pci_cap_mut().set_sriov_support(flag),
            NvItem::MaxVfsPerPf => d.global_pci_cap_mut().set_max_vfs_per_pf(count),
            NvItem::SwpL4CsumModeL4Only => {
                d.sw_offload_cap_mut().set_swp_l4_csum_mode_l4_only(flag)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_words_and_lengths_are_nv_params() {
        let words = ConfigItem::ALL.map(ConfigItem::type_word);
        assert_eq!(words, [0x80, 0x81, 0x10a, 0x10b, 0x11d, 0x0300_0080]);
        assert_eq!(
            ConfigItem::ALL.map(ConfigItem::length),
            [0xc, 0x10, 0x8, 0x4, 0x8, 0x10]
        );
    }

    #[test]
    fn values_parse_and_print_by_kind() {
        assert_eq!(NvItem::SriovEn.parse("True").unwrap(), 1);
        assert_eq!(NvItem::SriovEn.parse("off").unwrap(), 0);
        assert_eq!(NvItem::TotalVfs.parse("0x10").unwrap(), 16);
        assert_eq!(NvItem::PfLogSfBarSize.parse("12").unwrap(), 12);
        assert_eq!(NvItem::CqeCompression.parse("aggressive").unwrap(), 1);
        assert_eq!(NvItem::CqeCompression.format(0), "balanced");
        assert_eq!(NvItem::SwpL4CsumMode.parse("L4_only").unwrap(), 2);
        assert_eq!(NvItem::SwpL4CsumMode.parse("full_csum").unwrap(), 1);
        assert_eq!(NvItem::SwpL4CsumMode.parse("default").unwrap(), 0);
        assert_eq!(NvItem::SwpL4CsumMode.format(0), "default");
        assert_eq!(NvItem::SwpL4CsumMode.format(2), "l4_only");
        assert_eq!(NvItem::SwpL4CsumMode.format(3), "unknown(3)");
        assert_eq!(NvItem::PfTotalVfEn.format(1), "true");
        for (item, text) in [
            (NvItem::SriovEn, "2"),
            (NvItem::TotalVfs, "65536"),
            (NvItem::TotalVfs, "-1"),
            (NvItem::PfLogSfBarSize, "256"),
            (NvItem::CqeCompression, "7"),
            (NvItem::SwpL4CsumMode, "3"),
            (NvItem::SwpL4CsumMode, "device_default"),
        ] {
            let e = item.parse(text).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { what, .. } if what == item.name()),
                "{e}"
            );
        }
        assert!(NvItem::by_name("sriov_en").is_ok());
        let e = NvItem::by_name("num_of_vfs").unwrap_err().to_string();
        assert!(
            e.contains("`num_of_vfs` is not one") && e.contains("total_vfs"),
            "{e}"
        );
    }

    #[test]
    fn every_setting_round_trips_through_its_item() {
        for item in NvItem::ALL {
            let mut img = vec![0u8; MnvdaReg::<&[u8]>::SIZE];
            let value = match item.kind() {
                ValueKind::Flag => 1,
                ValueKind::Count => 300,
                ValueKind::Byte => 12,
                ValueKind::CqeCompression => 1,
                ValueKind::SwpL4CsumMode => 2,
            };
            let mut r = MnvdaReg::new_checked(&mut img[..]).unwrap();
            item.put(&mut r, value);
            assert_eq!(item.get(&r), value, "{}", item.name());
        }
    }
}
