//! One small generic table for every kind of device object (UARs, PDs, EQs, CQs, QPs, ...):
//! it hands out handles, enforces the object count limit, and counts references so that an
//! object still in use cannot be destroyed.
//!
//! Objects live in a vector indexed by handle − first (handles are handed out in sequence,
//! so it is dense), boxed so that a slot costs a pointer; an ordered set of the live handles
//! keeps iteration in handle order and proportional to the objects that exist. The data path
//! looks objects up several times per frame, and an index is much cheaper than a search.
//!
//! Handles are handed out next-fit, and numbering wraps back to `first` not only at `last`
//! but once it is [`MIN_SPAN`] or four times the live objects past `first`, whichever is more:
//! a guest that creates and destroys objects forever (while one long-lived object pins the
//! low end) would otherwise grow the vector towards the whole handle range (16 M slots).
//!
//! Every object a table keeps is charged to the model's storage budget (`budget`): its fixed
//! cost ([`Table::cost`]: the boxed slot and the table's bookkeeping for it) plus what it
//! keeps of the guest's choosing ([`Charged`]). The count limits are the capabilities'
//! (2^24 CQs and mkeys): without the fixed cost, a guest creating that many small objects
//! would make the host keep gigabytes. Inserting and removing go only through the budget.

use crate::budget::{Budget, Charged};
use crate::fail::{Fail, Outcome};
use std::collections::BTreeSet;

/// The syndromes a table reports, one set per object kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableErrors {
    /// The handle names no object (BAD_RES).
    pub unknown: u32,
    /// The object is still referenced (RES_BUSY).
    pub busy: u32,
    /// Creating one more would exceed the limit (LIM).
    pub limit: u32,
}

/// Handles numbering always may use before wrapping (see the module doc).
pub(crate) const MIN_SPAN: u64 = 4096;

/// What keeping one object costs the host besides the object's own slot (see
/// [`Table::cost`]): the allocator's header of its box (16 bytes), its share of the slot
/// vector (numbering keeps at most four slots per live object past [`MIN_SPAN`], and the
/// vector's spare capacity may double that: eight pointers, 64 bytes) and of the ordered set
/// of live handles (a B-tree node of up to 11 handles, at least 5 in use: 16 bytes).
pub(crate) const SLOT_OVERHEAD: u64 = 96;

#[derive(Debug)]
struct Slot<T> {
    value: T,
    refs: u32,
}

/// Objects of one kind by handle.
#[derive(Debug)]
pub(crate) struct Table<T> {
    first: u32,
    last: u32,
    next: u32,
    errors: TableErrors,
    /// Slot of handle h at h - first.
    slots: Vec<Option<Box<Slot<T>>>>,
    /// The handles in use, in order.
    live: BTreeSet<u32>,
}

impl<T> Table<T> {
    /// A table handing out handles `first ..= last`, next-fit from `first`, so handles are
    /// deterministic and a freed one is reused only after the range wraps.
    pub fn new(first: u32, last: u32, errors: TableErrors) -> Table<T> {
        Table {
            first,
            last,
            next: first,
            errors,
            slots: Vec::new(),
            live: BTreeSet::new(),
        }
    }

    /// Stores `value` under a new handle, if fewer than `limit` objects exist (uncharged:
    /// [`Table::insert_charged`] is the way in).
    fn insert(&mut self, value: T, limit: u64) -> Outcome<u32> {
        if self.live.len() as u64 >= limit {
            return Err(Fail::lim(self.errors.limit));
        }
        let live = self.live.len() as u64;
        // The window numbering uses now: more than `live + 1` handles, so the `live + 1`
        // consecutive ones tried below hold a free one unless the whole range is full.
        let span = (u64::from(self.last - self.first) + 1).min(MIN_SPAN.max(4 * (live + 1)));
        for _ in 0..span.min(live + 1) {
            let mut h = self.next;
            if u64::from(h - self.first) >= span {
                h = self.first;
            }
            self.next = if h == self.last || u64::from(h - self.first) + 1 >= span {
                self.first
            } else {
                h + 1
            };
            if !self.contains(h) {
                let i = (h - self.first) as usize;
                if self.slots.len() <= i {
                    self.slots.resize_with(i + 1, || None);
                }
                self.slots[i] = Some(Box::new(Slot { value, refs: 0 }));
                self.live.insert(h);
                return Ok(h);
            }
        }
        Err(Fail::lim(self.errors.limit))
    }

    fn slot(&self, h: u32) -> Option<&Slot<T>> {
        let i = h.checked_sub(self.first)? as usize;
        self.slots.get(i)?.as_deref()
    }

    fn slot_mut(&mut self, h: u32) -> Option<&mut Slot<T>> {
        let i = h.checked_sub(self.first)? as usize;
        self.slots.get_mut(i)?.as_deref_mut()
    }

    /// The object `h`.
    #[inline]
    pub fn get(&self, h: u32) -> Outcome<&T> {
        match self.slot(h) {
            Some(s) => Ok(&s.value),
            None => Err(Fail::bad_res(self.errors.unknown)),
        }
    }

    /// The object `h`, mutably.
    #[inline]
    pub fn get_mut(&mut self, h: u32) -> Outcome<&mut T> {
        let unknown = self.errors.unknown;
        match self.slot_mut(h) {
            Some(s) => Ok(&mut s.value),
            None => Err(Fail::bad_res(unknown)),
        }
    }

    /// Fails with `syndrome` (BAD_RES) unless `h` exists: for references from other objects,
    /// which report the referring object's syndrome.
    pub fn check(&self, h: u32, syndrome: u32) -> Outcome<()> {
        if self.contains(h) {
            Ok(())
        } else {
            Err(Fail::bad_res(syndrome))
        }
    }

    /// True when `h` exists.
    pub fn contains(&self, h: u32) -> bool {
        self.slot(h).is_some()
    }

    /// Bytes keeping `value` costs: its slot (the object and its reference count), the
    /// table's bookkeeping for it ([`SLOT_OVERHEAD`]) and its guest-sized storage.
    pub fn cost(value: &T) -> u64
    where
        T: Charged,
    {
        std::mem::size_of::<Slot<T>>() as u64 + SLOT_OVERHEAD + value.charged()
    }

    /// Stores `value` under a new handle, charging its [`Table::cost`] to `budget`: the count
    /// limit is checked first, then the budget (LIM, nothing changed), and the charge is
    /// given back if the insert still fails.
    pub fn insert_charged(&mut self, value: T, limit: u64, budget: &mut Budget) -> Outcome<u32>
    where
        T: Charged,
    {
        if self.live.len() as u64 >= limit {
            return Err(Fail::lim(self.errors.limit));
        }
        let bytes = Self::cost(&value);
        budget.charge(bytes)?;
        self.insert(value, limit)
            .inspect_err(|_| budget.refund(bytes))
    }

    /// Removes `h` as [`Table::remove`] does, refunding its [`Table::cost`] to `budget`.
    pub fn remove_charged(&mut self, h: u32, budget: &mut Budget) -> Outcome<T>
    where
        T: Charged,
    {
        let value = self.remove(h)?;
        budget.refund(Self::cost(&value));
        Ok(value)
    }

    /// Counts one more reference to `h` (which must exist). The count saturates rather than
    /// wrap (a wrapped count would let an object in use be destroyed): at `u32::MAX` it is
    /// no longer exact, so it stays there and the object lives until teardown. Every kind of
    /// referring object is bounded well below that, and a list that holds one object many
    /// times checks [`Table::can_hold`] first.
    pub fn hold(&mut self, h: u32) {
        if let Some(s) = self.slot_mut(h) {
            s.refs = s.refs.saturating_add(1);
        }
    }

    /// Whether `h` exists and can take `n` more references without its count saturating.
    pub fn can_hold(&self, h: u32, n: u64) -> bool {
        self.slot(h)
            .is_some_and(|s| u64::from(s.refs) + n < u64::from(u32::MAX))
    }

    /// Drops one reference to `h` (none from a saturated count, see [`Table::hold`]).
    pub fn release(&mut self, h: u32) {
        if let Some(s) = self.slot_mut(h) {
            if s.refs != u32::MAX {
                s.refs = s.refs.saturating_sub(1);
            }
        }
    }

    /// Number of references to `h` (0 when it does not exist).
    pub fn refs(&self, h: u32) -> u32 {
        self.slot(h).map_or(0, |s| s.refs)
    }

    /// Removes `h`: BAD_RES if unknown, RES_BUSY if still referenced (uncharged:
    /// [`Table::remove_charged`] is the way out).
    fn remove(&mut self, h: u32) -> Outcome<T> {
        match self.slot(h) {
            None => Err(Fail::bad_res(self.errors.unknown)),
            Some(s) if s.refs > 0 => Err(Fail::busy(self.errors.busy)),
            Some(_) => {
                self.live.remove(&h);
                let slot = self.slots[(h - self.first) as usize].take();
                slot.map(|s| s.value)
                    .ok_or(Fail::bad_res(self.errors.unknown))
            }
        }
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Every object with its handle, in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.live
            .iter()
            .filter_map(|&h| Some((h, &self.slot(h)?.value)))
    }

    /// Drops every object (a teardown) and restarts handle numbering.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.live.clear();
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: TableErrors = TableErrors {
        unknown: 1,
        busy: 2,
        limit: 3,
    };

    #[test]
    fn handles_limits_and_references() {
        let mut t: Table<&str> = Table::new(10, 12, E);
        assert_eq!(t.insert("a", 8), Ok(10));
        assert_eq!(t.insert("b", 8), Ok(11));
        assert_eq!(t.insert("c", 2).unwrap_err().syndrome, 3);
        t.hold(10);
        assert_eq!(t.refs(10), 1);
        assert_eq!(t.remove(10).unwrap_err().syndrome, 2);
        t.release(10);
        assert_eq!(t.refs(10), 0);
        assert_eq!(t.remove(10), Ok("a"));
        assert_eq!(t.remove(10).unwrap_err().syndrome, 1);
        assert_eq!(t.insert("c", 8), Ok(12));
        assert_eq!(t.insert("d", 8), Ok(10), "wraps to the freed handle");
        assert_eq!(t.insert("e", 8).unwrap_err().syndrome, 3, "range full");
        assert_eq!(
            t.iter().collect::<Vec<_>>(),
            vec![(10, &"d"), (11, &"b"), (12, &"c")],
            "handle order"
        );
        assert_eq!(
            (t.len(), t.get(9).is_err(), t.get(13).is_err()),
            (3, true, true)
        );
        t.clear();
        assert_eq!((t.len(), t.iter().count(), t.contains(10)), (0, 0, false));
    }

    #[test]
    fn references_neither_wrap_nor_panic() {
        let mut t: Table<()> = Table::new(1, 8, E);
        let h = t.insert((), 8).unwrap();
        t.slot_mut(h).unwrap().refs = u32::MAX - 2;
        assert!(
            t.can_hold(h, 1) && !t.can_hold(h, 2),
            "u32::MAX is saturated"
        );
        t.hold(h);
        t.hold(h);
        t.hold(h);
        assert_eq!(t.refs(h), u32::MAX, "saturated, not wrapped");
        t.release(h);
        assert_eq!(
            t.refs(h),
            u32::MAX,
            "a saturated count is no longer exact: it stays"
        );
        assert_eq!(t.remove(h).unwrap_err().syndrome, 2, "busy until teardown");
        assert!(!t.can_hold(99, 1), "unknown handle");
    }

    /// A list of the guest's choosing, charged besides the slot.
    struct List(u64);

    impl Charged for List {
        fn charged(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn every_object_is_charged_its_slot() {
        let slot = std::mem::size_of::<Slot<List>>() as u64 + SLOT_OVERHEAD;
        assert_eq!(Table::cost(&List(10)), slot + 10);
        let mut b = Budget::with_limit(2 * slot + 10);
        let mut t: Table<List> = Table::new(1, 8, E);
        let h = t.insert_charged(List(10), 8, &mut b).unwrap();
        assert_eq!(b.used(), slot + 10);
        let full = t.insert_charged(List(1), 8, &mut b).unwrap_err();
        assert_eq!(full.syndrome, crate::syndrome::STORAGE_BUDGET_EXHAUSTED);
        assert_eq!(
            (t.len(), b.used()),
            (1, slot + 10),
            "a refusal takes nothing"
        );
        let small = t.insert_charged(List(0), 8, &mut b).unwrap();
        assert_eq!(
            b.used(),
            2 * slot + 10,
            "an object with no list still costs its slot"
        );
        assert_eq!(
            t.insert_charged(List(0), 1, &mut b).unwrap_err().syndrome,
            3
        );
        t.remove_charged(h, &mut b).unwrap();
        t.remove_charged(small, &mut b).unwrap();
        assert_eq!(b.used(), 0, "destroys refund all of it");
        assert!(t.remove_charged(h, &mut b).is_err());
    }

    #[test]
    fn churn_does_not_grow_the_slots() {
        let mut t: Table<u32> = Table::new(1, 0xff_ffff, E);
        let pinned = t.insert(0, 1 << 20).unwrap();
        for i in 0..100_000 {
            let h = t.insert(i, 1 << 20).unwrap();
            assert_ne!(h, pinned);
            t.remove(h).unwrap();
        }
        assert!(t.slots.len() as u64 <= MIN_SPAN, "{} slots", t.slots.len());
        // Many live objects widen the window: handles stay unique.
        let hs: Vec<u32> = (0..10_000).map(|i| t.insert(i, 1 << 20).unwrap()).collect();
        let mut sorted = hs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), hs.len());
        assert_eq!(t.len(), 10_001);
    }
}
