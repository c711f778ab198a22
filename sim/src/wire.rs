//! The device's port seen from outside: a [`Link`] takes the frames the device transmits, and a
//! [`Wire`] joins two devices, both as an Ethernet cable between their ports and as the RC
//! fabric (the remote QPN of a QP on one device names a QP of the other).

use crate::device::Core;
use crate::Device;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};

/// Where the frames a device transmits go: a test's capture, a bridge to a real network, or
/// another device (see [`Wire`]). Called without any lock of the device held, from the thread
/// that rang the send doorbell (the firmware thread in threaded mode).
pub trait Link: Send + Sync {
    /// One frame, as the SQ built it (no FCS).
    fn transmit(&self, frame: &[u8]);
}

/// The end of a wire at one device: delivers into the other.
struct WireEnd {
    to: Weak<Core>,
}

/// Frames waiting to cross a wire: the device they go to, and the frame.
type Queue = VecDeque<(Weak<Core>, Vec<u8>)>;

thread_local! {
    /// Frames to deliver across wires, queued while a delivery is running on this thread.
    static QUEUED: RefCell<Option<Queue>> = const { RefCell::new(None) };
}

/// Ends a delivery round on this thread, also when a delivery unwinds.
struct Round;

impl Drop for Round {
    fn drop(&mut self) {
        QUEUED.with(|q| *q.borrow_mut() = None);
    }
}

impl Link for WireEnd {
    /// Delivers at once, unless this thread is already inside a delivery: a frame arriving
    /// can make the device answer (RoCE acknowledgements, read responses), and the answer's
    /// arrival another answer. Those are queued and delivered in order by the outermost
    /// call, so two devices talking to each other take a loop, not a recursion as deep as
    /// their conversation.
    fn transmit(&self, frame: &[u8]) {
        let queued = QUEUED.with(|q| match q.borrow_mut().as_mut() {
            Some(q) => {
                q.push_back((self.to.clone(), frame.to_vec()));
                true
            }
            None => false,
        });
        if queued {
            return;
        }
        QUEUED.with(|q| *q.borrow_mut() = Some(VecDeque::new()));
        let _round = Round;
        if let Some(core) = self.to.upgrade() {
            core.receive_frame(frame);
        }
        while let Some((to, f)) =
            QUEUED.with(|q| q.borrow_mut().as_mut().and_then(VecDeque::pop_front))
        {
            if let Some(core) = to.upgrade() {
                core.receive_frame(&f);
            }
        }
    }
}

/// An in-memory cable between two devices: each one's transmitted frames arrive at the other
/// ([`Device::receive_frame`]), and each one's RC QPs resolve their remote QPN on the other.
/// The wire holds no strong reference to either device; dropping it leaves them connected,
/// [`Wire::disconnect`] separates them.
#[derive(Clone)]
pub struct Wire {
    a: Weak<Core>,
    b: Weak<Core>,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire")
            .field(
                "connected",
                &(self.a.strong_count() > 0 && self.b.strong_count() > 0),
            )
            .finish()
    }
}

impl Wire {
    /// Connects the ports of `a` and `b` (replacing links attached before). Connecting a
    /// device to itself makes it a loopback: frames come back, remote QPNs stay local.
    pub fn connect(a: &Arc<Device>, b: &Arc<Device>) -> Wire {
        let (ca, cb) = (a.core(), b.core());
        ca.set_peer(Some(Arc::downgrade(cb)));
        cb.set_peer(Some(Arc::downgrade(ca)));
        ca.set_link(Some(Arc::new(WireEnd {
            to: Arc::downgrade(cb),
        })));
        cb.set_link(Some(Arc::new(WireEnd {
            to: Arc::downgrade(ca),
        })));
        Wire {
            a: Arc::downgrade(ca),
            b: Arc::downgrade(cb),
        }
    }

    /// Unplugs the wire: no links, no RC peer, on both devices.
    pub fn disconnect(&self) {
        for core in [&self.a, &self.b].into_iter().filter_map(Weak::upgrade) {
            core.set_peer(None);
            core.set_link(None);
        }
    }
}
