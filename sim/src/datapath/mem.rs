//! Memory keys on the data path: turning an (lkey or rkey, address, length) triple into IOVA
//! extents after the checks the PRM puts on every access (the key exists and its tag matches,
//! same PD as the queue, the range inside the region, the access right), and moving bytes
//! between those extents and the model.
//!
//! Translation follows the key's access mode: PA uses addresses as IOVAs; MTT maps equal pages
//! of `1 << mkc.log_page_size` bytes (log in bytes, not relative to 4 KiB), entry i for the
//! i-th page counted from `start_addr` rounded down to the page size, the entry's low bits
//! (Linux puts read/write flags there) ignored. KLM and KSM keys are not modelled and refuse
//! every access. The reserved lkey ([`RESD_LKEY`]) is a PA key for local accesses of queues
//! whose context sets `rlky`.

use crate::dma::DmaSpace;
use crate::exec::handles::RESD_LKEY;
use crate::exec::mkey::Mkey;
use crate::model::Model;
use crate::stackvec::StackVec;
use crate::table::Table;

/// Every access an mkey grants separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Gather of a send (mkc.lr).
    LocalRead,
    /// Scatter of a receive or of a read response (mkc.lw).
    LocalWrite,
    /// Incoming RDMA read (mkc.rr).
    RemoteRead,
    /// Incoming RDMA write (mkc.rw).
    RemoteWrite,
    /// Incoming atomic (mkc.a).
    RemoteAtomic,
}

impl Access {
    fn local(self) -> bool {
        matches!(self, Access::LocalRead | Access::LocalWrite)
    }
}

/// A key check that failed (all map to one CQE syndrome; the variant is for debugging).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// No such key, a stale tag, a free key, or the reserved key where it is not allowed.
    Unknown,
    /// The key belongs to another PD.
    Pd,
    /// The range leaves the region.
    Range,
    /// The key does not grant the access.
    Rights,
    /// The access mode is not modelled (KLM, KSM, ...) or the page size is absurd.
    Mode,
    /// The range needs translation entries the key was not given.
    Translation,
}

/// A run of contiguous IOVAs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extent {
    pub iova: u64,
    pub len: u64,
}

/// The extents of one access: one for a PA key or a range inside one MTT page, so they are
/// kept inline (see [`StackVec`]).
pub(crate) type Extents = StackVec<Extent, 2>;

/// Who is accessing: the queue's PD and whether its context allows the reserved lkey.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accessor {
    pub pd: u32,
    pub rlky: bool,
}

/// Appends the extent `iova .. iova + len`, filled in place (see [`StackVec::push_slot`]).
fn push(out: &mut Extents, iova: u64, len: u64) {
    let e = out.push_slot();
    e.iova = iova;
    e.len = len;
}

/// Smallest MTT page the model accepts (log2 bytes).
const MIN_LOG_MTT_PAGE: u8 = 12;

/// Checks `key` for `access` of `len` bytes at `addr` and returns where they live. A zero
/// length needs no key at all (as for zero-length RDMA, whose key is not validated).
pub(crate) fn resolve(
    m: &Model,
    key: u32,
    who: Accessor,
    addr: u64,
    len: u64,
    access: Access,
) -> Result<Extents, KeyError> {
    let mut out = Extents::new();
    resolve_into(&m.mkeys, key, who, addr, len, access, &mut out)?;
    Ok(out)
}

/// Checks `key` for `access` of `len` bytes at `addr` as [`resolve`] does, without listing
/// the extents: a message of up to `log_max_msg` bytes through an MTT of 4 KiB pages would
/// list a quarter of a million of them. A region is one contiguous range and its
/// translation entries run from its first page on, so the range translates exactly when its
/// last page has an entry.
pub(crate) fn check(
    m: &Model,
    key: u32,
    who: Accessor,
    addr: u64,
    len: u64,
    access: Access,
) -> Result<(), KeyError> {
    match granted(&m.mkeys, key, who, addr, len, access)? {
        Some(mkey) if mkey.region.mode == 1 => {
            let c = &mkey.region;
            let (base, _) = mtt_geometry(c.start, c.log_page_size, addr)?;
            let last = (addr + (len - 1) - base) >> c.log_page_size;
            let entries = mkey.translations.len() as u64 / 8;
            if last < entries {
                Ok(())
            } else {
                Err(KeyError::Translation)
            }
        }
        Some(mkey) if mkey.region.mode != 0 => Err(KeyError::Mode),
        _ => Ok(()),
    }
}

/// The checks of every access but translation: `None` when there is nothing to translate
/// (an empty range, or the reserved lkey, whose addresses are IOVAs), else the key granting
/// the access.
fn granted(
    mkeys: &Table<Mkey>,
    key: u32,
    who: Accessor,
    addr: u64,
    len: u64,
    access: Access,
) -> Result<Option<&Mkey>, KeyError> {
    if len == 0 {
        return Ok(None);
    }
    let end = addr.checked_add(len).ok_or(KeyError::Range)?;
    if key == RESD_LKEY {
        return if access.local() && who.rlky {
            Ok(None)
        } else {
            Err(KeyError::Unknown)
        };
    }
    let mkey = mkeys.get(key >> 8).map_err(|_| KeyError::Unknown)?;
    let c = &mkey.region;
    if c.tag != (key & 0xff) as u8 || c.free {
        return Err(KeyError::Unknown);
    }
    if c.pd != who.pd {
        return Err(KeyError::Pd);
    }
    if !c.length64 {
        let limit = c.start.checked_add(c.len).ok_or(KeyError::Range)?;
        if addr < c.start || end > limit {
            return Err(KeyError::Range);
        }
    }
    let granted = match access {
        Access::LocalRead => c.lr,
        Access::LocalWrite => c.lw,
        Access::RemoteRead => c.rr,
        Access::RemoteWrite => c.rw,
        Access::RemoteAtomic => c.a,
    };
    if !granted {
        return Err(KeyError::Rights);
    }
    Ok(Some(mkey))
}

/// An MTT's first page (the region's start rounded down to its page size) and `addr`'s
/// offset from it; the page size must be one the model takes.
fn mtt_geometry(start: u64, log_page: u8, addr: u64) -> Result<(u64, u64), KeyError> {
    if !(MIN_LOG_MTT_PAGE..=40).contains(&log_page) {
        return Err(KeyError::Mode);
    }
    let base = start & !((1u64 << log_page) - 1);
    let offset = addr.checked_sub(base).ok_or(KeyError::Range)?;
    Ok((base, offset))
}

/// [`resolve`] through the key table `mkeys`, appending the extents to `out` (the data path's
/// lists stay where they are: moving them around by value cost more than filling them).
pub(crate) fn resolve_into(
    mkeys: &Table<Mkey>,
    key: u32,
    who: Accessor,
    addr: u64,
    len: u64,
    access: Access,
    out: &mut Extents,
) -> Result<(), KeyError> {
    let Some(mkey) = granted(mkeys, key, who, addr, len, access)? else {
        if len > 0 {
            push(out, addr, len);
        }
        return Ok(());
    };
    let c = &mkey.region;
    match c.mode {
        0 => {
            push(out, addr, len);
            Ok(())
        }
        1 => mtt(&mkey.translations, c.start, c.log_page_size, addr, len, out),
        _ => Err(KeyError::Mode),
    }
}

/// Translates through an MTT whose entry i maps page i of the region, appending to `out`
/// (a run that continues the previous extent extends it).
fn mtt(
    table: &[u8],
    start: u64,
    log_page: u8,
    addr: u64,
    len: u64,
    out: &mut Extents,
) -> Result<(), KeyError> {
    let (_, mut offset) = mtt_geometry(start, log_page, addr)?;
    let page = 1u64 << log_page;
    let mut left = len;
    while left > 0 {
        let index = usize::try_from(offset >> log_page).map_err(|_| KeyError::Translation)?;
        let at = index.checked_mul(8).ok_or(KeyError::Translation)?;
        let entry = table
            .get(at..at + 8)
            .ok_or(KeyError::Translation)?
            .try_into()
            .map(u64::from_be_bytes)
            .map_err(|_| KeyError::Translation)?;
        let within = offset & (page - 1);
        let n = left.min(page - within);
        let iova = (entry & !(page - 1)) + within;
        match out.last_mut() {
            Some(last) if last.iova.checked_add(last.len) == Some(iova) => last.len += n,
            _ => push(out, iova, n),
        }
        offset += n;
        left -= n;
    }
    Ok(())
}

/// Bytes per DMA access: accesses never cross a 4 KiB boundary (regions are whole pages).
const CHUNK: u64 = 4096;

/// The length of an extent that lies inside one 4 KiB page (the common case, copied without
/// splitting into chunks).
fn in_one_page(e: &Extent) -> Option<usize> {
    let room = CHUNK - e.iova % CHUNK;
    (e.len <= room).then_some(e.len as usize)
}

/// The pieces of `extents`, each inside one 4 KiB page: (iova, length).
fn chunks(extents: &[Extent]) -> impl Iterator<Item = (u64, usize)> + '_ {
    extents.iter().flat_map(|e| {
        let mut at = e.iova;
        let end = e.iova.saturating_add(e.len);
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let n = (CHUNK - at % CHUNK).min(end - at);
            let piece = (at, n as usize);
            at += n;
            Some(piece)
        })
    })
}

/// Appends the bytes of `extents` to `out`; false (and `out` partly filled) when a byte is not
/// mapped.
pub(crate) fn read(dma: &DmaSpace, extents: &[Extent], out: &mut Vec<u8>) -> bool {
    if let [e] = extents {
        if let Some(n) = in_one_page(e) {
            return dma.append(e.iova, n, out);
        }
    }
    for (iova, n) in chunks(extents) {
        let at = out.len();
        out.resize(at + n, 0);
        if !dma.read_dev(iova, &mut out[at..]) {
            return false;
        }
    }
    true
}

/// Writes `data` over `extents` (which must cover at least `data.len()` bytes); false without
/// writing anything when a byte is not mapped.
pub(crate) fn write(dma: &DmaSpace, extents: &[Extent], data: &[u8]) -> bool {
    if let Some(e) = extents.first() {
        if in_one_page(e).is_some_and(|n| n >= data.len()) {
            return dma.write_dev(e.iova, data);
        }
    }
    let pieces = || {
        let mut left = data.len();
        chunks(extents).map_while(move |(iova, n)| {
            let n = n.min(left);
            left -= n;
            (n > 0).then_some((iova, n))
        })
    };
    // One piece is written whole or not at all anyway; several are all checked first.
    if pieces().nth(1).is_some() && !pieces().all(|(iova, n)| dma.is_mapped(iova, n)) {
        return false;
    }
    let mut at = 0;
    for (iova, n) in pieces() {
        if !dma.write_dev(iova, &data[at..at + n]) {
            return false;
        }
        at += n;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtt_pages_follow_the_table() {
        let mut table = Vec::new();
        for page in [0x5000u64 | 3, 0x9000, 0x2000] {
            table.extend_from_slice(&page.to_be_bytes());
        }
        // Region starting 0x100 into a 4 KiB page.
        let mut e = Extents::new();
        mtt(&table, 0x7000_0100, 12, 0x7000_0f00, 0x1200, &mut e).unwrap();
        assert_eq!(
            &e[..],
            &[
                Extent {
                    iova: 0x5f00,
                    len: 0x100
                },
                Extent {
                    iova: 0x9000,
                    len: 0x1000
                },
                Extent {
                    iova: 0x2000,
                    len: 0x100
                },
            ]
        );
        assert_eq!(
            mtt(
                &table,
                0x7000_0000,
                12,
                0x7000_2f00,
                0x200,
                &mut Extents::new()
            ),
            Err(KeyError::Translation)
        );
        assert_eq!(
            mtt(&table, 0, 3, 0, 8, &mut Extents::new()),
            Err(KeyError::Mode)
        );
    }

    #[test]
    fn chunks_stop_at_page_boundaries() {
        let e = [Extent {
            iova: 0xff0,
            len: 0x1020,
        }];
        let c: Vec<_> = chunks(&e).collect();
        assert_eq!(c, vec![(0xff0, 0x10), (0x1000, 0x1000), (0x2000, 0x10)]);
    }
}
