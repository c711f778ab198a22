//! Asynchronous events on the HCA's event queue: polling them, serving the page requests
//! among them on the spot, and waiting for them.

use super::{Hca, MAX_PAGE_REQUESTS};
use crate::backend::{Backend, Events};
use crate::eq::Event;
use crate::error::Result;
use std::time::Instant;

impl<B: Backend> Hca<B> {
    /// Reads new events and serves page requests. Returns the events seen (all of them,
    /// including the page requests already served, and events met while waiting for command
    /// completions). Every event is recorded even when serving a page request fails; the
    /// first such failure is then returned (after the rest of the batch was served).
    ///
    /// At most [`MAX_PAGE_REQUESTS`] page requests are served per call: a device that
    /// answers every page command with another request cannot hold the caller here. Events
    /// after the last one served wait, in order, for the next call.
    pub fn poll_events(&self) -> Result<Vec<Event>> {
        let mut guard = self.lock();
        let ctl = &mut *guard;
        let mut events = ctl.pending.take();
        match ctl.eq.as_mut() {
            Some(eq) => events.extend(eq.poll(&self.be)),
            None => return Ok(events),
        }
        let mut first = None;
        let (mut served, mut requests) = (0, 0);
        while served < events.len() {
            if let Event::PageRequest { num_pages, .. } = events[served] {
                if requests == MAX_PAGE_REQUESTS {
                    break;
                }
                requests += 1;
                if let Err(e) = ctl.apply_pages(&self.be, num_pages) {
                    log::warn!("serving a page request of {num_pages}: {e}");
                    first.get_or_insert(e);
                }
                // Commands sent meanwhile may have met more events.
                events.extend(ctl.pending.take());
            }
            served += 1;
        }
        // What was not reached waits for the next call, in order.
        for e in events.drain(served..) {
            ctl.pending.push(e);
        }
        events.retain(|e| !matches!(e, Event::CommandCompletion { .. }));
        for e in &events {
            ctl.events.push(*e);
        }
        match first {
            Some(e) => Err(e),
            None => Ok(events),
        }
    }

    /// Waits for events: returns what [`Hca::poll_events`] returns as soon as it is not
    /// empty, or an empty list at `deadline`. With an interrupt-driven backend the thread
    /// sleeps until an interrupt; otherwise it polls with short pauses.
    pub fn wait_events(&self, deadline: Instant) -> Result<Vec<Event>> {
        let events = self.be.events();
        loop {
            let got = self.poll_events()?;
            let now = Instant::now();
            if !got.is_empty() || now >= deadline {
                return Ok(got);
            }
            events.wait_for_event(deadline);
        }
    }
}
