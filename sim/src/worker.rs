//! The firmware thread of [`Mode::Threaded`](crate::Mode::Threaded): one worker that serves
//! command doorbells and UAR writes (send doorbells, BlueFlame copies, CQ and EQ doorbells)
//! in the order they were written, as firmware runs beside the driver. While the data path has
//! work of its own pending (RNR retries, flushes, moderation timers) it also wakes every
//! millisecond for it. It stops when its `Worker` is dropped: the channel closes, the thread
//! drains what was queued and exits, and the drop joins it, so no thread outlives the device.

use crate::device::{Core, UarWrite};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the thread does the data path's own work while some is pending.
const TICK: Duration = Duration::from_millis(1);

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
    /// Back to power-on (see `Device::reset`).
    Reset,
    /// Reply once everything queued before has been served.
    Sync(Sender<()>),
}

/// Handle of the firmware thread.
pub(crate) struct Worker {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// Serves one job; returns what the write was.
fn serve(core: &Core, job: Job) -> UarWrite {
    match job {
        Job::Doorbell(vector) => {
            core.ring(vector);
            UarWrite::Other
        }
        Job::Uar32(index, offset, value) => core.uar_write32(index, offset, value),
        Job::Uar64(index, offset, value) => core.uar_write64(index, offset, value),
        Job::Block(index, offset, data) => core.uar_block(index, offset, &data),
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
        let (tx, rx) = channel::<Job>();
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
                        Some(job) => serve(&core, job) == UarWrite::Other,
                        None => true,
                    };
                    if kick {
                        core.kick();
                    }
                    busy = core.busy();
                }
            })
            .expect("spawning the firmware thread");
        Worker {
            tx: Some(tx),
            thread: Some(thread),
        }
    }

    /// Queues a job.
    pub fn send(&self, job: Job) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(job);
        }
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
