//! Anonymous network namespaces: a private network stack of the Linux kernel for a test or a
//! demo, which no other process sees and which disappears with the last handle to it, even
//! when the process is killed (nothing to clean up, unlike `ip netns add`).

use nix::sched::CloneFlags;
use std::fs::File;
use std::io;
use std::thread;

/// A network namespace of this process, alive while this handle (an open descriptor of it)
/// or anything made inside it (a TAP device's descriptor, a socket) is.
#[derive(Debug)]
pub struct NetNs {
    handle: File,
}

/// The calling thread's network namespace, as a file.
fn current() -> io::Result<File> {
    File::open("/proc/thread-self/ns/net")
}

impl NetNs {
    /// Creates a namespace (needs CAP_SYS_ADMIN): it starts with only a loopback interface,
    /// which is down.
    pub fn new() -> io::Result<NetNs> {
        // A thread of its own moves into the new namespace, so the caller's stays as it was.
        let handle = thread::spawn(|| {
            if let Err(e) = nix::sched::unshare(CloneFlags::CLONE_NEWNET) {
                return Err(io::Error::new(
                    io::Error::from(e).kind(),
                    format!("creating a network namespace (needs root or CAP_SYS_ADMIN): {e}"),
                ));
            }
            current()
        })
        .join()
        .map_err(|_| io::Error::other("the namespace thread panicked"))??;
        Ok(NetNs { handle })
    }

    /// Runs `f` on a thread inside the namespace and returns its result: interfaces, TAP
    /// devices and sockets that `f` creates belong to the namespace, wherever they are used
    /// afterwards. A panic in `f` is passed on.
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> io::Result<R> {
        thread::scope(|s| {
            s.spawn(|| {
                self.enter()?;
                Ok(f())
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// Starts a thread inside the namespace (a server a test talks to, say); joining it
    /// gives `f`'s result, or the error of entering the namespace.
    pub fn spawn<R: Send + 'static>(
        &self,
        name: &str,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> io::Result<thread::JoinHandle<io::Result<R>>> {
        let handle = self.handle.try_clone()?;
        thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                enter(&handle)?;
                Ok(f())
            })
    }

    /// Moves the calling thread into the namespace.
    fn enter(&self) -> io::Result<()> {
        enter(&self.handle)
    }
}

/// Moves the calling thread into the namespace `handle` refers to.
fn enter(handle: &File) -> io::Result<()> {
    nix::sched::setns(handle, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_namespace_is_not_the_callers() {
        let Ok(ns) = NetNs::new() else {
            eprintln!("skipped: cannot create a network namespace here (not root?)");
            return;
        };
        let mine = current().unwrap().metadata().unwrap().ino();
        let inside = ns
            .run(|| current().unwrap().metadata().unwrap().ino())
            .unwrap();
        assert_ne!(mine, inside);
        assert_eq!(current().unwrap().metadata().unwrap().ino(), mine);
        let spawned = ns
            .spawn("t", || current().unwrap().metadata().unwrap().ino())
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(spawned, inside);
    }
}
