//! MSI-X as the device side sees it: one eventfd per vector (from SET_IRQS), the per-vector
//! mask and pending bits, and the function mask.
//!
//! QEMU emulates the MSI-X table itself and forwards only PBA reads, so under QEMU a vector's
//! mask lives in QEMU and this side sees the vectors' eventfds come and go (QEMU gives a vector
//! its fd when the guest first unmasks it). Other clients may leave the table to the device:
//! writes to the table's vector-control words, and SET_IRQS MASK/UNMASK actions, mask here.
//! Either way the PCI rule holds: a message for a vector that cannot be sent (masked, function
//! masked, bus mastering off, or no eventfd yet) sets its pending bit, and is sent when that changes. Nothing is
//! dropped.
//!
//! Vectors are raised from the model's threads with the vectors' lock held, so a write that
//! waited there would stall every thread that takes the lock, the socket thread among them.
//! Only eventfds are taken ([`prepare_eventfd`]), made non-blocking; a write that finds the
//! counter at its maximum (EAGAIN) leaves it non-zero, so the reader wakes anyway: the
//! message coalesces with the ones already counted, as messages on one vector do. And the
//! writes are made by a thread of their own (`signal.rs`), since O_NONBLOCK belongs to the
//! open file, which the client shares and may clear again: then only that thread waits.

mod signal;

use signal::Signaller;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One vector.
#[derive(Debug, Default)]
struct Vector {
    fd: Option<Arc<File>>,
    /// Masked by SET_IRQS MASK or by the table's vector control bit.
    masked: bool,
    pending: bool,
}

/// What a SET_IRQS on the MSI-X index asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrqAction {
    /// VFIO_IRQ_SET_ACTION_MASK.
    Mask,
    /// VFIO_IRQ_SET_ACTION_UNMASK.
    Unmask,
    /// VFIO_IRQ_SET_ACTION_TRIGGER.
    Trigger,
}

/// Why a SET_IRQS was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IrqError {
    /// start + count past the vectors the function has.
    #[error("vectors {start}..{start}+{count} are outside the {vectors} MSI-X vectors")]
    Range {
        /// First vector asked for.
        start: u32,
        /// How many.
        count: u32,
        /// Vectors of the function.
        vectors: u32,
    },
    /// An eventfd list whose length is neither 0 nor the count.
    #[error("{fds} eventfds for {count} vectors")]
    FdCount {
        /// File descriptors received.
        fds: usize,
        /// Vectors named.
        count: u32,
    },
    /// A descriptor that is not an eventfd, or one that could not be made non-blocking.
    #[error("descriptor {index} is not an eventfd that can be made non-blocking")]
    NotEventfd {
        /// Its place in the list received.
        index: usize,
    },
}

/// Checks that `fd` is an eventfd and makes it non-blocking, so that signalling it does not
/// wait: a pipe, a socket or a file could fill or block, and so could a blocking eventfd whose
/// counter the client left at its maximum. (A client may clear the flag again: the writes
/// are made off the vectors' lock by a thread of their own for that.)
///
/// The kernel names an eventfd's anonymous inode `anon_inode:[eventfd]` in `/proc/self/fd`;
/// a file of that name somewhere reads back as an absolute path there, so the name cannot be
/// faked. Without `/proc` nothing is taken (refusing is the safe side).
///
/// O_NONBLOCK is a flag of the open file, which the client shares: its own reads of the
/// eventfd become non-blocking too (QEMU makes its eventfds non-blocking anyway).
pub fn prepare_eventfd(fd: &File) -> std::io::Result<()> {
    let raw = fd.as_raw_fd();
    let target = std::fs::read_link(format!("/proc/self/fd/{raw}"))?;
    if target.as_os_str() != "anon_inode:[eventfd]" {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: F_GETFL on a descriptor `fd` keeps open; no memory is passed.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: F_SETFL on the same descriptor with an int argument; no memory is passed.
        if unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

struct State {
    vectors: Vec<Vector>,
    function_masked: bool,
    /// Bus Master Enable: a message is a memory write, which the function may not start
    /// while it is clear; messages wait as pending bits meanwhile.
    bus_master: bool,
}

/// The function's MSI-X vectors, shared by the socket thread (SET_IRQS, PBA reads) and the
/// model's threads (which raise vectors).
pub struct Msix {
    state: Mutex<State>,
    /// Messages sent per vector.
    sent: Vec<AtomicU64>,
    /// Messages latched as pending per vector (sent later or still pending).
    latched: Vec<AtomicU64>,
    /// Writes the eventfds.
    signaller: Signaller,
}

impl std::fmt::Debug for Msix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Msix")
            .field("vectors", &self.sent.len())
            .finish_non_exhaustive()
    }
}

impl Msix {
    /// `count` vectors, none with an eventfd yet, all unmasked, none pending.
    pub fn new(count: u16) -> Msix {
        let n = usize::from(count);
        Msix {
            state: Mutex::new(State {
                vectors: (0..n).map(|_| Vector::default()).collect(),
                function_masked: false,
                bus_master: true,
            }),
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            latched: (0..n).map(|_| AtomicU64::new(0)).collect(),
            signaller: Signaller::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.sent.len()
    }

    /// True for a function without vectors.
    pub fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }

    /// The device raises `vector`: sent now if it can be, else pending. Vectors the function
    /// does not have are ignored (and reported false).
    pub fn raise(&self, vector: u16) -> bool {
        let v = usize::from(vector);
        if v >= self.len() {
            return false;
        }
        let mut st = self.lock();
        let fm = st.function_masked || !st.bus_master;
        let vec = &mut st.vectors[v];
        match (&vec.fd, vec.masked || fm) {
            (Some(fd), false) => {
                self.signaller.send(vector, fd);
                self.sent[v].fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                vec.pending = true;
                self.latched[v].fetch_add(1, Ordering::Relaxed);
            }
        }
        true
    }

    /// Sends every pending message that can now be sent.
    fn flush(&self, st: &mut State) {
        if st.function_masked || !st.bus_master {
            return;
        }
        for (i, vec) in st.vectors.iter_mut().enumerate() {
            if vec.pending && !vec.masked {
                if let Some(fd) = &vec.fd {
                    self.signaller.send(i as u16, fd);
                    vec.pending = false;
                    self.sent[i].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// SET_IRQS on the MSI-X index. `fds` empty with `Trigger`: the vectors lose their
    /// eventfds (QEMU's way of sending -1 descriptors); `count` 0 with no fds: every vector
    /// loses its eventfd (the index is disabled). With fds: one per vector from `start`, each
    /// an eventfd ([`prepare_eventfd`]); if one is not, none is taken.
    pub fn set(
        &self,
        action: IrqAction,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), IrqError> {
        let vectors = self.len() as u32;
        let range_err = IrqError::Range {
            start,
            count,
            vectors,
        };
        let end = start.checked_add(count).ok_or(range_err)?;
        if end > vectors || (count == 0 && start > vectors) {
            return Err(IrqError::Range {
                start,
                count,
                vectors,
            });
        }
        if !fds.is_empty() && fds.len() != count as usize {
            return Err(IrqError::FdCount {
                fds: fds.len(),
                count,
            });
        }
        // Before the lock: the checks make system calls, and nothing changes if one fails.
        if let Some(index) = fds.iter().position(|f| prepare_eventfd(f).is_err()) {
            return Err(IrqError::NotEventfd { index });
        }
        let mut st = self.lock();
        let range = start as usize..end as usize;
        match action {
            IrqAction::Mask => range.for_each(|i| st.vectors[i].masked = true),
            IrqAction::Unmask => range.for_each(|i| st.vectors[i].masked = false),
            IrqAction::Trigger if count == 0 => st.vectors.iter_mut().for_each(|v| v.fd = None),
            IrqAction::Trigger if fds.is_empty() => range.for_each(|i| st.vectors[i].fd = None),
            IrqAction::Trigger => {
                for (i, fd) in range.zip(fds) {
                    st.vectors[i].fd = Some(Arc::new(fd));
                }
            }
        }
        self.flush(&mut st);
        Ok(())
    }

    /// The function mask (MSI-X control bit 14) changed.
    pub fn set_function_mask(&self, masked: bool) {
        let mut st = self.lock();
        st.function_masked = masked;
        self.flush(&mut st);
    }

    /// The command register's Bus Master Enable bit changed (on: pending messages go out).
    pub fn set_bus_master(&self, on: bool) {
        let mut st = self.lock();
        st.bus_master = on;
        self.flush(&mut st);
    }

    /// The vector-control mask bit of table entry `vector` was written.
    pub fn set_vector_mask(&self, vector: usize, masked: bool) {
        let mut st = self.lock();
        if let Some(v) = st.vectors.get_mut(vector) {
            v.masked = masked;
        }
        self.flush(&mut st);
    }

    /// The pending bit array, 64 vectors per little-endian qword, as PBA reads return it.
    pub fn pba(&self) -> Vec<u64> {
        let st = self.lock();
        let mut words = vec![0u64; st.vectors.len().div_ceil(64)];
        for (i, v) in st.vectors.iter().enumerate() {
            if v.pending {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        words
    }

    /// Waits up to `within` until every message sent so far is written to its eventfd (they
    /// are written by a thread of their own); false if one still waits, which only a client
    /// that cleared its eventfd's O_NONBLOCK and filled its counter can cause.
    pub fn settle(&self, within: Duration) -> bool {
        self.signaller.settle(within)
    }

    /// Messages sent on each vector so far (handed to the eventfds' writer).
    pub fn sent(&self) -> Vec<u64> {
        self.sent
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// Messages that had to wait (pending) on each vector so far.
    pub fn latched(&self) -> Vec<u64> {
        self.latched
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// A reset of the function: masks and pending bits back to power-on (bus mastering is
    /// the configuration space's, set by its owner). The eventfds stay:
    /// they are the client's plumbing, not device state (QEMU tears them down itself around
    /// a DEVICE_RESET, and keeps them across a guest's FLR).
    pub fn reset(&self) {
        let mut st = self.lock();
        st.function_masked = false;
        for v in st.vectors.iter_mut() {
            v.masked = false;
            v.pending = false;
        }
    }
}

#[cfg(test)]
mod tests;
