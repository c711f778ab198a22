//! A backend with another platform's barriers: everything of backend `B` (its BAR, DMA
//! memory and events) but the [`Barriers`] of `Bar`. The model with [`HostBarriers`]
//! (`sfence` / `dsb st` …) runs every barrier site of the driver through the instructions real
//! hardware gets; test barriers that do something at a barrier (hand over the next CQE,
//! count the calls) reach the places only a barrier marks.
//!
//! [`HostBarriers`]: super::HostBarriers

use super::{Backend, Barriers};
use std::marker::PhantomData;

/// Backend `B` with the barriers of `Bar` (see the module's documentation).
pub struct WithBarriers<B, Bar> {
    inner: B,
    barriers: PhantomData<fn() -> Bar>,
}

impl<B: Backend, Bar: Barriers> WithBarriers<B, Bar> {
    /// `inner`, its barriers swapped for `Bar`'s.
    pub fn new(inner: B) -> WithBarriers<B, Bar> {
        WithBarriers {
            inner,
            barriers: PhantomData,
        }
    }

    /// The backend inside.
    pub fn inner(&self) -> &B {
        &self.inner
    }
}

impl<B: Backend, Bar: Barriers> Backend for WithBarriers<B, Bar> {
    type Mmio = B::Mmio;
    type Dma = B::Dma;
    type Events = B::Events;
    type Barriers = Bar;
    fn mmio(&self) -> &B::Mmio {
        self.inner.mmio()
    }
    fn dma(&self) -> &B::Dma {
        self.inner.dma()
    }
    fn events(&self) -> &B::Events {
        self.inner.events()
    }
}
