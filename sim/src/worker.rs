//! The firmware thread of [`Mode::Threaded`](crate::Mode::Threaded): one worker that serves
//! command doorbells and UAR writes (send doorbells, BlueFlame copies, CQ and EQ doorbells)
//! in the order they were written, as firmware runs beside the driver. While the data path has
//! work of its own pending (RNR retries, flushes, moderation timers) it also wakes every
//! millisecond for it. It stops when its `Worker` is dropped: the channel closes, the thread
//! drains what was queued and exits, and the drop joins it, so no thread outlives the device.
//!
//! The queue is bounded ([`QUEUE`] jobs), as PCIe bounds posted writes by flow-control
//! credits: a BAR write that finds it full waits for room, at most [`BACKPRESSURE`], and is
//! then dropped and counted (`Device::dropped_bar_writes`), so a firmware thread that makes no
//! progress neither grows the queue without end nor blocks the writer forever. Host controls
//! (`sync`, `reset`) wait for room as long as it takes.

use crate::device::{Core, UarWrite};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the thread does the data path's own work while some is pending.
const TICK: Duration = Duration::from_millis(1);
/// Jobs the queue holds.
pub(crate) const QUEUE: usize = 1024;
/// Longest a BAR write waits for room in a full queue.
pub(crate) const BACKPRESSURE: Duration = Duration::from_millis(100);

/// Work for the firmware thread.
pub(crate) enum Job {
    /// Serve the entries of this doorbell vector.
    Doorbell(u32),
    /// A 32-bit write into a UAR page: (page, offset, value).
    Uar32(u32, usize, u32),
    /// A 64-bit write into a UAR page.
    Uar64(u32, usize, u64),
    /// A BlueFlame copy into a UAR page.
    Block(u32, usize, Vec<u64>),
    /// A host event that writes device memory, held while bus mastering was off.
    Host(Box<dyn FnOnce(&Core) + Send>),
    /// Bus mastering is on again: serve what was held.
    Release,
    /// Back to power-on (see `Device::reset`).
    Reset,
    /// Reply once everything queued before has been served.
    Sync(Sender<()>),
}

/// Handle of the firmware thread.
pub(crate) struct Worker {
    tx: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// BAR writes dropped because the queue stayed full.
    dropped: AtomicU64,
}

impl Job {
    /// Whether serving the job may do DMA or raise an interrupt (so waits for bus mastering).
    fn needs_bus_master(&self) -> bool {
        matches!(
            self,
            Job::Doorbell(_) | Job::Uar32(..) | Job::Uar64(..) | Job::Block(..) | Job::Host(_)
        )
    }
}

/// Serves one job; returns what the write was.
pub(crate) fn serve(core: &Core, job: Job) -> UarWrite {
    match job {
        Job::Doorbell(vector) => {
            core.ring(vector);
            UarWrite::Other
        }
        Job::Uar32(index, offset, value) => core.uar_write32(index, offset, value),
        Job::Uar64(index, offset, value) => core.uar_write64(index, offset, value),
        Job::Block(index, offset, data) => core.uar_block(index, offset, &data),
        Job::Host(f) => {
            f(core);
            UarWrite::Other
        }
        Job::Release => {
            core.release_held();
            UarWrite::Other
        }
        Job::Reset => {
            core.reset();
            UarWrite::Send
        }
        Job::Sync(done) => {
            let _ = done.send(());
            UarWrite::Send
        }
    }
}

impl Worker {
    /// Starts the thread over `core`. The thread holds the core, not the device, so dropping
    /// the last handle of the device drops this worker, which stops the thread.
    pub fn spawn(core: Arc<Core>) -> Worker {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("mlx5-sim-fw".into())
            .spawn(move || {
                let mut busy = false;
                loop {
                    let job = if busy {
                        match rx.recv_timeout(TICK) {
                            Ok(job) => Some(job),
                            Err(RecvTimeoutError::Timeout) => None,
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    } else {
                        match rx.recv() {
                            Ok(job) => Some(job),
                            Err(_) => break,
                        }
                    };
                    let kick = match job {
                        // Bus mastering is off: the write waits, in order (busmaster.rs).
                        Some(job) if job.needs_bus_master() && !core.bus_master.enabled() => {
                            core.bus_master.hold(job);
                            false
                        }
                        Some(job) => {
                            if job.needs_bus_master() && core.bus_master.holding() {
                                core.release_held();
                            }
                            serve(&core, job) == UarWrite::Other
                        }
                        None => true,
                    };
                    if kick {
                        core.kick();
                    }
                    busy = core.bus_master.enabled() && core.busy();
                }
            })
            .expect("spawning the firmware thread");
        Worker {
            tx: Some(tx),
            thread: Some(thread),
            dropped: AtomicU64::new(0),
        }
    }

    /// Queues a BAR write: at once when there is room, else after waiting at most
    /// [`BACKPRESSURE`] for some; dropped and counted if there is still none.
    pub fn send(&self, job: Job) {
        let Some(tx) = &self.tx else {
            return;
        };
        let mut job = match tx.try_send(job) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => return,
            Err(TrySendError::Full(job)) => job,
        };
        let deadline = Instant::now() + BACKPRESSURE;
        loop {
            std::thread::sleep(Duration::from_micros(20));
            job = match tx.try_send(job) {
                Ok(()) | Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(job)) => job,
            };
            if Instant::now() >= deadline {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Queues a host control, waiting for room as long as it takes.
    pub fn control(&self, job: Job) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(job);
        }
    }

    /// BAR writes dropped because the queue stayed full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits until every job queued so far has been served.
    pub fn sync(&self) {
        let (done_tx, done_rx) = channel();
        if let Some(tx) = &self.tx {
            if tx.send(Job::Sync(done_tx)).is_ok() {
                let _ = done_rx.recv();
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
