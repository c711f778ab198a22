//! Firmware pages: 4 KiB pages of host memory the device borrows for its own use. The driver
//! gives them when asked (QUERY_PAGES at boot, init and regular stages, and page-request
//! events later) and takes every one back at teardown.

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
#[derive(Default)]
pub struct Pages {
    given: HashMap<u64, DmaBuf>,
}

impl Pages {
    /// How many pages the device holds.
    pub fn held(&self) -> usize {
        self.given.len()
    }

    /// Asks how many pages the device wants at `stage` and gives or takes them. Returns the
    /// signed count the device asked for.
    pub fn satisfy<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        stage: QueryPagesOpMod,
    ) -> Result<i32> {
        let out = cmdq.run::<QueryPages, _, _>(be, stage, 0, 0, |_| {})?;
        let n = QueryPagesOut::new_checked(&out[..])?.num_pages() as i32;
        self.apply(be, cmdq, n)?;
        Ok(n)
    }

    /// Gives `n` pages (positive) or takes `-n` back (negative), as a page request asks.
    pub fn apply<B: Backend>(&mut self, be: &B, cmdq: &mut CmdQueue, n: i32) -> Result<()> {
        self.apply_with(be, cmdq, None, n)
    }

    /// [`Pages::apply`], with command completions by event through `sink`.
    pub fn apply_with<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        mut sink: Option<EventSink<'_>>,
        n: i32,
    ) -> Result<()> {
        match n {
            n if n > 0 => self.give_with(be, cmdq, &mut sink, n as usize),
            n if n < 0 => self
                .take_with(be, cmdq, &mut sink, n.unsigned_abs() as usize)
                .map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Allocates `n` pages and gives them to the device.
    pub fn give<B: Backend>(&mut self, be: &B, cmdq: &mut CmdQueue, n: usize) -> Result<()> {
        self.give_with(be, cmdq, &mut None, n)
    }

    fn give_with<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        sink: &mut Option<EventSink<'_>>,
        n: usize,
    ) -> Result<()> {
        let mut left = n;
        while left > 0 {
            let count = left.min(CHUNK);
            let mut batch = Vec::with_capacity(count);
            for _ in 0..count {
                match be.dma().alloc(PAGE, PAGE) {
                    Ok(p) => batch.push(p),
                    Err(e) => {
                        for p in batch {
                            be.dma().free(p);
                        }
                        // Tell firmware the pages will not come, so it stops waiting for them.
                        let _ = cmdq.run_with::<ManagePages, _, _>(
                            be,
                            sink.as_mut().map(EventSink::reborrow),
                            ManagePagesOpMod::AllocFail,
                            0,
                            0,
                            |i| {
                                i.set_input_num_entries(count as u32);
                            },
                        );
                        return Err(e);
                    }
                }
            }
            let addrs: Vec<u64> = batch.iter().map(DmaBuf::iova).collect();
            let result = cmdq.run_with::<ManagePages, _, _>(
                be,
                sink.as_mut().map(EventSink::reborrow),
                ManagePagesOpMod::Give,
                count * 8,
                0,
                |i| {
                    i.set_input_num_entries(count as u32);
                    for (k, a) in addrs.iter().enumerate() {
                        let _ = i.set_pas(k, *a);
                    }
                },
            );
            match result {
                Ok(_) => {
                    for p in batch {
                        self.given.insert(p.iova(), p);
                    }
                }
                Err(e) => {
                    for p in batch {
                        be.dma().free(p);
                    }
                    return Err(e);
                }
            }
            left -= count;
        }
        Ok(())
    }

    /// Takes up to `n` pages back and frees them; returns how many came back. Addresses the
    /// device returns must be pages it was given.
    pub fn take<B: Backend>(&mut self, be: &B, cmdq: &mut CmdQueue, n: usize) -> Result<usize> {
        self.take_with(be, cmdq, &mut None, n)
    }

    fn take_with<B: Backend>(
        &mut self,
        be: &B,
        cmdq: &mut CmdQueue,
        sink: &mut Option<EventSink<'_>>,
        n: usize,
    ) -> Result<usize> {
        let mut total = 0;
        while total < n {
            let ask = (n - total).min(CHUNK);
            let out = cmdq.run_with::<ManagePages, _, _>(
                be,
                sink.as_mut().map(EventSink::reborrow),
                ManagePagesOpMod::Take,
                0,
                ask * 8,
                |i| {
                    i.set_input_num_entries(ask as u32);
                },
            )?;
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
                match self.given.remove(&addr) {
                    Some(p) => be.dma().free(p),
                    None => {
                        return Err(Error::BadDeviceValue {
                            command: ManagePages::NAME,
                            what: format!("returned page 0x{addr:x}, which it was never given"),
                        })
                    }
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
    pub fn reclaim_all<B: Backend>(&mut self, be: &B, cmdq: &mut CmdQueue) -> Result<()> {
        while self.held() > 0 {
            let held = self.held();
            if self.take(be, cmdq, held)? == 0 {
                return Err(Error::BadDeviceValue {
                    command: ManagePages::NAME,
                    what: format!("keeps {held} pages after teardown"),
                });
            }
        }
        Ok(())
    }

    /// Frees the host side of pages the device can no longer touch (after DISABLE_HCA, or
    /// when the device is gone). Returns how many there were.
    pub fn forget_all<B: Backend>(&mut self, be: &B) -> usize {
        let n = self.given.len();
        for (_, p) in self.given.drain() {
            be.dma().free(p);
        }
        n
    }
}

/// The output size of QUERY_PAGES, checked at compile time against the generated layout.
const _: () = assert!(<QueryPagesOut<[u8; 16]> as View<[u8; 16]>>::SIZE == 16);
