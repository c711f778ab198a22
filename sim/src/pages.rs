//! Firmware pages: the 4 KiB pages of host memory the driver lends the device with
//! MANAGE_PAGES, and how many more the device wants at each stage.
//!
//! The device asks for `boot` pages before its capabilities are set, `init` pages before
//! INIT_HCA and `regular` pages for normal operation (QUERY_PAGES op_mod 1, 2, 3), and later
//! more or fewer through page-request events. Given pages satisfy the outstanding demands in
//! that order. QUERY_PAGES reports what is still outstanding, so it answers 0 once a stage's
//! pages are given; a negative regular demand means the device offers pages back.

use crate::dma::DMA_PAGE_SIZE;
use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use std::collections::HashSet;

/// The QUERY_PAGES stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Boot,
    Init,
    Regular,
}

/// Pages held and pages wanted.
#[derive(Debug)]
pub(crate) struct PagePool {
    config: (u32, u32, u32),
    boot: i64,
    init: i64,
    regular: i64,
    /// Held pages in the order they were given (TAKE returns the most recent first).
    held: Vec<u64>,
    set: HashSet<u64>,
}

impl PagePool {
    pub fn new(boot: u32, init: u32, regular: u32) -> PagePool {
        let mut p = PagePool {
            config: (boot, init, regular),
            boot: 0,
            init: 0,
            regular: 0,
            held: Vec::new(),
            set: HashSet::new(),
        };
        p.reset_demand();
        p
    }

    /// Demands of a freshly enabled function.
    pub fn reset_demand(&mut self) {
        self.boot = self.config.0.into();
        self.init = self.config.1.into();
        self.regular = self.config.2.into();
    }

    /// Outstanding demand of a stage, as QUERY_PAGES reports it.
    pub fn wanted(&self, stage: Stage) -> i32 {
        let n = match stage {
            Stage::Boot => self.boot,
            Stage::Init => self.init,
            Stage::Regular => self.regular,
        };
        n.clamp(i32::MIN.into(), i32::MAX.into()) as i32
    }

    /// True once the boot and init pages are given (INIT_HCA may run).
    pub fn ready_for_init(&self) -> bool {
        self.boot <= 0 && self.init <= 0
    }

    /// Number of pages held.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Takes `pages` after checking every one (all or nothing): 4 KiB aligned, mapped (per
    /// `mapped`), not already held and not listed twice.
    pub fn give(&mut self, pages: &[u64], mapped: impl Fn(u64) -> bool) -> Outcome<()> {
        let mut fresh = HashSet::with_capacity(pages.len());
        for &p in pages {
            ensure(
                p % DMA_PAGE_SIZE as u64 == 0,
                Fail::bad_param(s::PAGE_UNALIGNED),
            )?;
            ensure(mapped(p), Fail::bad_param(s::PAGE_UNMAPPED))?;
            ensure(
                !self.set.contains(&p) && fresh.insert(p),
                Fail::bad_param(s::PAGE_DOUBLE_GIVE),
            )?;
        }
        self.held.extend_from_slice(pages);
        self.set.extend(fresh);
        let mut n = pages.len() as i64;
        for demand in [&mut self.boot, &mut self.init, &mut self.regular] {
            let used = n.min((*demand).max(0));
            *demand -= used;
            n -= used;
        }
        Ok(())
    }

    /// Returns up to `n` held pages, most recently given first (all of them if fewer are
    /// held: a driver reclaims by asking for a batch until none come back).
    pub fn take(&mut self, n: usize) -> Vec<u64> {
        let n = n.min(self.held.len());
        let pages = self.held.split_off(self.held.len() - n);
        for p in &pages {
            self.set.remove(p);
        }
        let pages: Vec<u64> = pages.into_iter().rev().collect();
        // Taking pages the device offered back settles that offer.
        if self.regular < 0 {
            self.regular = (self.regular + n as i64).min(0);
        }
        pages
    }

    /// Lets go of every held page at once (a release-all page request): the driver frees
    /// them without MANAGE_PAGES. Returns how many there were.
    pub fn release_all(&mut self) -> usize {
        let n = self.held.len();
        self.held.clear();
        self.set.clear();
        // An offer to give pages back is settled by giving all of them back.
        self.regular = self.regular.max(0);
        n
    }

    /// The driver could not allocate `n` pages (MANAGE_PAGES op_mod 0): stop waiting for them.
    pub fn cannot_give(&mut self, n: u32) {
        for demand in [&mut self.boot, &mut self.init, &mut self.regular] {
            if *demand > 0 {
                *demand = (*demand - i64::from(n)).max(0);
                return;
            }
        }
    }

    /// A page-request event: the device wants `n` more pages (or offers `-n` back).
    pub fn request(&mut self, n: i32) {
        self.regular += i64::from(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demand_is_met_in_stage_order() {
        let mut p = PagePool::new(2, 1, 1);
        assert_eq!(p.wanted(Stage::Boot), 2);
        p.give(&[0x1000, 0x2000, 0x3000], |_| true).unwrap();
        assert_eq!(p.wanted(Stage::Boot), 0);
        assert_eq!(p.wanted(Stage::Init), 0);
        assert!(p.ready_for_init());
        assert_eq!(p.wanted(Stage::Regular), 1);
        assert_eq!(p.take(2), vec![0x3000, 0x2000]);
        assert_eq!(p.held(), 1);
        assert_eq!(p.take(2), vec![0x1000], "at most what is held");
        assert!(p.take(768).is_empty());
        p.give(&[0x5000, 0x6000], |_| true).unwrap();
        assert_eq!(p.release_all(), 2);
        assert_eq!(p.held(), 0);
        p.give(&[0x5000], |_| true).unwrap();
    }

    #[test]
    fn give_is_all_or_nothing() {
        let mut p = PagePool::new(0, 0, 0);
        p.give(&[0x1000], |_| true).unwrap();
        let e = p.give(&[0x2000, 0x1000], |_| true).unwrap_err();
        assert_eq!(e.syndrome, s::PAGE_DOUBLE_GIVE);
        assert_eq!(
            p.give(&[0x3000, 0x3000], |_| true).unwrap_err().syndrome,
            s::PAGE_DOUBLE_GIVE
        );
        assert_eq!(
            p.give(&[0x3001], |_| true).unwrap_err().syndrome,
            s::PAGE_UNALIGNED
        );
        assert_eq!(
            p.give(&[0x4000], |_| false).unwrap_err().syndrome,
            s::PAGE_UNMAPPED
        );
        assert_eq!(p.held(), 1);
    }
}
