//! A backend wrapper that can hold back 64-bit doorbell writes, so the driver's own work on the
//! data path can be measured (or stepped through) apart from the device's.
//!
//! While holding, a `write64` (UAR doorbells: send queues, CQ arming) is stored instead of
//! forwarded; [`Deferred::release`] forwards what was held. Only the newest write per offset
//! matters to an mlx5 device (a doorbell says "run the queue up to its doorbell record"), so
//! the wrapper keeps the newest write to each of a few offsets. Everything else goes straight
//! through.

use super::{Backend, Mmio};
use std::cell::{Cell, RefCell};

/// Doorbell offsets held at once; more distinct offsets release the oldest early.
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
    pub fn release(&self) {
        let held: Vec<_> = self.held.borrow_mut().drain(..).collect();
        for (offset, value) in held {
            self.inner.mmio().write64(offset, value);
        }
    }

    /// Forwards the held doorbells and stops holding.
    pub fn stop(&self) {
        self.release();
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
    fn write32(&self, offset: usize, value: u32) {
        self.inner.mmio().write32(offset, value)
    }
    #[inline]
    fn write64(&self, offset: usize, value: u64) {
        self.writes.set(self.writes.get() + 1);
        if !self.holding.get() {
            return self.inner.mmio().write64(offset, value);
        }
        let mut held = self.held.borrow_mut();
        if let Some(slot) = held.iter_mut().find(|(o, _)| *o == offset) {
            slot.1 = value;
            return;
        }
        if held.len() == HELD {
            let (o, v) = held.remove(0);
            self.inner.mmio().write64(o, v);
        }
        held.push((offset, value));
    }
    fn copy_wc(&self, offset: usize, data: &[u64]) {
        self.copies.set(self.copies.get() + 1);
        // A BlueFlame copy carries the WQE itself; hold only its first 8 bytes (a doorbell
        // that makes the device read the WQE from memory instead).
        if self.holding.get() {
            if let Some(first) = data.first() {
                self.write64(offset, *first);
            }
        } else {
            self.writes.set(self.writes.get() + 1);
            self.inner.mmio().copy_wc(offset, data)
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
