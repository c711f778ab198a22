//! A vector that keeps its first `N` elements inline and moves to the heap beyond them.
//!
//! The data path builds short lists for every frame (gather entries, scatter entries,
//! translated extents, steering destinations) that almost always hold one or two elements;
//! allocating a `Vec` for each was a large share of a frame's cost. Nothing is lost for the
//! rare long list: it spills to a `Vec`.

use std::ops::{Deref, DerefMut};

/// Up to `N` elements inline, any number on the heap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StackVec<T, const N: usize> {
    Inline([T; N], usize),
    Heap(Vec<T>),
}

impl<T: Copy + Default, const N: usize> Default for StackVec<T, N> {
    fn default() -> Self {
        StackVec::new()
    }
}

impl<T: Copy + Default, const N: usize> StackVec<T, N> {
    /// An empty vector (no allocation).
    #[inline]
    pub fn new() -> Self {
        StackVec::Inline([T::default(); N], 0)
    }

    /// Appends `value`, moving to the heap when the inline room is full.
    #[inline]
    pub fn push(&mut self, value: T) {
        match self {
            StackVec::Inline(items, len) if *len < N => {
                items[*len] = value;
                *len += 1;
            }
            StackVec::Inline(items, len) => {
                let (items, len) = (*items, *len);
                self.spill(items, len, value)
            }
            StackVec::Heap(v) => v.push(value),
        }
    }

    /// Moves the inline elements and `value` to the heap.
    #[cold]
    fn spill(&mut self, items: [T; N], len: usize, value: T) {
        let mut v = Vec::with_capacity(2 * N + 1);
        v.extend_from_slice(&items[..len]);
        v.push(value);
        *self = StackVec::Heap(v);
    }
}

impl<T, const N: usize> Deref for StackVec<T, N> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            StackVec::Inline(items, len) => &items[..*len],
            StackVec::Heap(v) => v,
        }
    }
}

impl<T, const N: usize> DerefMut for StackVec<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            StackVec::Inline(items, len) => &mut items[..*len],
            StackVec::Heap(v) => v,
        }
    }
}

/// The elements of a [`StackVec`] by value.
pub(crate) enum IntoIter<T, const N: usize> {
    Inline(std::iter::Take<std::array::IntoIter<T, N>>),
    Heap(std::vec::IntoIter<T>),
}

impl<T, const N: usize> Iterator for IntoIter<T, N> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        match self {
            IntoIter::Inline(i) => i.next(),
            IntoIter::Heap(i) => i.next(),
        }
    }
}

impl<T, const N: usize> IntoIterator for StackVec<T, N> {
    type Item = T;
    type IntoIter = IntoIter<T, N>;
    #[inline]
    fn into_iter(self) -> IntoIter<T, N> {
        match self {
            StackVec::Inline(items, len) => IntoIter::Inline(items.into_iter().take(len)),
            StackVec::Heap(v) => IntoIter::Heap(v.into_iter()),
        }
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
        assert!(matches!(v, StackVec::Inline(..)));
        v.push(3);
        v.push(4);
        assert!(matches!(v, StackVec::Heap(..)));
        assert_eq!(&v[..], &[1, 2, 3, 4]);
        assert_eq!(v.clone().into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        let mut w: StackVec<u32, 4> = StackVec::new();
        w.push(7);
        assert_eq!(w.into_iter().collect::<Vec<_>>(), vec![7]);
    }
}
