//! The adapter's non-volatile configuration, as `mlxconfig` and Linux's permanent devlink
//! parameters (`lib/nv_param.c`: `enable_sriov`, `total_vfs`, `max_sfs`, `cqe_compress_type`,
//! `swp_l4_csum_mode`) see it:
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
//! type word): `sriov_en`, `total_vfs`, `per_pf_total_vf` and `per_pf_num_sf` of the global
//! PCI configuration; `pf_total_vf_en`, `pf_total_vf`, `pf_total_sf_en`, `pf_total_sf` and
//! `pf_log_sf_bar_size` of this PF's PCI configuration (devlink's `max_sfs` writes the last
//! three and `per_pf_num_sf`); `cqe_compression` of the software offload configuration;
//! `swp_l4_csum_mode` of the software accelerate configuration, named as devlink names its
//! values (`default`, `full_csum`, `l4_only`); and the read-only `sriov_support` and
//! `max_vfs_per_pf` of the global PCI capability and `swp_l4_csum_mode_l4_only` of the
//! software offload capability. A write goes as Linux's does: read the item's next copy,
//! change the one field (and mark the SR-IOV fields valid), write the whole item back.
//!
//! Errors: a value a setting cannot hold is refused before anything is written, with
//! [`Error::InvalidArgument`] naming the setting (`what: "total_vfs"`). Some checks read a
//! capability first ([`NvConfig::check`]): VF counts against `max_vfs_per_pf`, and
//! `swp_l4_csum_mode` `l4_only` against `swp_l4_csum_mode_l4_only`, as Linux's devlink
//! validation does; `default`, the mode's factory value, is refused as devlink refuses it and
//! written only by [`NvConfig::restore_default`]. What the device refuses (an item it does not
//! have, a bad length, a read-only item) comes back as [`Error::Register`] for register
//! `mnvda`, with the command's status and syndrome.
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

mod items;

pub use items::{ConfigItem, NvItem, ValueKind};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::Hca;
use mlx5_prm::reg::{Mnvda, Mnvqc};
use mlx5_prm::{MnvdaReg, NvAccessMode, NvSwpL4CsumMode};

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

    /// Checks that `value` may be written to `item`, sending nothing but reads of the
    /// capabilities it depends on: its kind; a VF count against the capability's
    /// `max_vfs_per_pf`; for `swp_l4_csum_mode`, not `default` (the factory value, which only
    /// [`NvConfig::restore_default`] writes, as Linux lets devlink set it only by a reset to
    /// the default) and `l4_only` only when `nv_sw_offload_cap.swp_l4_csum_mode_l4_only` says
    /// the adapter has it. Errors are [`Error::InvalidArgument`] naming the setting.
    pub fn check(&self, item: NvItem, value: u32) -> Result<()> {
        let bad = |why: String| Error::InvalidArgument {
            what: item.name(),
            why,
        };
        item.parse(&value.to_string())?;
        if item.is_vf_count() {
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
        if item == NvItem::SwpL4CsumMode {
            if value == u32::from(NvSwpL4CsumMode::Default.raw()) {
                return Err(bad(
                    "`default` is the factory value and cannot be set (set full_csum or \
                     l4_only, or restore the default)"
                        .into(),
                ));
            }
            let cap = || self.read(ConfigItem::SwOffloadCap, NvAccessMode::Next);
            if value == u32::from(NvSwpL4CsumMode::L4Only.raw())
                && NvItem::SwpL4CsumModeL4Only.get(&cap()?) == 0
            {
                return Err(bad("l4_only is not supported by this device \
                     (nv_sw_offload_cap.swp_l4_csum_mode_l4_only is clear)"
                    .into()));
            }
        }
        Ok(())
    }

    /// Writes `value` as the setting's next value: in force after the next reset, not now.
    /// The value is checked first ([`NvConfig::check`]); the device refuses read-only
    /// settings.
    pub fn set(&self, item: NvItem, value: u32) -> Result<NvSetOutcome> {
        self.check(item, value)?;
        self.write(item, value)
    }

    /// Writes the setting's factory default (its default copy) as its next value, as
    /// devlink's reset to the default does (for `swp_l4_csum_mode`, the one way to write
    /// `default`).
    pub fn restore_default(&self, item: NvItem) -> Result<NvSetOutcome> {
        let default = item.get(&self.read(item.config_item(), NvAccessMode::Default)?);
        self.write(item, default)
    }

    /// Reads the item's next copy, changes the one field, writes the whole item back and
    /// reads back what it holds now.
    fn write(&self, item: NvItem, value: u32) -> Result<NvSetOutcome> {
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
