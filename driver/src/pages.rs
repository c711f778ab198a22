//! Firmware pages: 4 KiB pages of host memory the device borrows for its own use. The driver
//! gives them when asked (QUERY_PAGES at boot, init and regular stages, and page-request
//! events later), up to a limit, and takes every one back at teardown. A page the device has
//! not handed back is never freed: at teardown it goes to quarantine.

use crate::backend::{Backend, DmaAlloc, DmaBuf};
use crate::cmd::{CmdQueue, EventSink};
use crate::error::{Error, Result};
use mlx5_prm::cmd::{ManagePages, ManagePagesOpMod, QueryPages, QueryPagesOpMod};
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{ManagePagesOut, QueryPagesOut};
use std::collections::HashMap;

/// Firmware pages are 4 KiB whatever the host page size.
pub const PAGE: usize = 4096;
/// Pages per MANAGE_PAGES command (keeps each command's mailbox chain short).
const CHUNK: usize = 256;

/// The pages the device holds, by IO address.
pub struct Pages {
    given: HashMap<u64, DmaBuf>,
    /// Pages of a MANAGE_PAGES (give) that failed after the device saw it: a failure status
    /// or delivery status, a bad mailbox, no completion. The device may have taken them
    /// whatever it said, so they are not freed: one it hands back is freed then, the rest go
    /// to quarantine at teardown. They count against the limit, so a device that keeps
    /// failing cannot make the driver set memory aside without bound.
    disputed: HashMap<u64, DmaBuf>,
    /// Most pages the device may hold at once.
    limit: usize,
}

impl Pages {
    /// No pages given yet; the device may hold at most `limit`.
    pub fn new(limit: usize) -> Pages {
        Pages {
            given: HashMap::new(),
            disputed: HashMap::new(),
            limit,
        }
    }

    /// How many pages the device holds.
    pub fn held(&self) -> usize {
        self.given.len()
    }

    /// Most pages the device may hold.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Pages of failed gives the device may hold (see the field's docs).
    pub fn disputed(&self) -> usize {
        self.disputed.len()
    }

    /// Asks how many pages the device wants at `stage` and gives or takes them. Returns the
    /// signed count the device asked for.
    pub fn satisfy<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        stage: QueryPagesOpMod,
    ) -> Result<i32> {
        // SAFETY: a query.
        let out = unsafe { cmdq.run::<QueryPages, _, _>(be, stage, 0, 0, |_| Ok(())) }?;
        let n = QueryPagesOut::new_checked(&out[..])?.num_pages() as i32;
        self.apply(be, cmdq, None, n)?;
        Ok(n)
    }

    /// Gives `n` pages (positive) or takes `-n` back (negative), as a page request asks;
    /// command completions by event through `sink` when given.
    pub fn apply<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        mut sink: Option<EventSink<'_>>,
        n: i32,
    ) -> Result<()> {
        match n {
            n if n > 0 => self.give(be, cmdq, &mut sink, n.unsigned_abs() as usize),
            n if n < 0 => {
                // The device cannot return more than it holds.
                let n = (n.unsigned_abs() as usize).min(self.held());
                self.take(be, cmdq, &mut sink, n).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Tells firmware that `n` pages will not come (MANAGE_PAGES "cannot give"), so it stops
    /// waiting for them. Its own failure is logged: the caller reports the reason.
    fn refuse<B: Backend>(be: &B, cmdq: &mut CmdQueue, sink: &mut Option<EventSink<'_>>, n: usize) {
        let count = u32::try_from(n).unwrap_or(u32::MAX);
        // SAFETY: "cannot give" hands the device no memory.
        let r = unsafe {
            cmdq.run_with::<ManagePages, _, _>(
                be,
                sink.as_mut().map(EventSink::reborrow),
                ManagePagesOpMod::AllocFail,
                0,
                0,
                |i| {
                    i.set_input_num_entries(count);
                    Ok(())
                },
            )
        };
        if let Err(e) = r {
            log::warn!("telling the device {n} pages will not come: {e}");
        }
    }

    /// Allocates `n` pages and gives them to the device; beyond the limit, nothing is
    /// allocated and the request is refused.
    fn give<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        sink: &mut Option<EventSink<'_>>,
        n: usize,
    ) -> Result<()> {
        let lent = self.held() + self.disputed();
        if n > self.limit.saturating_sub(lent) {
            Self::refuse(be, cmdq, sink, n);
            return Err(Error::PageLimit {
                requested: n as u64,
                held: self.held(),
                limit: self.limit,
            });
        }
        let mut left = n;
        while left > 0 {
            let count = left.min(CHUNK);
            let mut batch = Vec::with_capacity(count);
            for _ in 0..count {
                match be.dma().alloc(PAGE, PAGE) {
                    Ok(p) => batch.push(p),
                    Err(e) => {
                        // The device never saw these: they are freed with the batch.
                        drop(batch);
                        Self::refuse(be, cmdq, sink, left);
                        return Err(e);
                    }
                }
            }
            let addrs: Vec<u64> = batch.iter().map(DmaBuf::iova).collect();
            // SAFETY: the pages given are `batch`, kept below in `given` (or `disputed` when
            // the device saw the command and failed it) until the device hands each back, and
            // quarantined if it never does; freed here only if the command never reached it.
            let result = unsafe {
                cmdq.run_with::<ManagePages, _, _>(
                    be,
                    sink.as_mut().map(EventSink::reborrow),
                    ManagePagesOpMod::Give,
                    count * 8,
                    0,
                    |i| {
                        i.set_input_num_entries(count as u32);
                        for (k, a) in addrs.iter().enumerate() {
                            i.set_pas(k, *a)?;
                        }
                        Ok(())
                    },
                )
            };
            match result {
                Ok(_) => {
                    for p in batch {
                        self.given.insert(p.iova(), p);
                    }
                }
                Err(e) if e.reached_device() => {
                    // The device may have taken them, whatever it said: not freed.
                    for p in batch {
                        self.disputed.insert(p.iova(), p);
                    }
                    return Err(e);
                }
                // The command never reached the device: freed with the batch.
                Err(e) => return Err(e),
            }
            left -= count;
        }
        Ok(())
    }

    /// Takes up to `n` pages back and frees them; returns how many came back. Addresses the
    /// device returns must be pages it was given.
    fn take<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        sink: &mut Option<EventSink<'_>>,
        n: usize,
    ) -> Result<usize> {
        let mut total = 0;
        while total < n {
            let ask = (n - total).min(CHUNK);
            // SAFETY: takes back pages this value gave (through the queue that gave them, as
            // `CmdQueue::new` requires); only the ones the device names are freed below.
            let out = unsafe {
                cmdq.run_with::<ManagePages, _, _>(
                    be,
                    sink.as_mut().map(EventSink::reborrow),
                    ManagePagesOpMod::Take,
                    0,
                    ask * 8,
                    |i| {
                        i.set_input_num_entries(ask as u32);
                        Ok(())
                    },
                )
            }?;
            let view = ManagePagesOut::new_checked(&out[..])?;
            let got = view.output_num_entries() as usize;
            if got > ask {
                return Err(Error::BadDeviceValue {
                    command: ManagePages::NAME,
                    what: format!("returned {got} pages where {ask} were asked for"),
                });
            }
            for k in 0..got {
                let addr = view.pas(k).unwrap_or(0);
                // A page the device returns is its own no more: freed (dropped).
                if self.given.remove(&addr).is_none() && self.disputed.remove(&addr).is_none() {
                    return Err(Error::BadDeviceValue {
                        command: ManagePages::NAME,
                        what: format!("returned page 0x{addr:x}, which it was never given"),
                    });
                }
            }
            total += got;
            if got == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// Takes back every page the device holds (teardown). Returns an error naming the pages
    /// still held if the device keeps any.
    pub fn reclaim_all<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        mut sink: Option<EventSink<'_>>,
    ) -> Result<()> {
        while self.held() > 0 {
            let held = self.held();
            if self.take(be, cmdq, &mut sink, held)? == 0 {
                return Err(Error::BadDeviceValue {
                    command: ManagePages::NAME,
                    what: format!("keeps {held} pages after teardown"),
                });
            }
        }
        // Pages of failed gives the device may hold: whatever comes back is freed; the
        // device need not have any (the rest are quarantined).
        while self.disputed() > 0 {
            if self.take(be, cmdq, &mut sink, self.disputed())? == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Quarantines every page the device still holds (it never confirmed giving them back).
    /// Returns how many there were.
    pub fn quarantine_all(&mut self) -> usize {
        let n = self.given.len() + self.disputed.len();
        for (_, p) in self.given.drain().chain(self.disputed.drain()) {
            p.quarantine();
        }
        n
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // Only teardown may decide a page is free; anything left was never returned.
        self.quarantine_all();
    }
}

/// The output size of QUERY_PAGES, checked at compile time against the generated layout.
const _: () = assert!(<QueryPagesOut<[u8; 16]> as View<[u8; 16]>>::SIZE == 16);
