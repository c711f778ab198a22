//! The one bound on what objects keep: every object's fixed size (the slot its table keeps
//! it in, see `table.rs`; a flow entry's place in its table) and what it keeps of a guest's
//! choosing: page lists (EQ, CQ, QP, SQ, RQ rings), mkey translation entries, RQT entry
//! lists, flow groups' compiled match criteria and flow entries' values and destinations.
//! Each list is at most what one command's input carries (a 65,536-block mailbox chain,
//! 32 MiB, and the guest may name one page many times), and the object counts are those of
//! the capabilities (2^24 CQs and mkeys, 2^20 flow groups): without a total, a guest could
//! make the host keep terabytes of lists, or gigabytes of small objects (2^24 mkeys of a few
//! hundred bytes each). Every object is charged to one model-wide budget when it is created
//! or changed and refunded when it is destroyed or changed again, or when the function is
//! torn down or reset; what would go past the budget is refused with LIM
//! ([`STORAGE_BUDGET_EXHAUSTED`](crate::syndrome::STORAGE_BUDGET_EXHAUSTED)), as firmware
//! refuses what its memory cannot hold.
use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;

/// Bytes all objects together may keep: 128 MiB. Linux's mlx5 (a few hundred objects of a
/// few hundred bytes each, rings of a few pages, a user memory region of 1 GiB has 2 MiB of
/// translations) and the project's driver and tests use a small fraction of it; a guest
/// filling it with the smallest objects (PDs, about 100 bytes each) gets about 1.3 million,
/// far below the capabilities' 2^24.
pub const STORAGE_BUDGET: u64 = 128 << 20;

/// What objects hold of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    limit: u64,
    used: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            limit: STORAGE_BUDGET,
            used: 0,
        }
    }
}

impl Budget {
    /// A budget of `limit` bytes (tests).
    #[cfg(test)]
    pub fn with_limit(limit: u64) -> Budget {
        Budget { limit, used: 0 }
    }

    /// Bytes objects hold now.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Takes `bytes` from the budget, or fails (LIM) leaving it as it was.
    pub fn charge(&mut self, bytes: u64) -> Outcome<()> {
        ensure(
            bytes <= self.limit - self.used,
            Fail::lim(s::STORAGE_BUDGET_EXHAUSTED),
        )?;
        self.used += bytes;
        Ok(())
    }

    /// Gives back `bytes` an object held (it was destroyed).
    pub fn refund(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
    }

    /// An object's storage changes from `old` to `new` bytes (a resize, a new list): fails
    /// (LIM) leaving the budget as it was if the new size does not fit once the old is given
    /// back.
    pub fn replace(&mut self, old: u64, new: u64) -> Outcome<()> {
        let rest = self.used.saturating_sub(old);
        ensure(
            new <= self.limit - rest,
            Fail::lim(s::STORAGE_BUDGET_EXHAUSTED),
        )?;
        self.used = rest + new;
        Ok(())
    }

    /// Every object is gone (teardown, function reset).
    pub fn clear(&mut self) {
        self.used = 0;
    }
}

/// An object kept in a table (`table.rs`), which charges its fixed size to the budget, and
/// the guest-sized storage it keeps besides.
pub(crate) trait Charged {
    /// Bytes of storage of the guest's choosing it keeps outside itself (none by default: a
    /// fixed-size object costs only its slot, which the table charges).
    fn charged(&self) -> u64 {
        0
    }
}

/// PDs, transport domains and UAR pages are handles with nothing behind them.
impl Charged for () {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_refunds_and_replacements() {
        let mut b = Budget {
            limit: 100,
            used: 0,
        };
        assert_eq!(b.charge(60), Ok(()));
        let full = b.charge(41).unwrap_err();
        assert_eq!(full.syndrome, s::STORAGE_BUDGET_EXHAUSTED);
        assert_eq!(b.used, 60, "a refused charge takes nothing");
        assert_eq!(b.replace(60, 101).unwrap_err(), full);
        assert_eq!(b.used, 60, "a refused replacement keeps the old size");
        assert_eq!(b.replace(60, 100), Ok(()));
        b.refund(30);
        assert_eq!(b.used, 70);
        b.refund(1000);
        assert_eq!(b.used, 0, "never below zero");
        b.charge(5).unwrap();
        b.clear();
        assert_eq!(b.used, 0);
    }
}
