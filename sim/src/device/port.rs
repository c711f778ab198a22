//! The device's port seen from the host: where transmitted frames go (a link, a wire, or back
//! into the device), frames arriving from outside, and the pcap capture of both.

use super::{lock, Device};
use crate::pcap::Capture;
use crate::wire::Link;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Device {
    /// Attaches the link that frames transmitted by the SQs go to (replacing a wire's).
    pub fn attach_link(&self, link: Arc<dyn Link>) {
        self.core.set_link(Some(link));
    }

    /// Detaches the link: transmitted frames go nowhere (they are still counted).
    pub fn detach_link(&self) {
        self.core.set_link(None);
    }

    /// Detaches `link` if it is still the one attached (a later link or wire stays).
    pub(crate) fn detach_this_link(&self, link: &Arc<dyn Link>) {
        let mut slot = lock(&self.core.link);
        if slot
            .as_ref()
            .is_some_and(|l| std::ptr::addr_eq(Arc::as_ptr(l), Arc::as_ptr(link)))
        {
            *slot = None;
        }
    }

    /// Puts `module` in the port's cage: MCIA reads its EEPROM, and the link comes up (a
    /// port-change event).
    pub fn plug_module(&self, module: crate::ModuleEeprom) {
        let module = Arc::new(module);
        self.host_event(move |core| {
            let mut m = core.model();
            m.port.module = Some(module);
            m.port.link_up = true;
            crate::events::port_change(&mut m, &core.dma, 1, true);
        });
    }

    /// Takes the module out of the cage: MCIA answers "no module" and the link goes down (a
    /// port-change event; PDDR says no cable).
    pub fn unplug_module(&self) {
        self.host_event(move |core| {
            let mut m = core.model();
            m.port.module = None;
            m.port.link_up = false;
            crate::events::port_change(&mut m, &core.dma, 1, false);
        });
    }

    /// Internal loopback: with `on`, transmitted frames come back into this device's receive
    /// path instead of going to the link.
    pub fn loopback(&self, on: bool) {
        self.core.loopback.store(on, Ordering::Relaxed);
    }

    /// A frame arrives at the port from outside: steered from the NIC receive root flow table
    /// (entries matched in index order under their group's mask, on the outer L2-L4 headers)
    /// to a TIR, its RQ (or the first RQ of its RQT), the RQ's next receive WQE and a CQE on
    /// the RQ's CQ. Returns false, and counts the frame in [`Device::rx_dropped`], when the
    /// port is down, nothing matches, the RQ is not ready or has no receive WQE posted, or the
    /// frame does not fit.
    pub fn receive_frame(&self, frame: &[u8]) -> bool {
        self.core.receive_frame(frame)
    }

    /// Starts recording every frame that crosses the port, both ways, to `out` in the pcap
    /// format (see [`crate::pcap`]): frames the SQs transmit (once, also in loopback) and
    /// frames that arrive from a link, a [`Wire`](crate::Wire) or [`Device::receive_frame`].
    /// Fails if a capture is already running or the file header cannot be written.
    pub fn capture(&self, out: impl Write + Send + 'static) -> io::Result<()> {
        let mut slot = lock(&self.core.capture);
        if slot.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a capture is already running on this device; stop_capture ends it",
            ));
        }
        *slot = Some(Capture::new(Box::new(out))?);
        self.core.capturing.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// [`Device::capture`] to a new file at `path` (buffered; flushed by
    /// [`Device::stop_capture`]).
    pub fn capture_to_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("creating capture {}: {e}", path.display()),
            )
        })?;
        self.capture(BufWriter::new(file))
    }

    /// Ends the running capture and flushes it: the number of frames written, or the first
    /// write error met while capturing (after which the capture stopped writing). Ok(0) when
    /// no capture runs.
    pub fn stop_capture(&self) -> io::Result<u64> {
        let capture = lock(&self.core.capture).take();
        self.core.capturing.store(false, Ordering::Relaxed);
        capture.map_or(Ok(0), Capture::finish)
    }
}
