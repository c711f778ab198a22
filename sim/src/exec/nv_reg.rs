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
//! Items (type class, parameter index, as Linux's `lib/nv_param.c` numbers them):
//! `nv_global_pci_conf` (0, 0x80: SR-IOV for the adapter), `nv_global_pci_cap` (0, 0x81: what
//! the adapter supports; read only), `nv_sw_offload_conf` (0, 0x10a: CQE compression among
//! others) and `nv_pf_pci_conf` (3, 0x80: SR-IOV of this PF; PF 0 on bus 0 only). MNVQC
//! answers for any type word: readable and writable for those, neither for the others.
//!
//! Every check runs before anything changes: an item the model does not have, a `length`
//! other than the item's data size, a reserved access mode or a write that is not to the next
//! copy, a write to a read-only item, and a value the item cannot hold are refused with
//! BAD_PARAM and their own syndrome. Reserved bits of written data are dropped.

use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use mlx5_prm::rt::{Bytes as _, View};
use mlx5_prm::{
    ConfigItemTypeAuto, MnvdaReg, MnvqcReg, NvAccessMode, NvCqeCompression, NvGlobalItem,
    NvGlobalPciCap, NvGlobalPciConf, NvPerHostPfItem, NvPfPciConf, NvSwOffloadConf, NvTypeClass,
};

/// Most VFs one PF may have, as `nv_global_pci_cap.max_vfs_per_pf` reports it (a ConnectX-5
/// port function's limit).
pub const MAX_VFS_PER_PF: u16 = 127;

/// Bytes of the largest item data the model keeps (`nv_global_pci_cap`, `nv_pf_pci_conf`).
const ITEM_MAX: usize = 16;

/// One item's data, zero-padded to [`ITEM_MAX`] bytes.
type Data = [u8; ITEM_MAX];

/// A configuration item the model has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// `nv_global_pci_conf`: SR-IOV on the adapter.
    GlobalPciConf,
    /// `nv_global_pci_cap`: what the adapter supports of SR-IOV (read only).
    GlobalPciCap,
    /// `nv_sw_offload_conf`: software offloads, CQE compression among them.
    SwOffloadConf,
    /// `nv_pf_pci_conf`: SR-IOV of this PF.
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
            Item::PfPciConf => NvPfPciConf::<&[u8]>::SIZE,
        }
    }

    /// Whether MNVDA may write the item (MNVQC support_wr).
    pub fn writable(self) -> bool {
        self != Item::GlobalPciCap
    }
}

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
    pf_pci_conf: Copies,
    /// `nv_global_pci_cap`, the same in every copy.
    cap: Data,
}

impl Default for NvStore {
    /// A new adapter: SR-IOV supported (per PF too, up to [`MAX_VFS_PER_PF`] VFs) but off, no
    /// VFs, CQE compression balanced.
    fn default() -> NvStore {
        let mut cap = [0u8; ITEM_MAX];
        let mut c = NvGlobalPciCap::new_unchecked(&mut cap[..]);
        c.set_sriov_support(true);
        c.set_per_pf_total_vf_supported(true);
        c.set_max_vfs_per_pf_valid(true);
        c.set_max_vfs_per_pf(MAX_VFS_PER_PF);
        let mut conf = [0u8; ITEM_MAX];
        NvGlobalPciConf::new_unchecked(&mut conf[..]).set_sriov_valid(true);
        let mut offload = [0u8; ITEM_MAX];
        NvSwOffloadConf::new_unchecked(&mut offload[..])
            .set_cqe_compression(NvCqeCompression::Balanced);
        NvStore {
            global_pci_conf: Copies::new(conf),
            sw_offload_conf: Copies::new(offload),
            pf_pci_conf: Copies::new([0; ITEM_MAX]),
            cap,
        }
    }
}

impl NvStore {
    /// The store a reset leaves: every next copy becomes the current one.
    pub(crate) fn after_reset(&self) -> NvStore {
        let mut nv = self.clone();
        for c in nv.writable_mut() {
            c.current = c.next;
        }
        nv
    }

    /// Whether a written value waits for a reset.
    #[cfg(test)]
    fn pending(&self) -> bool {
        [
            &self.global_pci_conf,
            &self.sw_offload_conf,
            &self.pf_pci_conf,
        ]
        .iter()
        .any(|c| c.current != c.next)
    }

    fn writable_mut(&mut self) -> [&mut Copies; 3] {
        [
            &mut self.global_pci_conf,
            &mut self.sw_offload_conf,
            &mut self.pf_pci_conf,
        ]
    }

    fn copies(&self, item: Item) -> Option<&Copies> {
        match item {
            Item::GlobalPciConf => Some(&self.global_pci_conf),
            Item::SwOffloadConf => Some(&self.sw_offload_conf),
            Item::PfPciConf => Some(&self.pf_pci_conf),
            Item::GlobalPciCap => None,
        }
    }

    /// The copy `mode` names of `item`.
    fn read(&self, item: Item, mode: NvAccessMode) -> Data {
        match (self.copies(item), mode) {
            (None, _) => self.cap,
            (Some(c), NvAccessMode::Next) => c.next,
            (Some(c), NvAccessMode::Current) => c.current,
            (Some(c), NvAccessMode::Default) => c.default,
        }
    }
}

/// `data` as `item` stores it: the named fields only (reserved bits dropped), each checked
/// against what the item can hold. `data` is at least [`ITEM_MAX`] bytes (the MNVDA image's
/// data area is 256).
fn clean(item: Item, data: &[u8]) -> Outcome<Data> {
    let bad = Fail::bad_param(s::NV_BAD_VALUE);
    let src = data.get(..ITEM_MAX).ok_or(bad)?;
    let mut out = [0u8; ITEM_MAX];
    match item {
        Item::GlobalPciConf => {
            let i = NvGlobalPciConf::new_unchecked(src);
            ensure(i.total_vfs() <= MAX_VFS_PER_PF, bad)?;
            let mut o = NvGlobalPciConf::new_unchecked(&mut out[..]);
            o.set_sriov_valid(i.sriov_valid());
            o.set_per_pf_total_vf(i.per_pf_total_vf());
            o.set_sriov_en(i.sriov_en());
            o.set_total_vfs(i.total_vfs());
        }
        Item::PfPciConf => {
            let i = NvPfPciConf::new_unchecked(src);
            ensure(i.total_vf() <= MAX_VFS_PER_PF, bad)?;
            let mut o = NvPfPciConf::new_unchecked(&mut out[..]);
            o.set_pf_total_vf_en(i.pf_total_vf_en());
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
        Item::GlobalPciCap => return Err(Fail::bad_param(s::NV_READ_ONLY_ITEM)),
    }
    Ok(out)
}

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
        let clean = clean(item, data)?;
        if let Some(c) = match item {
            Item::GlobalPciConf => Some(&mut nv.global_pci_conf),
            Item::SwOffloadConf => Some(&mut nv.sw_offload_conf),
            Item::PfPciConf => Some(&mut nv.pf_pci_conf),
            Item::GlobalPciCap => None,
        } {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mlx5_prm::{
        CmdStatus, ConfigurationItemTypeClassGlobal, ConfigurationItemTypeClassPerHostPf,
    };

    impl Item {
        /// Every item, in the order the tests list them.
        pub const ALL: [Item; 4] = [
            Item::GlobalPciConf,
            Item::GlobalPciCap,
            Item::SwOffloadConf,
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
            [0xc, 0x10, 0x8, 0x10],
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

    #[test]
    fn mnvqc_lists_what_exists() {
        for (word, rd, wr) in [
            (Item::GlobalPciConf.type_word(), true, true),
            (Item::GlobalPciCap.type_word(), true, false),
            (Item::SwOffloadConf.type_word(), true, true),
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
            let item = Item::ALL[(x % 4) as usize];
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
}
