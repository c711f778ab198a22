//! The firmware thread of [`Mode::Threaded`](crate::Mode::Threaded): one worker that serves
//! command doorbells in the order they were rung, as firmware runs beside the driver. It stops
//! when its `Worker` is dropped: the channel closes, the thread drains what was queued and
//! exits, and the drop joins it, so no thread outlives the device.

use crate::device::Core;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Work for the firmware thread.
enum Job {
    /// Serve the entries of this doorbell vector.
    Doorbell(u32),
    /// Reply once everything queued before has been served.
    Sync(Sender<()>),
}

/// Handle of the firmware thread.
pub(crate) struct Worker {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread over `core`. The thread holds the core, not the device, so dropping
    /// the last handle of the device drops this worker, which stops the thread.
    pub fn spawn(core: Arc<Core>) -> Worker {
        let (tx, rx) = channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("mlx5-sim-fw".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Doorbell(vector) => core.ring(vector),
                        Job::Sync(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .expect("spawning the firmware thread");
        Worker {
            tx: Some(tx),
            thread: Some(thread),
        }
    }

    /// Queues a doorbell.
    pub fn doorbell(&self, vector: u32) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job::Doorbell(vector));
        }
    }

    /// Waits until every doorbell queued so far has been served.
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
