//! Which 4 KiB pieces of which 2 MiB huge pages are in use: the books of no-IOMMU DMA memory
//! (see `dma.rs`), which carves every buffer out of huge pages so that the device is only ever
//! given physical addresses that cannot move.
//!
//! [`Slab`] knows nothing of mappings: a page is whatever handle the caller gives it (the
//! mapping and its physical address in `dma.rs`, a number in the tests), so this logic is
//! tested without root or huge pages. A piece that is in use, which includes one in quarantine,
//! is simply one not freed yet; a page comes back to the caller, to be unmapped, only when its
//! last piece is freed.

/// The size of a piece: the granularity of allocations.
pub const PIECE: usize = 4096;
/// Pieces in a 2 MiB huge page.
pub const PIECES: usize = (2 << 20) / PIECE;
/// Words of a page's bitmap.
const WORDS: usize = PIECES / 64;

/// Where an allocation lies: `count` pieces from piece `first` of page `page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The page's key in its [`Slab`].
    pub page: usize,
    /// The first piece.
    pub first: usize,
    /// Pieces.
    pub count: usize,
}

impl Piece {
    /// Bytes from the start of the page.
    pub fn offset(&self) -> usize {
        self.first * PIECE
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.count * PIECE
    }

    /// True for a piece of no bytes (never handed out).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// What [`Slab::free`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Freed<P> {
    /// The pieces are free for reuse; their page still has others in use.
    Kept,
    /// That was the page's last piece in use: the page left the slab and is the caller's to
    /// unmap.
    Empty(P),
    /// The piece is not one the slab has in use (freed twice, or never placed); nothing
    /// changed.
    Unknown,
}

/// Huge pages and which of their pieces are in use.
#[derive(Debug)]
pub struct Slab<P> {
    /// By key; a page that left the slab leaves a hole, which the next page opened fills.
    pages: Vec<Option<Page<P>>>,
}

#[derive(Debug)]
struct Page<P> {
    handle: P,
    /// Bit `i` set: piece `i` is in use.
    used: [u64; WORDS],
    /// Pieces in use (the bits set).
    busy: usize,
}

impl<P> Default for Slab<P> {
    fn default() -> Self {
        Slab { pages: Vec::new() }
    }
}

impl<P> Slab<P> {
    /// An empty slab.
    pub fn new() -> Self {
        Self::default()
    }

    /// Places `count` pieces whose first piece is a multiple of `align` pieces in a page the
    /// slab already has (the first that has room), and returns them with their page. `None`
    /// when no page has room, or the request could never fit a huge page (`count` not in
    /// `1..=PIECES`, `align` not a power of two up to `PIECES`).
    pub fn place(&mut self, count: usize, align: usize) -> Option<(Piece, &P)> {
        if !fits(count, align) {
            return None;
        }
        let (key, first) = self.pages.iter().enumerate().find_map(|(key, page)| {
            let page = page.as_ref()?;
            // A page with too few free pieces cannot have a run of them: skip it without
            // looking at its bits (most of a busy slab's pages are full).
            if PIECES - page.busy < count {
                return None;
            }
            find_run(&page.used, count, align).map(|first| (key, first))
        })?;
        Some(self.take(key, first, count))
    }

    /// Adds `handle`, a page with nothing in use, and places the pieces in it (at its start,
    /// which fits any alignment). Gives the page back if the request could never fit one.
    pub fn open(&mut self, handle: P, count: usize, align: usize) -> Result<(Piece, &P), P> {
        if !fits(count, align) {
            return Err(handle);
        }
        let page = Page {
            handle,
            used: [0; WORDS],
            busy: 0,
        };
        let key = match self.pages.iter().position(Option::is_none) {
            Some(key) => {
                self.pages[key] = Some(page);
                key
            }
            None => {
                self.pages.push(Some(page));
                self.pages.len() - 1
            }
        };
        Ok(self.take(key, 0, count))
    }

    /// Marks `count` pieces from `first` of page `key` in use (free, as the caller found).
    fn take(&mut self, key: usize, first: usize, count: usize) -> (Piece, &P) {
        let page = self.pages[key]
            .as_mut()
            .expect("a key just found or filled");
        for i in first..first + count {
            set(&mut page.used, i, true);
        }
        page.busy += count;
        let piece = Piece {
            page: key,
            first,
            count,
        };
        (piece, &page.handle)
    }

    /// Frees `piece`. When it was the last in use of its page, the page leaves the slab and is
    /// returned for the caller to unmap.
    pub fn free(&mut self, piece: Piece) -> Freed<P> {
        let Some(slot) = self.pages.get_mut(piece.page) else {
            return Freed::Unknown;
        };
        let Some(page) = slot.as_mut() else {
            return Freed::Unknown;
        };
        let end = piece.first.checked_add(piece.count);
        if piece.count == 0
            || end.is_none_or(|end| end > PIECES)
            || (piece.first..piece.first + piece.count).any(|i| !get(&page.used, i))
        {
            return Freed::Unknown;
        }
        for i in piece.first..piece.first + piece.count {
            set(&mut page.used, i, false);
        }
        page.busy -= piece.count;
        if page.busy > 0 {
            return Freed::Kept;
        }
        match slot.take() {
            Some(page) => Freed::Empty(page.handle),
            None => Freed::Unknown,
        }
    }

    /// Page `key`, if the slab has it.
    pub fn page(&self, key: usize) -> Option<&P> {
        self.pages.get(key)?.as_ref().map(|p| &p.handle)
    }

    /// Pages held.
    pub fn pages(&self) -> usize {
        self.pages.iter().flatten().count()
    }

    /// Pieces in use, over all pages.
    pub fn busy(&self) -> usize {
        self.pages.iter().flatten().map(|p| p.busy).sum()
    }

    /// Takes every page out, whatever is in use in it (for the allocator's end, when the
    /// device can no longer reach any of them).
    pub fn drain(&mut self) -> impl Iterator<Item = P> + '_ {
        self.pages.drain(..).flatten().map(|p| p.handle)
    }
}

/// A request a huge page can hold.
fn fits(count: usize, align: usize) -> bool {
    (1..=PIECES).contains(&count) && align.is_power_of_two() && align <= PIECES
}

/// The first free run of `count` pieces starting at a multiple of `align`.
fn find_run(used: &[u64; WORDS], count: usize, align: usize) -> Option<usize> {
    let mut start = 0;
    while start + count <= PIECES {
        match (start..start + count).find(|&i| get(used, i)) {
            None => return Some(start),
            // No run starting at or before the piece in use can include it: go past it.
            Some(taken) => start = (taken + 1).next_multiple_of(align),
        }
    }
    None
}

fn get(used: &[u64; WORDS], i: usize) -> bool {
    used[i / 64] & (1 << (i % 64)) != 0
}

fn set(used: &mut [u64; WORDS], i: usize, on: bool) {
    if on {
        used[i / 64] |= 1 << (i % 64);
    } else {
        used[i / 64] &= !(1 << (i % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Places in an existing page or opens page `next` (and counts up), as `dma.rs` does.
    fn alloc(s: &mut Slab<u32>, next: &mut u32, count: usize, align: usize) -> Piece {
        if let Some((piece, _)) = s.place(count, align) {
            return piece;
        }
        *next += 1;
        s.open(*next, count, align).unwrap().0
    }

    #[test]
    fn pieces_are_aligned_and_packed_first_fit() {
        let mut s = Slab::new();
        let mut next = 0;
        let a = alloc(&mut s, &mut next, 1, 1);
        assert_eq!((a.first, a.count, a.offset(), a.len()), (0, 1, 0, PIECE));
        // 64 KiB aligned: the next multiple of 16 pieces, not piece 1.
        let b = alloc(&mut s, &mut next, 2, 16);
        assert_eq!((b.page, b.first), (a.page, 16));
        // The hole before it is used for what fits there.
        let c = alloc(&mut s, &mut next, 15, 1);
        assert_eq!((c.page, c.first), (a.page, 1));
        let d = alloc(&mut s, &mut next, 1, 1);
        assert_eq!(d.first, 18);
        assert_eq!((s.pages(), s.busy()), (1, 19));
        // Half a huge page aligned to half of one: the second half.
        let e = alloc(&mut s, &mut next, PIECES / 2, PIECES / 2);
        assert_eq!((e.page, e.first), (a.page, PIECES / 2));
        assert_eq!(s.page(a.page), Some(&1));
    }

    #[test]
    fn a_full_page_opens_another() {
        let mut s = Slab::new();
        let mut next = 0;
        let pieces: Vec<Piece> = (0..PIECES)
            .map(|_| alloc(&mut s, &mut next, 1, 1))
            .collect();
        assert!(pieces.iter().all(|p| p.page == pieces[0].page));
        assert_eq!(s.pages(), 1);
        assert!(s.place(1, 1).is_none(), "the page is full");
        let more = alloc(&mut s, &mut next, 1, 1);
        assert_ne!(more.page, pieces[0].page);
        assert_eq!((s.pages(), next), (2, 2));
        // An alignment the first page's free space cannot meet also opens a page.
        let mut s = Slab::new();
        let mut next = 0;
        alloc(&mut s, &mut next, 1, 1);
        let whole = alloc(&mut s, &mut next, PIECES, PIECES);
        assert_eq!((whole.first, s.pages()), (0, 2));
    }

    #[test]
    fn freed_pieces_are_reused() {
        let mut s = Slab::new();
        let mut next = 0;
        let a = alloc(&mut s, &mut next, 4, 1);
        let b = alloc(&mut s, &mut next, 4, 1);
        assert_eq!(s.free(a), Freed::Kept);
        assert_eq!(s.free(a), Freed::Unknown, "a second free changes nothing");
        let c = alloc(&mut s, &mut next, 2, 1);
        assert_eq!((c.page, c.first), (a.page, 0), "a's place is reused");
        assert_eq!((s.pages(), s.busy(), next), (1, 6, 1));
        assert_eq!(s.free(b), Freed::Kept);
        assert_eq!(s.free(c), Freed::Empty(1));
    }

    #[test]
    fn a_piece_still_in_use_keeps_its_page() {
        // A quarantined buffer is never freed until the quarantine is released: its piece
        // stays in use, so its page stays in the slab (and mapped) whatever else goes.
        let mut s = Slab::new();
        let mut next = 0;
        let held = alloc(&mut s, &mut next, 1, 1);
        let others: Vec<Piece> = (0..10).map(|_| alloc(&mut s, &mut next, 3, 1)).collect();
        for p in others {
            assert_eq!(s.free(p), Freed::Kept);
        }
        assert_eq!((s.pages(), s.busy()), (1, 1));
        assert_eq!(s.page(held.page), Some(&1));
        // Released (after a reset), the page goes.
        assert_eq!(s.free(held), Freed::Empty(1));
        assert_eq!((s.pages(), s.busy()), (0, 0));
        assert_eq!(s.page(held.page), None);
    }

    #[test]
    fn an_empty_page_leaves_and_its_key_is_reused() {
        let mut s = Slab::new();
        let mut next = 0;
        let a = alloc(&mut s, &mut next, PIECES, 1);
        let b = alloc(&mut s, &mut next, 1, 1);
        assert_eq!((a.page, b.page), (0, 1));
        assert_eq!(s.free(a), Freed::Empty(1));
        assert_eq!(s.pages(), 1);
        // A piece of the page that left is unknown, even once its key is taken again.
        let c = alloc(&mut s, &mut next, PIECES, 1);
        assert_eq!((c.page, next), (0, 3));
        assert_eq!(s.page(0), Some(&3));
        assert_eq!(s.free(b), Freed::Empty(2));
        assert_eq!(s.free(b), Freed::Unknown);
        assert_eq!(s.drain().collect::<Vec<_>>(), vec![3]);
        assert_eq!(s.pages(), 0);
    }

    #[test]
    fn requests_no_huge_page_holds_are_refused() {
        let mut s: Slab<u32> = Slab::new();
        assert!(s.open(7, PIECES + 1, 1).is_err());
        assert!(s.open(7, 0, 1).is_err());
        assert!(s.open(7, 1, 3).is_err());
        assert!(s.open(7, 1, 2 * PIECES).is_err());
        assert_eq!(s.pages(), 0);
        let bad = Piece {
            page: 0,
            first: PIECES - 1,
            count: 2,
        };
        s.open(7, PIECES, 1).unwrap();
        assert_eq!(s.free(bad), Freed::Unknown);
        assert_eq!(s.busy(), PIECES);
    }

    proptest! {
        /// Any sequence of allocations and frees: pieces never overlap, each is aligned, the
        /// counts add up, and a page is handed back exactly when its last piece goes.
        #[test]
        fn books_stay_consistent(ops in prop::collection::vec((1usize..40, 0u32..6, any::<bool>()), 1..200)) {
            let mut s = Slab::new();
            let mut next = 0;
            let mut live: Vec<Piece> = Vec::new();
            for (count, align_log, free) in ops {
                if free && !live.is_empty() {
                    let p = live.remove(count % live.len());
                    let others = live.iter().any(|q| q.page == p.page);
                    match s.free(p) {
                        Freed::Kept => prop_assert!(others),
                        Freed::Empty(_) => prop_assert!(!others),
                        Freed::Unknown => prop_assert!(false, "{p:?} unknown"),
                    }
                } else {
                    let align = 1 << align_log;
                    let p = alloc(&mut s, &mut next, count, align);
                    prop_assert_eq!(p.first % align, 0);
                    prop_assert!(p.first + p.count <= PIECES);
                    for q in live.iter().filter(|q| q.page == p.page) {
                        prop_assert!(q.first + q.count <= p.first || p.first + p.count <= q.first,
                            "{p:?} overlaps {q:?}");
                    }
                    live.push(p);
                }
                prop_assert_eq!(s.busy(), live.iter().map(|p| p.count).sum::<usize>());
                let mut keys: Vec<usize> = live.iter().map(|p| p.page).collect();
                keys.sort();
                keys.dedup();
                prop_assert_eq!(s.pages(), keys.len());
            }
        }
    }
}
