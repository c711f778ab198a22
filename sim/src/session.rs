//! A session of the model: its lock held while it works on a doorbell, a command or an event.
//! Every window the model takes on DMA memory lives inside one (see `dma`'s module doc), and
//! the interrupts it raises reach the host's sink when it ends, after the lock is released,
//! so the sink may call back into the device.

use crate::irq::InterruptSink;
use crate::model::Model;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering it if a panic poisoned it: the model's state is consistent
/// between commands, and a device must keep answering.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where raised interrupts go: the host's sink, if it set one.
#[derive(Default)]
pub(crate) struct SinkSlot {
    sink: Mutex<Option<InterruptSink>>,
    /// Whether `sink` is set, so that a session ending with interrupts raised and no sink
    /// (every in-process test) needs no second lock.
    set: AtomicBool,
}

impl SinkSlot {
    /// Sets (or clears) the sink.
    pub fn set(&self, sink: Option<InterruptSink>) {
        let mut slot = lock(&self.sink);
        self.set.store(sink.is_some(), Ordering::Release);
        *slot = sink;
    }

    fn get(&self) -> Option<InterruptSink> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.sink).clone()
    }
}

/// The model, locked; dropping it releases the lock and then calls the sink for every vector
/// raised meanwhile.
pub(crate) struct Session<'a> {
    guard: Option<MutexGuard<'a, Model>>,
    sink: &'a SinkSlot,
}

impl<'a> Session<'a> {
    /// Locks `model`; interrupts raised go to `sink`. The clock reading of the last session
    /// is forgotten: this one is later.
    pub fn new(model: &'a Mutex<Model>, sink: &'a SinkSlot) -> Session<'a> {
        let mut guard = lock(model);
        guard.clock_reading = None;
        Session {
            guard: Some(guard),
            sink,
        }
    }
}

impl<'a> Session<'a> {
    /// Takes the vectors raised so far, to be delivered with [`Raised::deliver`] once this
    /// and every other session the caller holds have ended (two devices locked together).
    pub fn take_interrupts(&mut self) -> Raised<'a> {
        Raised {
            vectors: self.interrupts.take_pending(),
            sink: self.sink,
        }
    }
}

/// Vectors taken from a session, not yet handed to the sink.
pub(crate) struct Raised<'a> {
    vectors: Vec<u16>,
    sink: &'a SinkSlot,
}

impl Raised<'_> {
    /// Hands the vectors to the sink; call with no model lock held.
    pub fn deliver(self) {
        if self.vectors.is_empty() {
            return;
        }
        if let Some(sink) = self.sink.get() {
            for v in self.vectors {
                sink(v);
            }
        }
    }
}

impl Deref for Session<'_> {
    type Target = Model;

    #[inline(always)]
    fn deref(&self) -> &Model {
        // Set from `new` until `drop`.
        self.guard
            .as_deref()
            .expect("a session holds its lock until dropped")
    }
}

impl DerefMut for Session<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Model {
        self.guard
            .as_deref_mut()
            .expect("a session holds its lock until dropped")
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else {
            return;
        };
        if !guard.interrupts.has_pending() {
            return;
        }
        let raised = Raised {
            vectors: guard.interrupts.take_pending(),
            sink: self.sink,
        };
        drop(guard);
        raised.deliver();
    }
}
