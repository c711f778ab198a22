//! The teardown sequence: bring-up undone in reverse, memory freed only where the device is
//! known to be done with it.

use super::{seg, Hca};
use crate::backend::{Backend, DmaAlloc};
use crate::error::{Error, Result};
use mlx5_prm::cmd::*;
use mlx5_prm::*;

impl<B: Backend> Hca<B> {
    /// Undoes every completed step, in reverse. Keeps going past failures (reporting the
    /// first), so that as much as possible is released; frees only memory the device is
    /// known to be done with, and quarantines the rest.
    pub(super) fn down(&mut self) -> Result<()> {
        let be = &self.be;
        let ctl = self.ctl.get_mut().unwrap_or_else(|e| e.into_inner());
        if ctl.cmdq.is_none() {
            // Already down.
            return Ok(());
        }
        let healthy = seg(be.mmio()).health_syndrome_raw() == 0;
        let mut first: Option<Error> = None;
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                log::warn!("teardown: {e}");
                first.get_or_insert(e);
            }
        };
        let mut quiet = false;
        if !healthy {
            // Firmware reported a fatal error: no command completes any more.
            note(Err(Error::Health {
                syndrome: seg(be.mmio()).health_syndrome_raw(),
            }));
            if let Some(eq) = ctl.eq.take() {
                eq.abandon();
            }
        } else {
            let info = &self.info;
            // The teardown commands run with `&mut self`, so every resource that borrowed
            // the HCA is gone and nothing uses what they release; each releases what
            // bring-up made, once (`done` is cleared first); DISABLE_HCA comes last, after
            // every page was taken back or is quarantined.
            if std::mem::take(&mut ctl.done.td) {
                let td = info.transport_domain;
                // SAFETY: as the comment above says.
                let r = unsafe {
                    ctl.run::<DeallocTransportDomain, B>(be, 0, 0, 0, |i| {
                        i.set_transport_domain(td);
                        Ok(())
                    })
                };
                note(r.map(drop));
            }
            if std::mem::take(&mut ctl.done.pd) {
                let pd = info.pd;
                // SAFETY: as above.
                let r = unsafe {
                    ctl.run::<DeallocPd, B>(be, 0, 0, 0, |i| {
                        i.set_pd(pd);
                        Ok(())
                    })
                };
                note(r.map(drop));
            }
            if let Some(eq) = ctl.eq.take() {
                // On failure the ring is quarantined.
                match ctl.cmdq.as_mut() {
                    Some(cmdq) => note(eq.destroy(be, cmdq)),
                    None => eq.abandon(),
                }
            }
            if std::mem::take(&mut ctl.done.uar) {
                let uar = info.uar;
                // SAFETY: as above (the EQ that rang this UAR is gone).
                let r = unsafe {
                    ctl.run::<DeallocUar, B>(be, 0, 0, 0, |i| {
                        i.set_uar(uar);
                        Ok(())
                    })
                };
                note(r.map(drop));
            }
            if std::mem::take(&mut ctl.done.initialized) {
                // SAFETY: as above.
                let r = unsafe {
                    ctl.run::<TeardownHca, B>(be, 0, 0, 0, |i| {
                        i.set_profile(TeardownHcaProfile::GracefulClose);
                        Ok(())
                    })
                };
                note(r.map(drop));
            }
            if ctl.pages.held() + ctl.pages.disputed() > 0 {
                if let Some(cmdq) = ctl.cmdq.as_mut() {
                    note(ctl.pages.reclaim_all(be, cmdq, None));
                }
            }
            if std::mem::take(&mut ctl.done.enabled) {
                // SAFETY: as above.
                let r = unsafe { ctl.run::<DisableHca, B>(be, 0, 0, 0, |_| Ok(())) };
                quiet = r.is_ok();
                note(r.map(drop));
            } else {
                // Never enabled: the function did no DMA.
                quiet = true;
            }
        }
        // Pages the device did not give back stay out of reach, whatever DISABLE_HCA said.
        let kept = ctl.pages.quarantine_all();
        if kept > 0 {
            log::warn!("teardown: the device kept {kept} firmware pages; quarantined");
        }
        if let Some(cmdq) = ctl.cmdq.take() {
            // SAFETY: `quiet` only when DISABLE_HCA succeeded through this queue (or the
            // function was never enabled), and no command follows it.
            unsafe { cmdq.retire(quiet) };
        }
        let q = be.dma().quarantined();
        match first {
            Some(e) => {
                if q.buffers > 0 {
                    log::warn!(
                        "teardown: {} DMA buffers ({} bytes) quarantined",
                        q.buffers,
                        q.bytes
                    );
                }
                Err(Error::Teardown {
                    first: Box::new(e),
                    buffers: q.buffers,
                    bytes: q.bytes,
                })
            }
            None => Ok(()),
        }
    }
}
