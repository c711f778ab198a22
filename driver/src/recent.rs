//! A bounded log: the last N entries of something that happens without end (commands run,
//! events seen), with a count of all of them, so a long-running driver keeps fixed memory.

use std::collections::VecDeque;

/// The last `capacity` entries pushed, oldest first, and how many were pushed in all.
#[derive(Debug, Clone)]
pub struct Recent<T> {
    entries: VecDeque<T>,
    capacity: usize,
    total: u64,
}

impl<T> Recent<T> {
    /// An empty log keeping at most `capacity` entries (0 keeps none, but still counts).
    pub fn new(capacity: usize) -> Recent<T> {
        Recent {
            entries: VecDeque::with_capacity(capacity.min(1024)),
            capacity,
            total: 0,
        }
    }

    /// Adds an entry, dropping the oldest when full.
    pub fn push(&mut self, entry: T) {
        self.total += 1;
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    /// The entries kept, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &T> + '_ {
        self.entries.iter()
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when none is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries pushed since the log was made, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many entries it keeps at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_n_and_counts_all() {
        let mut r = Recent::new(3);
        for i in 0..10 {
            r.push(i);
        }
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), [7, 8, 9]);
        assert_eq!((r.len(), r.total(), r.capacity()), (3, 10, 3));
        let mut none = Recent::new(0);
        none.push(1);
        assert!(none.is_empty());
        assert_eq!(none.total(), 1);
    }
}
