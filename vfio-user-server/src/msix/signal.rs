//! The thread that writes the vectors' eventfds, so that no other thread ever waits on one.
//!
//! The eventfds are made non-blocking ([`prepare_eventfd`](super::prepare_eventfd)), but
//! O_NONBLOCK is a flag of the open file, which the client shares and may clear again, and an
//! eventfd cannot be reopened with flags of the server's own. A client that clears it and
//! keeps its counter at the maximum makes a write wait for a reader that never comes. Written
//! from the model's threads under the vectors' lock, that stalled the whole device, the
//! socket thread with it. Here only this thread waits: [`Signaller::send`] queues the
//! message and returns; the rest of the device, and every other vector's messages once the
//! write returns, go on.
//!
//! The queue holds at most one message per vector: a message for a vector already queued
//! coalesces with it (an eventfd counts, and its reader takes the count at once), going to the
//! vector's latest eventfd. So it is bounded by the vector count whatever the client does.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What the thread and the senders share.
struct Queue {
    state: Mutex<State>,
    /// Work queued, or the end: wakes the thread.
    work: Condvar,
    /// The queue emptied and the thread is idle: wakes [`Signaller::settle`].
    idle: Condvar,
}

#[derive(Default)]
struct State {
    /// (vector, its eventfd), at most one per vector, in the order first queued.
    queued: Vec<(u16, Arc<File>)>,
    /// The thread is writing a batch it took off the queue.
    writing: bool,
    /// The signaller was dropped: the thread ends.
    stop: bool,
}

/// Hands messages to the writing thread (see the module doc).
pub(super) struct Signaller {
    queue: Arc<Queue>,
    /// No thread could be started: messages are written by the sender, as before there was
    /// one (non-blocking unless the client clears the flag).
    inline: bool,
}

impl Signaller {
    /// Starts the thread. The thread is not joined: a write the client keeps waiting must not
    /// hold up the device's teardown; it ends once its write returns. If the system refuses
    /// a thread, messages are written inline.
    pub fn new() -> Signaller {
        let queue = Arc::new(Queue {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            idle: Condvar::new(),
        });
        let q = queue.clone();
        let inline = std::thread::Builder::new()
            .name("msix-signal".into())
            .spawn(move || run(&q))
            .is_err();
        Signaller { queue, inline }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.queue.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a message for `vector` on `fd`; never waits for the write.
    pub fn send(&self, vector: u16, fd: &Arc<File>) {
        if self.inline {
            signal(fd);
            return;
        }
        let mut st = self.lock();
        match st.queued.iter_mut().find(|(v, _)| *v == vector) {
            Some(slot) => slot.1 = fd.clone(),
            None => st.queued.push((vector, fd.clone())),
        }
        drop(st);
        self.queue.work.notify_one();
    }

    /// Waits up to `within` for every message queued so far to be written; false if some
    /// still wait (a client holds a write up).
    pub fn settle(&self, within: Duration) -> bool {
        let end = Instant::now() + within;
        let mut st = self.lock();
        while !st.queued.is_empty() || st.writing {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.queue.idle.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        true
    }
}

impl Drop for Signaller {
    fn drop(&mut self) {
        self.lock().stop = true;
        self.queue.work.notify_one();
    }
}

/// The thread: writes what is queued, batch by batch, until the signaller goes.
fn run(q: &Queue) {
    let lock = || q.state.lock().unwrap_or_else(|e| e.into_inner());
    let mut st = lock();
    loop {
        if !st.queued.is_empty() {
            let batch = std::mem::take(&mut st.queued);
            st.writing = true;
            drop(st);
            for (_, fd) in &batch {
                signal(fd);
            }
            drop(batch);
            st = lock();
            st.writing = false;
            continue;
        }
        q.idle.notify_all();
        if st.stop {
            return;
        }
        st = q.work.wait(st).unwrap_or_else(|e| e.into_inner());
    }
}

/// Signals an eventfd (adds 1 to its counter). EAGAIN (non-blocking, as prepared) means the
/// counter is at its maximum, so it is non-zero and the reader will wake: the message is
/// delivered, coalesced with the ones counted before it. Any other failure only loses a
/// message the client can no longer take.
fn signal(fd: &File) {
    let mut f = fd;
    loop {
        match f.write(&1u64.to_ne_bytes()) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            _ => return,
        }
    }
}
