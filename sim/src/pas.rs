//! Page lists (PAS): the pages of a ring or buffer in DMA memory, as CREATE_EQ, CREATE_CQ,
//! CREATE_QP and the work-queue commands list them, and the checks the device applies to
//! them and to doorbell records.

use crate::budget::Charged;
use crate::dma::DmaSpace;
use crate::fail::{ensure, Fail, Outcome};

/// The syndromes one object kind reports for a bad page list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PasErrors {
    /// The input holds fewer page addresses than the buffer needs (BAD_INP_LEN).
    pub short: u32,
    /// A page is not aligned to the page size, or the page size is absurd (BAD_PARAM).
    pub unaligned: u32,
    /// A page is not mapped DMA memory (BAD_PARAM).
    pub unmapped: u32,
}

/// Largest page size a page list may use: 4 KiB << 18 = 1 GiB.
const MAX_LOG_PAGE: u8 = 18;

/// A validated page list: where each byte of a buffer lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PageList {
    pages: Vec<u64>,
    page_size: u64,
    /// log2 of `page_size`: ring accesses split addresses with shifts, not divisions (a
    /// division per access was a visible share of a CQE's cost).
    page_shift: u32,
    /// Offset of the buffer's first byte inside the first page.
    offset: u64,
    /// Buffer length in bytes.
    len: u64,
}

impl PageList {
    /// Checks that `pas` (the `count` addresses the input carries) covers a buffer of `len`
    /// bytes that starts `offset` bytes into pages of 4 KiB << `log_page_size`, every page
    /// aligned and mapped; extra addresses are ignored.
    pub fn new(
        dma: &DmaSpace,
        count: usize,
        pas: impl Iterator<Item = u64>,
        log_page_size: u8,
        offset: u64,
        len: u64,
        errors: PasErrors,
    ) -> Outcome<PageList> {
        ensure(
            log_page_size <= MAX_LOG_PAGE,
            Fail::bad_param(errors.unaligned),
        )?;
        let page_size = 4096u64 << log_page_size;
        let needed = offset
            .checked_add(len)
            .map(|end| end.div_ceil(page_size))
            .ok_or(Fail::bad_param(errors.unaligned))?;
        ensure(count as u64 >= needed, Fail::inp_len(errors.short))?;
        // `needed` is at most `count`, the addresses the input carries: exactly that many
        // slots, so the list takes what the budget is charged for.
        let mut pages = Vec::with_capacity(needed as usize);
        pages.extend(pas.take(needed as usize));
        for &p in &pages {
            ensure(p % page_size == 0, Fail::bad_param(errors.unaligned))?;
            ensure(
                usize::try_from(page_size).is_ok_and(|n| dma.is_mapped(p, n)),
                Fail::bad_param(errors.unmapped),
            )?;
        }
        Ok(PageList {
            pages,
            page_size,
            page_shift: page_size.trailing_zeros(),
            offset,
            len,
        })
    }

    /// IOVA of byte `at` of the buffer, if `at + n` stays inside the buffer and inside one
    /// page (the model accesses entries, which never straddle pages).
    pub fn addr(&self, at: u64, n: u64) -> Option<u64> {
        if at.checked_add(n)? > self.len {
            return None;
        }
        let pos = self.offset + at;
        let (page, within) = (pos >> self.page_shift, pos & (self.page_size - 1));
        if within + n > self.page_size {
            return None;
        }
        Some(self.pages.get(page as usize)? + within)
    }

    /// The page addresses.
    pub fn pages(&self) -> &[u64] {
        &self.pages
    }
}

impl Charged for PageList {
    /// The page addresses: as many as the ring needs, and the guest may name one page many
    /// times.
    fn charged(&self) -> u64 {
        (self.pages.len() * std::mem::size_of::<u64>()) as u64
    }
}

/// Checks a doorbell record address: `align`-byte aligned and `len` bytes mapped.
pub(crate) fn check_dbr(
    dma: &DmaSpace,
    addr: u64,
    len: usize,
    align: u64,
    syndrome: u32,
) -> Outcome<()> {
    ensure(
        addr % align == 0 && dma.is_mapped(addr, len),
        Fail::bad_param(syndrome),
    )
}
