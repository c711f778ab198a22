//! The configuration items the model has: which type word names each, its data size, whether
//! it may be written, and what a write may store in it.

use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use mlx5_prm::rt::View;
use mlx5_prm::{
    ConfigItemTypeAuto, NvGlobalItem, NvGlobalPciCap, NvGlobalPciConf, NvPerHostPfItem,
    NvPfPciConf, NvSwAccelerateConf, NvSwOffloadCap, NvSwOffloadConf, NvSwpL4CsumMode, NvTypeClass,
};

/// Most VFs one PF may have, as `nv_global_pci_cap.max_vfs_per_pf` reports it (a ConnectX-5
/// port function's limit).
pub const MAX_VFS_PER_PF: u16 = 127;

/// Bytes of the largest item data the model keeps (`nv_global_pci_cap`, `nv_pf_pci_conf`).
pub(super) const ITEM_MAX: usize = 16;

/// One item's data, zero-padded to [`ITEM_MAX`] bytes.
pub(super) type Data = [u8; ITEM_MAX];

/// A configuration item the model has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// `nv_global_pci_conf`: SR-IOV (and whether sub-functions are set per PF) on the adapter.
    GlobalPciConf,
    /// `nv_global_pci_cap`: what the adapter supports of SR-IOV (read only).
    GlobalPciCap,
    /// `nv_sw_offload_conf`: software offloads, CQE compression among them.
    SwOffloadConf,
    /// `nv_sw_offload_cap`: what the adapter supports of the software settings (read only).
    SwOffloadCap,
    /// `nv_sw_accelerate_conf`: software accelerations, the SWP L4 checksum mode.
    SwAccelerateConf,
    /// `nv_pf_pci_conf`: SR-IOV and sub-functions of this PF.
    PfPciConf,
}

impl Item {
    /// The item a type word names, if the model has it. A per-host-PF item must name PF 0 on
    /// bus 0 (the model's one function); any other class or index is not an item here.
    pub fn from_type_word(word: u32) -> Option<Item> {
        let bytes = word.to_be_bytes();
        let t = ConfigItemTypeAuto::new_unchecked(&bytes[..]);
        let g = t.configuration_item_type_class_global();
        match NvTypeClass::from_raw(g.type_class_raw().into())? {
            NvTypeClass::Global => match NvGlobalItem::from_raw(g.parameter_index_raw().into())? {
                NvGlobalItem::NvGlobalPciConf => Some(Item::GlobalPciConf),
                NvGlobalItem::NvGlobalPciCap => Some(Item::GlobalPciCap),
                NvGlobalItem::NvSwOffloadConfig => Some(Item::SwOffloadConf),
                NvGlobalItem::NvSwOffloadCap => Some(Item::SwOffloadCap),
                NvGlobalItem::NvSwAccelerateConf => Some(Item::SwAccelerateConf),
            },
            NvTypeClass::PerHostPf => {
                let p = t.configuration_item_type_class_per_host_pf();
                let this_pf = p.pf_index() == 0 && p.pci_bus_index() == 0;
                match NvPerHostPfItem::from_raw(p.parameter_index_raw().into())? {
                    NvPerHostPfItem::NvPfPciConf if this_pf => Some(Item::PfPciConf),
                    NvPerHostPfItem::NvPfPciConf => None,
                }
            }
        }
    }

    /// Bytes of the item's data: its layout's size, the `length` MNVDA must carry.
    pub fn size(self) -> usize {
        match self {
            Item::GlobalPciConf => NvGlobalPciConf::<&[u8]>::SIZE,
            Item::GlobalPciCap => NvGlobalPciCap::<&[u8]>::SIZE,
            Item::SwOffloadConf => NvSwOffloadConf::<&[u8]>::SIZE,
            Item::SwOffloadCap => NvSwOffloadCap::<&[u8]>::SIZE,
            Item::SwAccelerateConf => NvSwAccelerateConf::<&[u8]>::SIZE,
            Item::PfPciConf => NvPfPciConf::<&[u8]>::SIZE,
        }
    }

    /// Whether MNVDA may write the item (MNVQC support_wr): the capabilities are read only.
    pub fn writable(self) -> bool {
        !matches!(self, Item::GlobalPciCap | Item::SwOffloadCap)
    }
}

/// What a written item is checked against: the adapter's capabilities.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// `nv_sw_offload_cap.swp_l4_csum_mode_l4_only`.
    pub l4_only: bool,
}

/// `data` as `item` stores it: the named fields only (reserved bits dropped), each checked
/// against what the item can hold. `data` is at least [`ITEM_MAX`] bytes (the MNVDA image's
/// data area is 256).
pub(super) fn clean(item: Item, data: &[u8], limits: Limits) -> Outcome<Data> {
    let bad = Fail::bad_param(s::NV_BAD_VALUE);
    let src = data.get(..ITEM_MAX).ok_or(bad)?;
    let mut out = [0u8; ITEM_MAX];
    match item {
        Item::GlobalPciConf => {
            let i = NvGlobalPciConf::new_unchecked(src);
            ensure(i.total_vfs() <= MAX_VFS_PER_PF, bad)?;
            let mut o = NvGlobalPciConf::new_unchecked(&mut out[..]);
            o.set_sriov_valid(i.sriov_valid());
            o.set_per_pf_num_sf(i.per_pf_num_sf());
            o.set_per_pf_total_vf(i.per_pf_total_vf());
            o.set_sriov_en(i.sriov_en());
            o.set_total_vfs(i.total_vfs());
        }
        Item::PfPciConf => {
            // Sub-function counts have no limit in any item Linux reads; the 16 bits hold
            // whatever is written.
            let i = NvPfPciConf::new_unchecked(src);
            ensure(i.total_vf() <= MAX_VFS_PER_PF, bad)?;
            let mut o = NvPfPciConf::new_unchecked(&mut out[..]);
            o.set_log_sf_bar_size(i.log_sf_bar_size());
            o.set_pf_total_sf_en(i.pf_total_sf_en());
            o.set_pf_total_vf_en(i.pf_total_vf_en());
            o.set_total_sf(i.total_sf());
            o.set_total_vf(i.total_vf());
        }
        Item::SwOffloadConf => {
            // Only cqe_compression has a meaning the model checks; the other fields are kept
            // as written (the whole item is fields, no reserved bit but one).
            let i = NvSwOffloadConf::new_unchecked(src);
            ensure(i.cqe_compression().is_ok(), bad)?;
            let n = NvSwOffloadConf::<&[u8]>::SIZE;
            out[..n].copy_from_slice(&src[..n]);
            // Bit 30 of the second dword is reserved.
            out[4] &= !0x40;
        }
        Item::SwAccelerateConf => {
            // The reserved value 3 and l4_only without the capability are refused; default
            // (0) is accepted: it is what a reset to the factory value writes.
            let mode = NvSwAccelerateConf::new_unchecked(src)
                .swp_l4_csum_mode()
                .map_err(|_| bad)?;
            ensure(mode != NvSwpL4CsumMode::L4Only || limits.l4_only, bad)?;
            NvSwAccelerateConf::new_unchecked(&mut out[..]).set_swp_l4_csum_mode(mode);
        }
        Item::GlobalPciCap | Item::SwOffloadCap => {
            return Err(Fail::bad_param(s::NV_READ_ONLY_ITEM))
        }
    }
    Ok(out)
}
