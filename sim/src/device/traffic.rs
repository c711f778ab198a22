//! Frames between the port and the models: locking this device's model (and its peer's, in a
//! fixed order) for a piece of work, then putting the frames its SQs sent on the port once the
//! locks are let go; frames arriving from outside or looped back.

use super::Core;
use crate::datapath::{self, Side};
use crate::frames::Frames;
use crate::model::Model;
use crate::session::lock;
use std::sync::atomic::Ordering;

/// Most rounds one call of `Core::sides` goes on with SQ runs that stopped with the port's
/// queue full: each round sends at least one WQE, and a ring holds at most 65536.
const MAX_TX_RESUMES: usize = 65536;

impl Core {
    /// Runs `f` on this device's locked side and, when a wire connects one, the peer's (the
    /// two locked lower id first, so two devices working on each other never deadlock). The
    /// frames SQs sent meanwhile go out once both locks are released. An SQ run that stopped
    /// with the port's queue full (`datapath::tx_backlog`) goes on once they have left, as
    /// many times as it takes (at most `MAX_TX_RESUMES`; the device's own work goes on with
    /// what is left), so a doorbell still does all its work before it returns.
    pub(crate) fn sides<R>(
        &self,
        f: impl for<'a> FnOnce(&mut Side<'a>, Option<&mut Side<'a>>) -> R,
    ) -> R {
        let (r, mut more) = self.sides_once(|a, b| {
            let r = f(a, b);
            (r, datapath::tx_backlog(a))
        });
        for _ in 0..MAX_TX_RESUMES {
            if !more {
                break;
            }
            more = self.sides_once(|a, _| datapath::resume_tx(a));
        }
        r
    }

    /// One round of [`Core::sides`].
    fn sides_once<R>(
        &self,
        f: impl for<'a> FnOnce(&mut Side<'a>, Option<&mut Side<'a>>) -> R,
    ) -> R {
        let peer = self.peer();
        let (r, mine, theirs) = match &peer {
            None => {
                let mut m = self.model();
                let r = f(
                    &mut Side::new(&mut m, &self.dma).with_faults(&self.faults),
                    None,
                );
                let mine = take_outbox(&mut m);
                if self.loopback.load(Ordering::Relaxed) {
                    // Looped-back frames only come back into this device: no need to let go
                    // of its lock in between.
                    self.transmit(mine, Some(&mut m));
                    return r;
                }
                (r, mine, Frames::default())
            }
            Some(p) => {
                let (mut a, mut b) = if self.id < p.id {
                    let a = self.model();
                    (a, p.model())
                } else {
                    let b = p.model();
                    (self.model(), b)
                };
                let r = f(
                    &mut Side::new(&mut a, &self.dma).with_faults(&self.faults),
                    Some(&mut Side::new(&mut b, &p.dma).with_faults(&p.faults)),
                );
                let out = (r, take_outbox(&mut a), take_outbox(&mut b));
                // Interrupts reach each sink only once both locks are released.
                let (ia, ib) = (a.take_interrupts(), b.take_interrupts());
                drop((a, b));
                ia.deliver();
                ib.deliver();
                out
            }
        };
        self.transmit(mine, None);
        if let Some(p) = peer {
            p.transmit(theirs, None);
        }
        r
    }

    /// Puts frames on the port: back into this device in loopback, else to the link (or
    /// nowhere without one). Every frame leaving the port passes here, each as a `&[u8]`.
    /// The emptied buffers go back to the model for the SQs' next frames. `locked` is this
    /// device's model when the caller still holds it, which it may only in loopback (a link
    /// may call back into the device).
    fn transmit(&self, frames: Frames, locked: Option<&mut Model>) {
        if frames.is_empty() {
            return;
        }
        // A caller holding the lock saw loopback on when the frames were sent.
        let looped = locked.is_some() || self.loopback.load(Ordering::Relaxed);
        if looped && self.capturing.load(Ordering::Relaxed) {
            if let Some(c) = lock(&self.capture).as_mut() {
                frames.iter().for_each(|f| c.record(f));
            }
        }
        if looped {
            // One lock for the frames' arrival and for handing the buffers back.
            let mut guard;
            let m = match locked {
                Some(m) => m,
                None => {
                    guard = self.model();
                    &mut *guard
                }
            };
            self.arrive(m, frames.iter());
            recycle(m, frames);
            return;
        }
        // Frames lost at the port (a fault) reach neither the capture nor the link.
        let link = lock(&self.link).clone();
        for f in frames.iter() {
            if self.faults.lose_sent() {
                continue;
            }
            if self.capturing.load(Ordering::Relaxed) {
                if let Some(c) = lock(&self.capture).as_mut() {
                    c.record(f);
                }
            }
            if let Some(link) = &link {
                link.transmit(f);
            }
        }
        recycle(&mut self.model(), frames);
    }

    /// A frame arrives at the port from outside (a capture records it).
    pub(crate) fn receive_frame(&self, frame: &[u8]) -> bool {
        if !self.bus_master.enabled() {
            self.bus_master.frame_dropped();
            return false;
        }
        if self.faults.lose_arriving() {
            return false;
        }
        if self.capturing.load(Ordering::Relaxed) {
            if let Some(c) = lock(&self.capture).as_mut() {
                c.record(frame);
            }
        }
        let mut m = self.model();
        let delivered = self.arrive(&mut m, [frame]) == 1;
        // What the frame made the device send (RoCE acknowledgements and responses) leaves
        // once the lock is let go.
        let out = take_outbox(&mut m);
        drop(m);
        self.transmit(out, None);
        delivered
    }

    /// Frames arrive at the port of the locked model `m`: every frame arriving passes here,
    /// each as a `&[u8]` (from [`Core::receive_frame`] or from loopback). Returns how many
    /// were delivered.
    fn arrive<'f>(&self, m: &mut Model, frames: impl IntoIterator<Item = &'f [u8]>) -> usize {
        let mut side = Side::new(m, &self.dma).with_faults(&self.faults);
        frames
            .into_iter()
            .filter(|frame| datapath::receive(&mut side, frame))
            .count()
    }
}

/// Hands emptied frame buffers back to the model, unless it has started new ones.
fn recycle(m: &mut Model, mut frames: Frames) {
    if m.outbox.is_empty() {
        frames.clear();
        m.outbox = frames;
    }
}

/// The frames the model's SQs queued, if any (the model keeps its empty buffers otherwise).
fn take_outbox(m: &mut Model) -> Frames {
    if m.outbox.is_empty() {
        Frames::default()
    } else {
        std::mem::take(&mut m.outbox)
    }
}
