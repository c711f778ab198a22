use super::*;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::Duration;

fn eventfd() -> File {
    // SAFETY: eventfd returns a new descriptor we own (or -1, checked).
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: fd is a fresh, owned descriptor.
    unsafe { File::from_raw_fd(fd) }
}

/// The eventfd's counter (0 if never signalled), resetting it, once `m` has written every
/// message sent so far (its writes are made by a thread of their own).
fn take(m: &Msix, fd: &File) -> u64 {
    assert!(
        m.settle(Duration::from_secs(5)),
        "messages not written in 5 s"
    );
    let mut b = [0u8; 8];
    let mut f = fd;
    match f.read(&mut b) {
        Ok(8) => u64::from_ne_bytes(b),
        _ => 0,
    }
}

fn dup(f: &File) -> File {
    f.try_clone().unwrap()
}

#[test]
fn a_vector_with_an_eventfd_signals_it() {
    let m = Msix::new(4);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 1, 1, vec![dup(&fd)]).unwrap();
    assert!(m.raise(1));
    assert_eq!(take(&m, &fd), 1);
    // Two messages before the writer gets to them may coalesce into one write, as an
    // eventfd's reader takes its whole count as one interrupt anyway.
    assert!(m.raise(1));
    assert!(m.raise(1));
    assert!((1..=2).contains(&take(&m, &fd)));
    assert_eq!(m.sent()[1], 3);
    assert_eq!(m.pba(), vec![0]);
}

/// A client that clears its eventfd's O_NONBLOCK again (it shares the open file) and fills
/// its counter holds up only the writer thread: raising, SET_IRQS and PBA reads go on, other
/// vectors' messages are queued, and the held message arrives once the client reads.
#[test]
fn a_client_that_makes_its_eventfd_block_again_stalls_no_one() {
    let m = std::sync::Arc::new(Msix::new(2));
    let fd = eventfd();
    m.set(IrqAction::Trigger, 0, 1, vec![dup(&fd)]).unwrap();
    // What the client does behind the server's back.
    // SAFETY: F_SETFL with an int argument on a descriptor `fd` keeps open.
    assert_eq!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, 0) }, 0);
    let mut w = &fd;
    w.write_all(&0xffff_ffff_ffff_fffeu64.to_ne_bytes())
        .unwrap();
    let m2 = m.clone();
    assert!(
        returns_in_time(move || {
            m2.raise(0);
            m2.raise(1);
            let _ = m2.pba();
            m2.set_function_mask(false);
        }),
        "the device waited on the client's eventfd"
    );
    assert!(
        !m.settle(Duration::from_millis(200)),
        "the write cannot have gone through"
    );
    // The client reads: the write it held completes.
    let mut b = [0u8; 8];
    let mut r = &fd;
    r.read_exact(&mut b).unwrap();
    assert_eq!(u64::from_ne_bytes(b), 0xffff_ffff_ffff_fffe);
    assert!(m.settle(Duration::from_secs(5)));
    r.read_exact(&mut b).unwrap();
    assert_eq!(u64::from_ne_bytes(b), 1, "the held message arrived");
}

#[test]
fn a_vector_without_an_eventfd_latches_and_fires_when_one_arrives() {
    let m = Msix::new(4);
    assert!(m.raise(2));
    assert_eq!(m.pba(), vec![1 << 2]);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 2, 1, vec![dup(&fd)]).unwrap();
    assert_eq!(
        take(&m, &fd),
        1,
        "the latched message is sent when the fd comes"
    );
    assert_eq!(m.pba(), vec![0]);
}

#[test]
fn masked_vectors_pend_until_unmasked() {
    let m = Msix::new(4);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 0, 1, vec![dup(&fd)]).unwrap();
    m.set(IrqAction::Mask, 0, 1, vec![]).unwrap();
    m.raise(0);
    assert_eq!(take(&m, &fd), 0);
    assert_eq!(m.pba(), vec![1]);
    m.set(IrqAction::Unmask, 0, 1, vec![]).unwrap();
    assert_eq!(take(&m, &fd), 1);
    // The function mask holds every vector.
    m.set_function_mask(true);
    m.raise(0);
    assert_eq!(take(&m, &fd), 0);
    m.set_function_mask(false);
    assert_eq!(take(&m, &fd), 1);
    // So does the table's vector-control bit.
    m.set_vector_mask(0, true);
    m.raise(0);
    assert_eq!(take(&m, &fd), 0);
    m.set_vector_mask(0, false);
    assert_eq!(take(&m, &fd), 1);
}

#[test]
fn no_message_while_bus_mastering_is_off() {
    let m = Msix::new(4);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 3, 1, vec![dup(&fd)]).unwrap();
    m.set_bus_master(false);
    assert!(m.raise(3));
    assert_eq!(
        take(&m, &fd),
        0,
        "a message went out with bus mastering off"
    );
    assert_eq!(m.pba(), vec![1 << 3]);
    m.set_bus_master(true);
    assert_eq!(
        take(&m, &fd),
        1,
        "the pending message goes out when it is back"
    );
    assert_eq!(m.pba(), vec![0]);
}

#[test]
fn removing_an_eventfd_keeps_later_messages() {
    let m = Msix::new(4);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 3, 1, vec![dup(&fd)]).unwrap();
    m.set(IrqAction::Trigger, 3, 1, vec![]).unwrap(); // QEMU's -1 descriptor
    m.raise(3);
    assert_eq!(take(&m, &fd), 0);
    assert_eq!(m.pba(), vec![1 << 3]);
    m.set(IrqAction::Trigger, 0, 0, vec![]).unwrap(); // the whole index off
    assert_eq!(m.pba(), vec![1 << 3]);
}

#[test]
fn bad_ranges_and_fd_counts_are_refused() {
    let m = Msix::new(4);
    assert!(matches!(
        m.set(IrqAction::Trigger, 3, 2, vec![]),
        Err(IrqError::Range { .. })
    ));
    assert!(matches!(
        m.set(IrqAction::Trigger, u32::MAX, 2, vec![]),
        Err(IrqError::Range { .. })
    ));
    assert!(matches!(
        m.set(IrqAction::Trigger, 0, 2, vec![eventfd()]),
        Err(IrqError::FdCount { .. })
    ));
    assert!(!m.raise(4), "vector 4 does not exist");
    assert!(!m.raise(u16::MAX));
}

#[test]
fn reset_clears_pending_and_masks_but_keeps_eventfds() {
    let m = Msix::new(2);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 0, 1, vec![dup(&fd)]).unwrap();
    m.set(IrqAction::Mask, 0, 1, vec![]).unwrap();
    m.raise(0);
    m.raise(1);
    m.reset();
    assert_eq!(m.pba(), vec![0]);
    m.raise(0);
    assert_eq!(take(&m, &fd), 1);
}

/// A blocking eventfd whose counter is one short of its maximum: any further write would
/// wait for a reader (what a hostile client sends to stall the server).
fn full_blocking_eventfd() -> File {
    // SAFETY: eventfd returns a new descriptor we own (or -1, checked).
    let fd = unsafe { libc::eventfd(0, 0) };
    assert!(fd >= 0);
    // SAFETY: fd is a fresh, owned descriptor.
    let f = unsafe { File::from_raw_fd(fd) };
    let mut w = &f;
    w.write_all(&0xffff_ffff_ffff_fffeu64.to_ne_bytes())
        .unwrap();
    f
}

/// Runs `f` on a thread; false if it has not returned within two seconds (the thread is
/// left blocked: the test fails anyway).
fn returns_in_time(f: impl FnOnce() + Send + 'static) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    rx.recv_timeout(std::time::Duration::from_secs(2)).is_ok()
}

#[test]
fn a_full_eventfd_never_blocks_a_raise() {
    let m = std::sync::Arc::new(Msix::new(2));
    let fd = full_blocking_eventfd();
    m.set(IrqAction::Trigger, 0, 1, vec![dup(&fd)]).unwrap();
    let m2 = m.clone();
    assert!(
        returns_in_time(move || {
            m2.raise(0);
        }),
        "raise blocked in write(2) on the client's eventfd"
    );
    // The lock is free: the socket thread's work goes on.
    let m3 = m.clone();
    assert!(returns_in_time(move || {
        m3.set_function_mask(false);
    }));
    assert_eq!(
        take(&m, &fd),
        0xffff_ffff_ffff_fffe,
        "the signal was coalesced"
    );
}

#[test]
fn a_pending_message_flushed_to_a_full_eventfd_never_blocks() {
    let m = std::sync::Arc::new(Msix::new(2));
    m.raise(1);
    let fd = full_blocking_eventfd();
    let m2 = m.clone();
    let f2 = dup(&fd);
    assert!(
        returns_in_time(move || {
            let _ = m2.set(IrqAction::Trigger, 1, 1, vec![f2]);
        }),
        "SET_IRQS blocked flushing a pending message"
    );
    assert_eq!(m.pba(), vec![0], "the message counts as delivered");
}

#[test]
fn only_eventfds_are_taken_for_vectors() {
    let m = Msix::new(2);
    let mut ends = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array (checked).
    assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are fresh and ours.
    let (r, w) = unsafe { (File::from_raw_fd(ends[0]), File::from_raw_fd(ends[1])) };
    assert!(
        m.set(IrqAction::Trigger, 0, 1, vec![w]).is_err(),
        "a pipe taken as a vector's eventfd"
    );
    drop(r);
    let file = File::open("/dev/null").unwrap();
    assert!(m.set(IrqAction::Trigger, 0, 1, vec![file]).is_err());
    m.raise(0);
    assert_eq!(m.pba(), vec![1], "the vector has no descriptor");
}
