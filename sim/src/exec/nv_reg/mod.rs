//! MNVDA and MNVQC: the adapter's non-volatile configuration (what `mlxconfig` and Linux's
//! permanent devlink parameters change).
//!
//! The model keeps, for each configuration item it has, three copies of the item's data: the
//! factory default, the current value (loaded at the last reset) and the next value (what the
//! next reset loads: the last one written, else the current one). An MNVDA read returns the
//! copy its `access_mode` names; a write replaces the next copy only, so a value written takes
//! effect at the next function or firmware reset ([`NvStore::after_reset`], called by the
//! device's resets), never at once. The store survives those resets but not the device: a new
//! device starts from the defaults, as a new adapter would.
//!
//! Items (type class, parameter index, as Linux's `lib/nv_param.c` numbers them; see
//! [`Item`]): `nv_global_pci_conf` (0, 0x80: SR-IOV for the adapter), `nv_global_pci_cap`
//! (0, 0x81: what the adapter supports; read only), `nv_sw_offload_conf` (0, 0x10a: CQE
//! compression among others), `nv_sw_offload_cap` (0, 0x10b: whether the SWP L4 checksum may
//! be l4_only; read only), `nv_sw_accelerate_conf` (0, 0x11d: the SWP L4 checksum mode) and
//! `nv_pf_pci_conf` (3, 0x80: SR-IOV and sub-functions of this PF; PF 0 on bus 0 only).
//! MNVQC answers for any type word: readable for those, writable for those but the two
//! capabilities, neither for the others. The read-only capabilities are the same in every
//! copy; `swp_l4_csum_mode_l4_only` is the device configuration's
//! [`Config::swp_l4_csum_l4_only`](crate::Config::swp_l4_csum_l4_only).
//!
//! Every check runs before anything changes: an item the model does not have, a `length`
//! other than the item's data size, a reserved access mode or a write that is not to the next
//! copy, a write to a read-only item, and a value the item cannot hold (more VFs than the
//! capability allows, a reserved CQE compression or checksum mode, l4_only on an adapter whose
//! capability lacks it) are refused with BAD_PARAM and their own syndrome. Reserved bits of
//! written data are dropped.

mod items;
#[cfg(test)]
mod tests;

pub use items::{Item, MAX_VFS_PER_PF};

use crate::config::Config;
use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use items::{clean, Data, Limits, ITEM_MAX};
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{
    MnvdaReg, MnvqcReg, NvAccessMode, NvCqeCompression, NvGlobalPciCap, NvGlobalPciConf,
    NvSwOffloadCap, NvSwOffloadConf,
};

/// The three copies of a writable item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Copies {
    default: Data,
    current: Data,
    next: Data,
}

impl Copies {
    fn new(default: Data) -> Copies {
        Copies {
            default,
            current: default,
            next: default,
        }
    }
}

/// The adapter's non-volatile configuration: what survives a reset, with what the next reset
/// will load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NvStore {
    global_pci_conf: Copies,
    sw_offload_conf: Copies,
    sw_accelerate_conf: Copies,
    pf_pci_conf: Copies,
    /// `nv_global_pci_cap`, the same in every copy.
    global_pci_cap: Data,
    /// `nv_sw_offload_cap`, the same in every copy.
    sw_offload_cap: Data,
}

impl Default for NvStore {
    /// The store of [`Config::default`]'s adapter.
    fn default() -> NvStore {
        NvStore::with_l4_only(true)
    }
}

impl NvStore {
    /// The store of a new adapter built from `config`: see [`NvStore::with_l4_only`].
    pub(crate) fn new(config: &Config) -> NvStore {
        NvStore::with_l4_only(config.swp_l4_csum_l4_only)
    }

    /// A new adapter: SR-IOV supported (per PF too, up to [`MAX_VFS_PER_PF`] VFs) but off, no
    /// VFs, no sub-functions, CQE compression balanced, the SWP L4 checksum mode `default`,
    /// and l4_only supported when `l4_only`.
    fn with_l4_only(l4_only: bool) -> NvStore {
        let mut cap = [0u8; ITEM_MAX];
        let mut c = NvGlobalPciCap::new_unchecked(&mut cap[..]);
        c.set_sriov_support(true);
        c.set_per_pf_total_vf_supported(true);
        c.set_max_vfs_per_pf_valid(true);
        c.set_max_vfs_per_pf(MAX_VFS_PER_PF);
        let mut sw_cap = [0u8; ITEM_MAX];
        NvSwOffloadCap::new_unchecked(&mut sw_cap[..]).set_swp_l4_csum_mode_l4_only(l4_only);
        let mut conf = [0u8; ITEM_MAX];
        NvGlobalPciConf::new_unchecked(&mut conf[..]).set_sriov_valid(true);
        let mut offload = [0u8; ITEM_MAX];
        NvSwOffloadConf::new_unchecked(&mut offload[..])
            .set_cqe_compression(NvCqeCompression::Balanced);
        NvStore {
            global_pci_conf: Copies::new(conf),
            sw_offload_conf: Copies::new(offload),
            // swp_l4_csum_mode default (0): all zero.
            sw_accelerate_conf: Copies::new([0; ITEM_MAX]),
            pf_pci_conf: Copies::new([0; ITEM_MAX]),
            global_pci_cap: cap,
            sw_offload_cap: sw_cap,
        }
    }

    /// The store a reset leaves: every next copy becomes the current one.
    pub(crate) fn after_reset(&self) -> NvStore {
        let mut nv = self.clone();
        for item in WRITABLE {
            if let Some(c) = nv.copies_mut(item) {
                c.current = c.next;
            }
        }
        nv
    }

    /// Whether a written value waits for a reset.
    #[cfg(test)]
    fn pending(&self) -> bool {
        WRITABLE
            .iter()
            .filter_map(|&i| self.copies(i))
            .any(|c| c.current != c.next)
    }

    /// What written values are checked against.
    fn limits(&self) -> Limits {
        Limits {
            l4_only: NvSwOffloadCap::new_unchecked(&self.sw_offload_cap[..])
                .swp_l4_csum_mode_l4_only(),
        }
    }

    fn copies(&self, item: Item) -> Option<&Copies> {
        match item {
            Item::GlobalPciConf => Some(&self.global_pci_conf),
            Item::SwOffloadConf => Some(&self.sw_offload_conf),
            Item::SwAccelerateConf => Some(&self.sw_accelerate_conf),
            Item::PfPciConf => Some(&self.pf_pci_conf),
            Item::GlobalPciCap | Item::SwOffloadCap => None,
        }
    }

    fn copies_mut(&mut self, item: Item) -> Option<&mut Copies> {
        match item {
            Item::GlobalPciConf => Some(&mut self.global_pci_conf),
            Item::SwOffloadConf => Some(&mut self.sw_offload_conf),
            Item::SwAccelerateConf => Some(&mut self.sw_accelerate_conf),
            Item::PfPciConf => Some(&mut self.pf_pci_conf),
            Item::GlobalPciCap | Item::SwOffloadCap => None,
        }
    }

    /// The copy `mode` names of `item` (a capability is the same in every copy).
    fn read(&self, item: Item, mode: NvAccessMode) -> Data {
        let Some(c) = self.copies(item) else {
            return match item {
                Item::SwOffloadCap => self.sw_offload_cap,
                _ => self.global_pci_cap,
            };
        };
        match mode {
            NvAccessMode::Next => c.next,
            NvAccessMode::Current => c.current,
            NvAccessMode::Default => c.default,
        }
    }
}

/// The items a write may change, in the order resets walk them.
const WRITABLE: [Item; 4] = [
    Item::GlobalPciConf,
    Item::SwOffloadConf,
    Item::SwAccelerateConf,
    Item::PfPciConf,
];

/// MNVDA: reads the copy `access_mode` names of the item `type` names, or (a write) makes the
/// image's data the item's next value. The answer carries the header as sent and the copy
/// read (after a write: the next value, as written).
pub(super) fn mnvda(nv: &mut NvStore, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = MnvdaReg::new_checked(image).map_err(|_| Fail::inp_len(s::REG_INPUT_SHORT))?;
    let mode = r
        .access_mode()
        .map_err(|_| Fail::bad_param(s::NV_BAD_ACCESS_MODE))?;
    let item = Item::from_type_word(r.r#type()).ok_or(Fail::bad_param(s::NV_UNKNOWN_ITEM))?;
    ensure(
        usize::from(r.length()) == item.size(),
        Fail::bad_param(s::NV_BAD_LENGTH),
    )?;
    if write {
        ensure(item.writable(), Fail::bad_param(s::NV_READ_ONLY_ITEM))?;
        ensure(
            mode == NvAccessMode::Next,
            Fail::bad_param(s::NV_BAD_ACCESS_MODE),
        )?;
        let at = MnvdaReg::CONFIGURATION_ITEM_DATA.bit_offset / 8;
        let data = r.storage().get(at..).unwrap_or_default();
        let clean = clean(item, data, nv.limits())?;
        if let Some(c) = nv.copies_mut(item) {
            c.next = clean;
        }
    }
    let copy = nv.read(item, mode);
    let mut data = r.configuration_item_data_mut();
    let area = data.storage_mut();
    area.fill(0);
    let n = item.size().min(ITEM_MAX).min(area.len());
    area[..n].copy_from_slice(&copy[..n]);
    Ok(())
}

/// MNVQC: whether the item `type` names exists and may be read or written; an item the model
/// does not have reads as neither.
pub(super) fn mnvqc(image: &mut [u8]) -> Outcome<()> {
    let mut r = MnvqcReg::new_checked(image).map_err(|_| Fail::inp_len(s::REG_INPUT_SHORT))?;
    let item = Item::from_type_word(r.r#type());
    r.set_support_rd(item.is_some());
    r.set_support_wr(item.is_some_and(Item::writable));
    r.set_version(0);
    Ok(())
}
