//! A vector that keeps its first `N` elements inline and moves to the heap beyond them.
//!
//! The data path builds short lists for every frame (gather entries, scatter entries,
//! translated extents, steering destinations) that almost always hold one or two elements;
//! allocating a `Vec` for each was a large share of a frame's cost. Nothing is lost for the
//! rare long list: it spills to a `Vec`.
//!
//! The length is a field of its own, written and read alone: as part of an enum (or written
//! with the inline elements as one block) its first read after creation stalled on store
//! forwarding.

use std::ops::{Deref, DerefMut};

/// Up to `N` elements inline, any number on the heap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StackVec<T, const N: usize> {
    /// Elements inline; `SPILLED` once they live in `heap`.
    len: usize,
    inline: [T; N],
    heap: Vec<T>,
}

/// `len` of a vector whose elements moved to the heap.
const SPILLED: usize = usize::MAX;

impl<T: Copy + Default, const N: usize> Default for StackVec<T, N> {
    fn default() -> Self {
        StackVec::new()
    }
}

impl<T: Copy + Default, const N: usize> StackVec<T, N> {
    /// An empty vector (no allocation).
    #[inline]
    pub fn new() -> Self {
        StackVec {
            len: 0,
            inline: [T::default(); N],
            heap: Vec::new(),
        }
    }

    /// Appends `value`, moving to the heap when the inline room is full.
    #[inline]
    pub fn push(&mut self, value: T) {
        if self.len < N {
            self.inline[self.len] = value;
            self.len += 1;
        } else {
            self.spill(value);
        }
    }

    /// Appends a default element and returns it, to be filled in place: an element built
    /// elsewhere and copied in is written in pieces and read back whole, which stalls on
    /// store forwarding.
    #[inline]
    pub fn push_slot(&mut self) -> &mut T {
        if self.len < N {
            self.len += 1;
            &mut self.inline[self.len - 1]
        } else {
            self.spill(T::default());
            let last = self.heap.len() - 1;
            &mut self.heap[last]
        }
    }

    /// Appends `value` on the heap, moving the inline elements there first.
    #[cold]
    fn spill(&mut self, value: T) {
        if self.len != SPILLED {
            self.heap.reserve(2 * N + 1);
            self.heap.extend_from_slice(&self.inline[..self.len]);
            self.len = SPILLED;
        }
        self.heap.push(value);
    }
}

impl<T, const N: usize> Deref for StackVec<T, N> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self.inline.get(..self.len) {
            Some(items) => items,
            None => &self.heap,
        }
    }
}

impl<T, const N: usize> DerefMut for StackVec<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match self.inline.get_mut(..self.len) {
            Some(items) => items,
            None => &mut self.heap,
        }
    }
}

/// The elements of a [`StackVec`] by value.
pub(crate) struct IntoIter<T, const N: usize> {
    v: StackVec<T, N>,
    next: usize,
}

impl<T: Copy, const N: usize> Iterator for IntoIter<T, N> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let item = self.v.get(self.next).copied();
        self.next += 1;
        item
    }
}

impl<T: Copy, const N: usize> IntoIterator for StackVec<T, N> {
    type Item = T;
    type IntoIter = IntoIter<T, N>;
    fn into_iter(self) -> IntoIter<T, N> {
        IntoIter { v: self, next: 0 }
    }
}

impl<'a, T, const N: usize> IntoIterator for &'a StackVec<T, N> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_to_the_heap_in_order() {
        let mut v: StackVec<u32, 2> = StackVec::new();
        assert!(v.is_empty());
        v.push(1);
        v.push(2);
        assert_eq!(v.len, 2);
        v.push(3);
        *v.push_slot() = 4;
        assert_eq!(v.len, SPILLED);
        assert_eq!(&v[..], &[1, 2, 3, 4]);
        v[0] = 9;
        assert_eq!(v.clone().into_iter().collect::<Vec<_>>(), vec![9, 2, 3, 4]);
        let mut w: StackVec<u32, 4> = StackVec::new();
        *w.push_slot() = 7;
        assert_eq!(w.into_iter().collect::<Vec<_>>(), vec![7]);
    }
}
