//! A backend wrapper that can hold back 64-bit doorbell writes, so the driver's own work on the
//! data path can be measured (or stepped through) apart from the device's.
//!
//! While holding, a `write64` (UAR doorbells: send queues, CQ arming) is stored instead of
//! forwarded; [`Deferred::release`] forwards what was held. Only the newest write per offset
//! matters to an mlx5 device (a doorbell says "run the queue up to its doorbell record"), so
//! the wrapper keeps the newest write to each of a few offsets; a write to one more offset than
//! it has room for is forwarded at once (never an older one early: its queue may be gone).
//! Everything else goes straight through.

use super::{Backend, Mmio};
use std::cell::{Cell, RefCell};

/// Doorbell offsets held at once; a write to yet another offset is forwarded at once.
const HELD: usize = 8;

/// Wraps a backend `B`; see the module docs.
pub struct Deferred<B> {
    inner: B,
    holding: Cell<bool>,
    held: RefCell<Vec<(usize, u64)>>,
    writes: Cell<u64>,
    copies: Cell<u64>,
}

impl<B: Backend> Deferred<B> {
    /// Wraps `inner`, forwarding everything until [`Deferred::hold`].
    pub fn new(inner: B) -> Deferred<B> {
        Deferred {
            inner,
            holding: Cell::new(false),
            held: RefCell::new(Vec::with_capacity(HELD)),
            writes: Cell::new(0),
            copies: Cell::new(0),
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Starts holding doorbells.
    pub fn hold(&self) {
        self.holding.set(true);
    }

    /// Forwards the held doorbells, oldest first, and keeps holding.
    ///
    /// # Safety
    ///
    /// The driver rang them when its queues were ready for them; they reach the device now.
    /// Every queue rung since [`Deferred::hold`] (or the last release) must still exist as it
    /// was then: not destroyed, its number not given to another queue, its rings and the
    /// buffers its posted work names still kept (as they are while the queue and its
    /// packets or regions live).
    pub unsafe fn release(&self) {
        let held: Vec<_> = self.held.borrow_mut().drain(..).collect();
        for (offset, value) in held {
            // SAFETY: a doorbell the driver rang (with `write64`'s promise), late: the
            // caller's promise says its queue is still as it was.
            unsafe { self.inner.mmio().write64(offset, value) };
        }
    }

    /// Forwards the held doorbells and stops holding.
    ///
    /// # Safety
    ///
    /// As for [`Deferred::release`].
    pub unsafe fn stop(&self) {
        // SAFETY: the caller's promise.
        unsafe { self.release() };
        self.holding.set(false);
    }

    /// 64-bit writes seen (held or not) since creation: the doorbells the driver rang.
    pub fn doorbells(&self) -> u64 {
        self.writes.get()
    }

    /// BlueFlame copies seen (held or not) since creation, each also counted by
    /// [`Deferred::doorbells`]: whether the driver copied a WQE or rang with its first word.
    pub fn copies(&self) -> u64 {
        self.copies.get()
    }
}

impl<B: Backend> Mmio for Deferred<B> {
    fn len(&self) -> usize {
        self.inner.mmio().len()
    }
    fn read32(&self, offset: usize) -> u32 {
        self.inner.mmio().read32(offset)
    }
    unsafe fn write32(&self, offset: usize, value: u32) {
        // SAFETY: forwarded; the caller's promise.
        unsafe { self.inner.mmio().write32(offset, value) }
    }
    #[inline]
    unsafe fn write64(&self, offset: usize, value: u64) {
        self.writes.set(self.writes.get() + 1);
        if !self.holding.get() {
            // SAFETY: forwarded; the caller's promise.
            return unsafe { self.inner.mmio().write64(offset, value) };
        }
        let mut held = self.held.borrow_mut();
        if let Some(slot) = held.iter_mut().find(|(o, _)| *o == offset) {
            slot.1 = value;
            return;
        }
        if held.len() == HELD {
            // No room: this write goes through now, as if not holding. Releasing an older
            // one early instead would need its queue to still exist, which nothing here can
            // know (the queue may have been destroyed since it rang); this one is rung by a
            // caller that answers for it at this very moment.
            drop(held);
            // SAFETY: forwarded at once; the caller's promise.
            return unsafe { self.inner.mmio().write64(offset, value) };
        }
        held.push((offset, value));
    }
    unsafe fn copy_wc(&self, offset: usize, data: &[u64]) {
        self.copies.set(self.copies.get() + 1);
        // A BlueFlame copy carries the WQE itself; hold only its first 8 bytes (a doorbell
        // that makes the device read the WQE from memory instead).
        if self.holding.get() {
            if let Some(first) = data.first() {
                // SAFETY: the caller's promise; the driver wrote the same WQE to the ring.
                unsafe { self.write64(offset, *first) };
            }
        } else {
            self.writes.set(self.writes.get() + 1);
            // SAFETY: forwarded; the caller's promise.
            unsafe { self.inner.mmio().copy_wc(offset, data) }
        }
    }
}

impl<B: Backend> Backend for Deferred<B> {
    type Mmio = Self;
    type Dma = B::Dma;
    type Events = B::Events;
    type Barriers = B::Barriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &B::Dma {
        self.inner.dma()
    }
    fn events(&self) -> &B::Events {
        self.inner.events()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{DmaAlloc, DmaBuf, Events, ModelBarriers, Quarantine};
    use crate::error::{Error, Result};
    use std::time::Instant;

    /// A backend with no device: it records the 64-bit BAR writes that reach it, and has no
    /// `copy_wc` of its own (the trait's, one write per word, runs).
    #[derive(Default)]
    struct Recorder(RefCell<Vec<(usize, u64)>>);

    impl Mmio for Recorder {
        fn len(&self) -> usize {
            0x10_0000
        }
        fn read32(&self, _: usize) -> u32 {
            u32::MAX
        }
        unsafe fn write32(&self, _: usize, _: u32) {}
        unsafe fn write64(&self, offset: usize, value: u64) {
            self.0.borrow_mut().push((offset, value));
        }
    }

    impl DmaAlloc for Recorder {
        fn alloc(&self, len: usize, _: usize) -> Result<DmaBuf> {
            Err(Error::Dma {
                len,
                reason: "no memory behind the recorder".into(),
            })
        }
        fn quarantined(&self) -> Quarantine {
            Quarantine::default()
        }
        unsafe fn release_quarantine(&self) {}
    }

    impl Events for Recorder {
        fn wait(&self, _: Instant) {}
    }

    impl Backend for Recorder {
        type Mmio = Self;
        type Dma = Self;
        type Events = Self;
        type Barriers = ModelBarriers;
        fn mmio(&self) -> &Self {
            self
        }
        fn dma(&self) -> &Self {
            self
        }
        fn events(&self) -> &Self {
            self
        }
    }

    fn reached(d: &Deferred<Recorder>) -> Vec<(usize, u64)> {
        d.inner().0.borrow_mut().drain(..).collect()
    }

    #[test]
    fn held_doorbells_keep_the_newest_per_offset_and_one_more_offset_goes_through() {
        let d = Deferred::new(Recorder::default());
        // SAFETY: no device behind the recorder (so for every write and release below).
        unsafe { d.copy_wc(0x800, &[1, 2]) };
        assert_eq!(reached(&d), [(0x800, 1), (0x808, 2)], "one write per word");
        d.hold();
        // SAFETY: as above.
        unsafe {
            d.write64(0x1000, 1);
            d.write64(0x1000, 2);
            d.copy_wc(0x1800, &[3, 4]);
        }
        assert!(reached(&d).is_empty(), "held");
        for k in 0..HELD {
            // SAFETY: as above.
            unsafe { d.write64(0x2000 + 8 * k, 10 + k as u64) };
        }
        // Two offsets were held already: the last two of these find no room.
        let last = |k: usize| (0x2000 + 8 * k, 10 + k as u64);
        assert_eq!(
            reached(&d),
            [last(HELD - 2), last(HELD - 1)],
            "a write with no room goes through itself; nothing held goes early"
        );
        // SAFETY: as above.
        unsafe { d.stop() };
        let rest = reached(&d);
        assert_eq!(rest.len(), HELD);
        assert_eq!(rest[0], (0x1000, 2), "the newest value of an offset");
        assert_eq!(rest[1], (0x1800, 3), "a held copy is its first word");
        // Every write counts, held or not: the first copy, two writes and a copy, the loop.
        assert_eq!((d.doorbells(), d.copies()), (4 + HELD as u64, 2));
    }
}
