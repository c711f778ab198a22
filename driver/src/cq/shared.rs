//! The part of a CQ that its queue pairs share: the device object and its memory, and the
//! count of CQEs handed over that fences a queue's completions from its earlier lives.

use super::{Cursor, CQE};
use crate::backend::Backend;
use crate::hca::Hca;
use crate::ring::Ring;
use crate::undo::Object;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// The CQ's device object and its memory (ring, doorbell record), shared by the CQ and the
/// queue pairs that report to it; the last to go destroys it.
pub(crate) struct Shared<'h, B: Backend> {
    pub(super) object: Object<'h, B>,
    /// This CQ's identity, which no other CQ of the process has: the [`Source::cq`](super::Source::cq) of its
    /// completions.
    pub(super) id: u64,
    /// The ring, read (never written) by [`Shared::produced`].
    pub(super) cqes: Ring<CQE>,
    /// The `Cq`'s count of CQEs consumed, stored before each publication of the consumer
    /// index (so before the device may reuse a slot consumed).
    pub(super) consumed: AtomicU64,
}

// SAFETY: through `&Shared` the object's memory is only read, by atomic loads of the ring
// (`produced`), which the device and the `Cq`'s own loads may race with harmlessly; the `Cq`
// writes the ring only at creation, before any `Shared` is shared, and the drop has the object
// to itself.
unsafe impl<B: Backend> Sync for Shared<'_, B> where Hca<B>: Sync {}

impl<'h, B: Backend> Shared<'h, B> {
    /// The HCA.
    pub(crate) fn hca(&self) -> &'h Hca<B> {
        self.object.hca()
    }

    /// The CQ's identity, as its completions' [`Source::cq`](super::Source::cq) holds it.
    #[inline(always)]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Quarantine the CQ's memory when it goes (a queue that reported to it could not be
    /// destroyed, so the device may still write completions).
    pub(crate) fn taint(&self) {
        self.object.taint();
    }

    /// CQEs the device has handed over so far, counted from the CQ's creation: those consumed
    /// and those waiting in the ring. A queue that starts afresh (created, or reset) takes it
    /// as its fence: every CQE its earlier life (or an earlier queue of its number) left in
    /// the CQ is before it, every CQE of its new work after it (the device writes CQEs in ring
    /// order), so [`Source::seq`](super::Source::seq) tells them apart.
    ///
    /// The waiting CQEs are counted from the consumer index, at most one ring. The `Cq` may be
    /// polled meanwhile on another thread: a count made while its consumer index moved may
    /// have stopped at a slot the device reused, so it is made again.
    pub(crate) fn produced(&self) -> u64 {
        loop {
            let start = self.consumed.load(Ordering::Acquire);
            let mut cur = Cursor {
                cqes: self.cqes,
                consumer: start as u32,
            };
            let mut waiting = 0;
            while waiting < u64::from(self.cqes.entries()) && cur.ready::<B::Barriers>() {
                cur.advance();
                waiting += 1;
            }
            // The ring's loads before the second look at the count.
            fence(Ordering::SeqCst);
            if self.consumed.load(Ordering::Acquire) == start {
                return start + waiting;
            }
        }
    }
}
