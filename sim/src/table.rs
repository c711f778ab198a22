//! One small generic table for every kind of device object (UARs, PDs, EQs, CQs, QPs, ...):
//! it hands out handles, enforces the object count limit, and counts references so that an
//! object still in use cannot be destroyed.

use crate::fail::{Fail, Outcome};
use std::collections::BTreeMap;

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
    slots: BTreeMap<u32, Slot<T>>,
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
            slots: BTreeMap::new(),
        }
    }

    /// Stores `value` under a new handle, if fewer than `limit` objects exist.
    pub fn insert(&mut self, value: T, limit: u64) -> Outcome<u32> {
        if self.slots.len() as u64 >= limit {
            return Err(Fail::lim(self.errors.limit));
        }
        let span = u64::from(self.last - self.first) + 1;
        for _ in 0..span.min(self.slots.len() as u64 + 1) {
            let h = self.next;
            self.next = if h == self.last { self.first } else { h + 1 };
            if let std::collections::btree_map::Entry::Vacant(slot) = self.slots.entry(h) {
                slot.insert(Slot { value, refs: 0 });
                return Ok(h);
            }
        }
        Err(Fail::lim(self.errors.limit))
    }

    /// The object `h`.
    pub fn get(&self, h: u32) -> Outcome<&T> {
        self.slots
            .get(&h)
            .map(|s| &s.value)
            .ok_or(Fail::bad_res(self.errors.unknown))
    }

    /// The object `h`, mutably.
    pub fn get_mut(&mut self, h: u32) -> Outcome<&mut T> {
        let unknown = self.errors.unknown;
        self.slots
            .get_mut(&h)
            .map(|s| &mut s.value)
            .ok_or(Fail::bad_res(unknown))
    }

    /// Fails with `syndrome` (BAD_RES) unless `h` exists: for references from other objects,
    /// which report the referring object's syndrome.
    pub fn check(&self, h: u32, syndrome: u32) -> Outcome<()> {
        if self.slots.contains_key(&h) {
            Ok(())
        } else {
            Err(Fail::bad_res(syndrome))
        }
    }

    /// True when `h` exists.
    pub fn contains(&self, h: u32) -> bool {
        self.slots.contains_key(&h)
    }

    /// Counts one more reference to `h` (which must exist).
    pub fn hold(&mut self, h: u32) {
        if let Some(s) = self.slots.get_mut(&h) {
            s.refs += 1;
        }
    }

    /// Drops one reference to `h`.
    pub fn release(&mut self, h: u32) {
        if let Some(s) = self.slots.get_mut(&h) {
            s.refs = s.refs.saturating_sub(1);
        }
    }

    /// Number of references to `h` (0 when it does not exist).
    pub fn refs(&self, h: u32) -> u32 {
        self.slots.get(&h).map_or(0, |s| s.refs)
    }

    /// Removes `h`: BAD_RES if unknown, RES_BUSY if still referenced.
    pub fn remove(&mut self, h: u32) -> Outcome<T> {
        match self.slots.get(&h) {
            None => Err(Fail::bad_res(self.errors.unknown)),
            Some(s) if s.refs > 0 => Err(Fail::busy(self.errors.busy)),
            Some(_) => Ok(self.slots.remove(&h).map(|s| s.value).expect("present")),
        }
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Every object with its handle, in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.slots.iter().map(|(h, s)| (*h, &s.value))
    }

    /// Drops every object (a teardown) and restarts handle numbering.
    pub fn clear(&mut self) {
        self.slots.clear();
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
    }
}
