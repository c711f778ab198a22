//! The device's port seen from outside: a [`Link`] takes the frames the device transmits, and a
//! [`Wire`] joins two devices, both as an Ethernet cable between their ports and as the RC
//! fabric (the remote QPN of a QP on one device names a QP of the other).

use crate::device::Core;
use crate::Device;
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

impl Link for WireEnd {
    fn transmit(&self, frame: &[u8]) {
        if let Some(core) = self.to.upgrade() {
            core.receive_frame(frame);
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
