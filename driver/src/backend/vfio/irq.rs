//! MSI-X interrupts as eventfds: VFIO signals vector `i` on descriptor `i`; waiting for
//! events is a `ppoll` on all of them, and every signal is counted per vector (which is how
//! a test tells an interrupt-driven completion from a polled one).

use super::device::Device;
use super::error::VfioError;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::time::TimeSpec;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Most vectors the backend routes: the driver's EQs use the first few.
pub const MAX_VECTORS: u32 = 8;

/// The eventfds of the function's MSI-X vectors.
#[derive(Debug)]
pub struct Irqs {
    fds: Vec<EventFd>,
    counts: Vec<AtomicU64>,
    /// Waits an interrupt ended (not the deadline).
    wakeups: AtomicU64,
}

impl Irqs {
    /// Creates up to [`MAX_VECTORS`] eventfds and routes the function's first vectors to
    /// them. A function without MSI-X gets none (the driver then polls).
    pub fn enable(dev: &Device) -> Result<Irqs, VfioError> {
        let n = dev.msix_vectors()?.min(MAX_VECTORS);
        let fds = (0..n)
            .map(|_| EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|errno| VfioError::Ioctl {
                what: "eventfd for an MSI-X vector".into(),
                errno,
            })?;
        if n > 0 {
            let raw: Vec<_> = fds.iter().map(|f| f.as_raw_fd()).collect();
            dev.set_msix(&raw)?;
        }
        let counts = (0..n).map(|_| AtomicU64::new(0)).collect();
        Ok(Irqs {
            fds,
            counts,
            wakeups: AtomicU64::new(0),
        })
    }

    /// Vectors routed.
    pub fn vectors(&self) -> usize {
        self.fds.len()
    }

    /// Interrupts raised so far, per vector: those a wait took, and those pending now (an
    /// interrupt whose event the driver found by looking before it waited).
    pub fn counts(&self) -> Vec<u64> {
        for i in 0..self.fds.len() {
            self.take(i);
        }
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// Waits that an interrupt ended before their deadline.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// Reads (and so clears) vector `i`'s eventfd into its count; nothing pending is no error.
    fn take(&self, i: usize) {
        // Non-blocking: EAGAIN when nothing is pending.
        if let Ok(n) = self.fds[i].read() {
            self.counts[i].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Waits until a vector fires or `deadline` passes; counts (and clears) what fired.
    pub fn wait(&self, deadline: Instant) {
        if self.fds.is_empty() {
            // No interrupts: a short pause, then the caller polls memory again.
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep((deadline - now).min(Duration::from_micros(20)));
            }
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let mut polls: Vec<PollFd<'_>> = self
            .fds
            .iter()
            .map(|f| PollFd::new(f.as_fd(), PollFlags::POLLIN))
            .collect();
        match ppoll(&mut polls, Some(TimeSpec::from_duration(left)), None) {
            Ok(0) => {}
            Ok(_) => {
                self.wakeups.fetch_add(1, Ordering::Relaxed);
                for (i, p) in polls.iter().enumerate() {
                    if p.revents().is_some_and(|r| r.contains(PollFlags::POLLIN)) {
                        self.take(i);
                    }
                }
            }
            Err(e) => log::debug!("waiting for MSI-X: {e}"),
        }
    }

    /// Stops the routing (before the descriptors close).
    pub fn disable(&self, dev: &Device) {
        if !self.fds.is_empty() {
            if let Err(e) = dev.set_msix(&[]) {
                log::warn!("turning MSI-X off: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a device: two eventfds standing in for vectors, one signalled.
    #[test]
    fn a_signalled_vector_ends_the_wait_and_is_counted() {
        let irqs = Irqs {
            fds: vec![
                EventFd::from_flags(EfdFlags::EFD_NONBLOCK).unwrap(),
                EventFd::from_flags(EfdFlags::EFD_NONBLOCK).unwrap(),
            ],
            counts: vec![AtomicU64::new(0), AtomicU64::new(0)],
            wakeups: AtomicU64::new(0),
        };
        irqs.fds[0].write(1).unwrap();
        assert_eq!(
            irqs.counts(),
            vec![1, 0],
            "pending interrupts count before any wait"
        );
        irqs.fds[1].write(3).unwrap();
        let start = Instant::now();
        irqs.wait(start + Duration::from_secs(10));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(irqs.wakeups(), 1);
        assert_eq!(irqs.counts(), vec![1, 3]);
        // Nothing pending: the wait runs to its deadline.
        let start = Instant::now();
        irqs.wait(start + Duration::from_millis(20));
        assert!(start.elapsed() >= Duration::from_millis(19));
        assert_eq!(
            irqs.wakeups(),
            1,
            "a wait that ran to its deadline is no wake-up"
        );
        assert_eq!(irqs.counts(), vec![1, 3]);
    }
}
