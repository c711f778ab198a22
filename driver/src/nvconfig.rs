//! The adapter's non-volatile configuration, as `mlxconfig` and Linux's permanent devlink
//! parameters (`lib/nv_param.c`: `enable_sriov`, `total_vfs`, `cqe_compress_type`) see it:
//! MNVDA reads and writes one configuration item, MNVQC says which items exist and which may
//! be written.
//!
//! **A value written takes effect only after the next reset** of the firmware or the function
//! (a driver's firmware reset, a PCI function reset, a power cycle). Until then the adapter
//! keeps two copies: *current*, in force now, and *next*, what the reset will load. A
//! [`NvConfig::set`] writes the next copy and reports both; `pending: true` in its
//! [`NvSetOutcome`] says a reset is still needed. [`NvConfig::query`] shows current, next and
//! the factory default of a setting, like `mlxconfig query`.
//!
//! Settings ([`NvItem`]) are fields of configuration items ([`ConfigItem`], each one MNVDA
//! type word): `sriov_en`, `total_vfs` and `per_pf_total_vf` of the global PCI configuration,
//! `pf_total_vf_en` and `pf_total_vf` of this PF's PCI configuration, `cqe_compression` of the
//! software offload configuration, and the read-only `sriov_support` and `max_vfs_per_pf` of
//! the global PCI capability. A write goes as Linux's does: read the item's next copy, change
//! the one field (and mark the SR-IOV fields valid), write the whole item back.
//!
//! Errors: a value a setting cannot hold is refused before anything is sent, with
//! [`Error::InvalidArgument`] naming the setting (`what: "total_vfs"`); what the device
//! refuses (an item it does not have, a bad length, a read-only item) comes back as
//! [`Error::Register`] for register `mnvda`, with the command's status and syndrome.
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mlx5_driver::backend::sim::SimBackend;
//! use mlx5_driver::nvconfig::NvItem;
//! use mlx5_driver::{Hca, HcaConfig};
//!
//! let (backend, _device) = SimBackend::new(mlx5_sim::Config::default());
//! let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
//! let nv = hca.nv_config();
//! let done = nv.set(NvItem::SriovEn, 1).unwrap();
//! assert!(done.pending, "in force after the next reset");
//! let s = nv.query(NvItem::SriovEn).unwrap();
//! assert_eq!((s.current, s.next, s.default), (0, 1, 0));
//! # }
//! ```

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::Hca;
use mlx5_prm::reg::{Mnvda, Mnvqc};
use mlx5_prm::rt::{Bytes, View};
use mlx5_prm::{
    ConfigurationItemTypeClassGlobal, ConfigurationItemTypeClassPerHostPf, MnvdaReg, NvAccessMode,
    NvCqeCompression, NvGlobalItem, NvGlobalPciCap, NvGlobalPciConf, NvPerHostPfItem, NvPfPciConf,
    NvSwOffloadConf, NvTypeClass,
};

/// A configuration item: one MNVDA type word and its data layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ConfigItem {
    /// `nv_global_pci_conf` (global class, index 0x80): SR-IOV on the adapter.
    GlobalPciConf,
    /// `nv_global_pci_cap` (global class, index 0x81): what the adapter supports; read only.
    GlobalPciCap,
    /// `nv_sw_offload_conf` (global class, index 0x10a): software offloads.
    SwOffloadConf,
    /// `nv_pf_pci_conf` (per-host-PF class, index 0x80): SR-IOV of this PF.
    PfPciConf,
}

impl ConfigItem {
    /// Every item.
    pub const ALL: [ConfigItem; 4] = [
        ConfigItem::GlobalPciConf,
        ConfigItem::GlobalPciCap,
        ConfigItem::SwOffloadConf,
        ConfigItem::PfPciConf,
    ];

    /// The item's data layout as the spec names it.
    pub fn name(self) -> &'static str {
        match self {
            ConfigItem::GlobalPciConf => NvGlobalPciConf::<&[u8]>::NAME,
            ConfigItem::GlobalPciCap => NvGlobalPciCap::<&[u8]>::NAME,
            ConfigItem::SwOffloadConf => NvSwOffloadConf::<&[u8]>::NAME,
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
            ConfigItem::PfPciConf => NvPfPciConf::<&[u8]>::SIZE,
        };
        // Item layouts are a few dwords (the spec's); the field holds up to 511.
        size as u16
    }
}

/// What kind of value a setting holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// 0 or 1 (`true`, `false`, `on`, `off` when parsed).
    Flag,
    /// A 16-bit count.
    Count,
    /// `balanced` (0) or `aggressive` (1).
    CqeCompression,
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
    /// CQE compression (`nv_sw_offload_conf.cqe_compression`; devlink `cqe_compress_type`).
    CqeCompression,
    /// The adapter supports SR-IOV (`nv_global_pci_cap.sriov_support`; read only).
    SriovSupport,
    /// Most VFs a PF may have (`nv_global_pci_cap.max_vfs_per_pf`; read only).
    MaxVfsPerPf,
}

impl NvItem {
    /// Every setting, in the order a query lists them.
    pub const ALL: [NvItem; 8] = [
        NvItem::SriovEn,
        NvItem::TotalVfs,
        NvItem::PerPfTotalVf,
        NvItem::PfTotalVfEn,
        NvItem::PfTotalVf,
        NvItem::CqeCompression,
        NvItem::SriovSupport,
        NvItem::MaxVfsPerPf,
    ];

    /// The setting's name (the key of `mlx5 config set`).
    pub fn name(self) -> &'static str {
        match self {
            NvItem::SriovEn => "sriov_en",
            NvItem::TotalVfs => "total_vfs",
            NvItem::PerPfTotalVf => "per_pf_total_vf",
            NvItem::PfTotalVfEn => "pf_total_vf_en",
            NvItem::PfTotalVf => "pf_total_vf",
            NvItem::CqeCompression => "cqe_compression",
            NvItem::SriovSupport => "sriov_support",
            NvItem::MaxVfsPerPf => "max_vfs_per_pf",
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
            NvItem::SriovEn | NvItem::TotalVfs | NvItem::PerPfTotalVf => ConfigItem::GlobalPciConf,
            NvItem::PfTotalVfEn | NvItem::PfTotalVf => ConfigItem::PfPciConf,
            NvItem::CqeCompression => ConfigItem::SwOffloadConf,
            NvItem::SriovSupport | NvItem::MaxVfsPerPf => ConfigItem::GlobalPciCap,
        }
    }

    /// What kind of value it holds.
    pub fn kind(self) -> ValueKind {
        match self {
            NvItem::TotalVfs | NvItem::PfTotalVf | NvItem::MaxVfsPerPf => ValueKind::Count,
            NvItem::CqeCompression => ValueKind::CqeCompression,
            _ => ValueKind::Flag,
        }
    }

    /// Whether the setting may be written (the capability's are read only).
    pub fn writable(self) -> bool {
        self.config_item() != ConfigItem::GlobalPciCap
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
            ValueKind::CqeCompression => NvCqeCompression::ALL
                .iter()
                .find(|c| c.spec_name() == t)
                .map(|c| u32::from(c.raw()))
                .or_else(|| number().filter(|&n| NvCqeCompression::from_raw(n.into()).is_some()))
                .ok_or_else(|| bad(format!("`{text}` is not balanced or aggressive"))),
        }
    }

    /// `value` as text: `true`/`false`, a number, or the compression's name.
    pub fn format(self, value: u32) -> String {
        match self.kind() {
            ValueKind::Flag => (value != 0).to_string(),
            ValueKind::Count => value.to_string(),
            ValueKind::CqeCompression => NvCqeCompression::from_raw(value.into())
                .map(|c| c.spec_name().to_string())
                .unwrap_or_else(|| format!("unknown({value})")),
        }
    }

    /// The setting's value in an MNVDA image of its item.
    fn get<T: Bytes>(self, r: &MnvdaReg<T>) -> u32 {
        let d = r.configuration_item_data();
        match self {
            NvItem::SriovEn => d.global_pci_conf().sriov_en().into(),
            NvItem::TotalVfs => d.global_pci_conf().total_vfs().into(),
            NvItem::PerPfTotalVf => d.global_pci_conf().per_pf_total_vf().into(),
            NvItem::PfTotalVfEn => d.pf_pci_conf().pf_total_vf_en().into(),
            NvItem::PfTotalVf => d.pf_pci_conf().total_vf().into(),
            NvItem::CqeCompression => d.sw_offload_conf().cqe_compression_raw().into(),
            NvItem::SriovSupport => d.global_pci_cap().sriov_support().into(),
            NvItem::MaxVfsPerPf => d.global_pci_cap().max_vfs_per_pf().into(),
        }
    }

    /// Sets the value (already checked against [`NvItem::kind`]) in an image of its item;
    /// the SR-IOV fields are marked valid, as Linux marks them.
    fn put(self, r: &mut MnvdaReg<&mut [u8]>, value: u32) {
        let mut d = r.configuration_item_data_mut();
        let flag = value != 0;
        let count = u16::try_from(value).unwrap_or(u16::MAX);
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
            NvItem::PfTotalVfEn => d.pf_pci_conf_mut().set_pf_total_vf_en(flag),
            NvItem::PfTotalVf => d.pf_pci_conf_mut().set_total_vf(count),
            NvItem::CqeCompression => d
                .sw_offload_conf_mut()
                .set_cqe_compression_raw((value & 0x7) as u8),
            NvItem::SriovSupport => d.global_pci_cap_mut().set_sriov_support(flag),
            NvItem::MaxVfsPerPf => d.global_pci_cap_mut().set_max_vfs_per_pf(count),
        }
    }
}

/// A setting's three copies, as `mlxconfig query` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct NvSetting {
    /// The setting ([`NvItem::name`]).
    pub item: &'static str,
    /// The configuration item holding it ([`ConfigItem::name`]).
    pub config_item: &'static str,
    /// The value in force now.
    pub current: u32,
    /// The value the next reset loads.
    pub next: u32,
    /// The factory default.
    pub default: u32,
    /// `next` differs from `current`: a reset is needed to apply it.
    pub pending: bool,
    /// The setting may be written.
    pub writable: bool,
}

/// What a [`NvConfig::set`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct NvSetOutcome {
    /// The setting.
    pub item: &'static str,
    /// The value written.
    pub value: u32,
    /// The value still in force.
    pub current: u32,
    /// The value the next reset loads (read back).
    pub next: u32,
    /// True while `next` differs from `current`: the value takes effect at the next reset.
    pub pending: bool,
}

/// What MNVQC says of a configuration item.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct NvCapability {
    /// The item, if it is one of [`ConfigItem`].
    pub config_item: Option<&'static str>,
    /// Its type word.
    pub type_word: u32,
    /// The item exists and may be read.
    pub readable: bool,
    /// The item exists and may be written.
    pub writable: bool,
    /// Newest data version the adapter supports.
    pub version: u8,
}

/// The non-volatile configuration of an HCA, borrowed from it ([`Hca::nv_config`]).
pub struct NvConfig<'h, B: Backend> {
    hca: &'h Hca<B>,
}

impl<B: Backend> Hca<B> {
    /// The adapter's non-volatile configuration (MNVDA, MNVQC).
    pub fn nv_config(&self) -> NvConfig<'_, B> {
        NvConfig { hca: self }
    }
}

impl<B: Backend> NvConfig<'_, B> {
    /// Reads copy `mode` of `item`.
    pub fn read(&self, item: ConfigItem, mode: NvAccessMode) -> Result<MnvdaReg<Vec<u8>>> {
        self.read_raw(item.type_word(), item.length(), mode.raw())
    }

    /// Reads the item of type word `type_word` with the header's `length` and `access_mode`
    /// as given, for tools and tests: the device judges them. `length` must fit 9 bits and
    /// `access_mode` 2.
    pub fn read_raw(
        &self,
        type_word: u32,
        length: u16,
        access_mode: u8,
    ) -> Result<MnvdaReg<Vec<u8>>> {
        let length_ok = length <= 0x1ff;
        let mode_ok = access_mode <= 3;
        if !(length_ok && mode_ok) {
            return Err(Error::InvalidArgument {
                what: "mnvda header",
                why: format!("length {length} (at most 511) or access mode {access_mode} (at most 3) too wide"),
            });
        }
        self.hca.read_reg::<Mnvda>(|r| {
            r.set_type(type_word);
            r.set_length(length);
            r.set_access_mode_raw(access_mode);
        })
    }

    /// Writes an MNVDA image that `fill` makes (header and data; zeroed before), for tools
    /// and tests; the device's answer comes back. Prefer [`NvConfig::set`].
    pub fn write_raw(
        &self,
        fill: impl FnOnce(&mut MnvdaReg<&mut [u8]>),
    ) -> Result<MnvdaReg<Vec<u8>>> {
        self.hca.write_reg::<Mnvda>(fill)
    }

    /// One setting's current, next and default values.
    pub fn query(&self, item: NvItem) -> Result<NvSetting> {
        let copies = self.copies(item.config_item())?;
        Ok(setting(item, &copies))
    }

    /// Every setting ([`NvItem::ALL`]), each item read once per copy.
    pub fn query_all(&self) -> Result<Vec<NvSetting>> {
        let mut read = Vec::new();
        for item in ConfigItem::ALL {
            read.push((item, self.copies(item)?));
        }
        let find = |c: ConfigItem| read.iter().find(|(i, _)| *i == c).map(|(_, copies)| copies);
        Ok(NvItem::ALL
            .into_iter()
            .filter_map(|item| find(item.config_item()).map(|copies| setting(item, copies)))
            .collect())
    }

    /// Writes `value` as the setting's next value: in force after the next reset, not now.
    /// The value is checked first (its kind; VF counts against the capability's
    /// `max_vfs_per_pf`); the device refuses read-only settings.
    pub fn set(&self, item: NvItem, value: u32) -> Result<NvSetOutcome> {
        let bad = |why: String| Error::InvalidArgument {
            what: item.name(),
            why,
        };
        item.parse(&value.to_string())?;
        if item.kind() == ValueKind::Count && item.writable() {
            let cap = self.read(ConfigItem::GlobalPciCap, NvAccessMode::Next)?;
            let d = cap.configuration_item_data();
            let c = d.global_pci_cap();
            if c.max_vfs_per_pf_valid() && value > u32::from(c.max_vfs_per_pf()) {
                return Err(bad(format!(
                    "{value} VFs, the device allows at most {} per PF",
                    c.max_vfs_per_pf()
                )));
            }
        }
        let config = item.config_item();
        let mut image = self.read(config, NvAccessMode::Next)?.into_inner();
        {
            let mut r = MnvdaReg::new_checked(&mut image[..])?;
            r.set_access_mode(NvAccessMode::Next);
            item.put(&mut r, value);
        }
        self.write_raw(|w| w.storage_mut().copy_from_slice(&image))?;
        let next = item.get(&self.read(config, NvAccessMode::Next)?);
        let current = item.get(&self.read(config, NvAccessMode::Current)?);
        if next != value {
            log::warn!("{}: wrote {value}, the device keeps {next}", item.name());
        }
        Ok(NvSetOutcome {
            item: item.name(),
            value,
            current,
            next,
            pending: next != current,
        })
    }

    /// `text` parsed for the setting called `name`, then [`NvConfig::set`].
    pub fn set_text(&self, name: &str, text: &str) -> Result<NvSetOutcome> {
        let item = NvItem::by_name(name)?;
        self.set(item, item.parse(text)?)
    }

    /// What MNVQC says of `item`.
    pub fn capability(&self, item: ConfigItem) -> Result<NvCapability> {
        self.capability_raw(item.type_word())
    }

    /// What MNVQC says of the item of type word `type_word`.
    pub fn capability_raw(&self, type_word: u32) -> Result<NvCapability> {
        let r = self.hca.read_reg::<Mnvqc>(|r| r.set_type(type_word))?;
        Ok(NvCapability {
            config_item: ConfigItem::ALL
                .into_iter()
                .find(|i| i.type_word() == type_word)
                .map(ConfigItem::name),
            type_word,
            readable: r.support_rd(),
            writable: r.support_wr(),
            version: r.version(),
        })
    }

    /// What MNVQC says of every [`ConfigItem`].
    pub fn capabilities(&self) -> Result<Vec<NvCapability>> {
        ConfigItem::ALL
            .into_iter()
            .map(|i| self.capability(i))
            .collect()
    }

    /// The item's current, next and default copies.
    fn copies(&self, item: ConfigItem) -> Result<[MnvdaReg<Vec<u8>>; 3]> {
        Ok([
            self.read(item, NvAccessMode::Current)?,
            self.read(item, NvAccessMode::Next)?,
            self.read(item, NvAccessMode::Default)?,
        ])
    }
}

/// A setting from its item's three copies (current, next, default).
fn setting(item: NvItem, copies: &[MnvdaReg<Vec<u8>>; 3]) -> NvSetting {
    let [current, next, default] = copies.each_ref().map(|c| item.get(c));
    NvSetting {
        item: item.name(),
        config_item: item.config_item().name(),
        current,
        next,
        default,
        pending: current != next,
        writable: item.writable(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_words_and_lengths_are_nv_params() {
        let words = ConfigItem::ALL.map(ConfigItem::type_word);
        assert_eq!(words, [0x80, 0x81, 0x10a, 0x0300_0080]);
        assert_eq!(
            ConfigItem::ALL.map(ConfigItem::length),
            [0xc, 0x10, 0x8, 0x10]
        );
    }

    #[test]
    fn values_parse_and_print_by_kind() {
        assert_eq!(NvItem::SriovEn.parse("True").unwrap(), 1);
        assert_eq!(NvItem::SriovEn.parse("off").unwrap(), 0);
        assert_eq!(NvItem::TotalVfs.parse("0x10").unwrap(), 16);
        assert_eq!(NvItem::CqeCompression.parse("aggressive").unwrap(), 1);
        assert_eq!(NvItem::CqeCompression.format(0), "balanced");
        assert_eq!(NvItem::PfTotalVfEn.format(1), "true");
        for (item, text) in [
            (NvItem::SriovEn, "2"),
            (NvItem::TotalVfs, "65536"),
            (NvItem::TotalVfs, "-1"),
            (NvItem::CqeCompression, "7"),
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
}
