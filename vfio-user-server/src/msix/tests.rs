use super::*;
use std::io::Read;
use std::os::fd::FromRawFd;

fn eventfd() -> File {
    // SAFETY: eventfd returns a new descriptor we own (or -1, checked).
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: fd is a fresh, owned descriptor.
    unsafe { File::from_raw_fd(fd) }
}

/// The eventfd's counter (0 if never signalled), resetting it.
fn take(fd: &File) -> u64 {
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
    assert!(m.raise(1));
    assert_eq!(take(&fd), 2);
    assert_eq!(m.sent()[1], 2);
    assert_eq!(m.pba(), vec![0]);
}

#[test]
fn a_vector_without_an_eventfd_latches_and_fires_when_one_arrives() {
    let m = Msix::new(4);
    assert!(m.raise(2));
    assert_eq!(m.pba(), vec![1 << 2]);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 2, 1, vec![dup(&fd)]).unwrap();
    assert_eq!(
        take(&fd),
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
    assert_eq!(take(&fd), 0);
    assert_eq!(m.pba(), vec![1]);
    m.set(IrqAction::Unmask, 0, 1, vec![]).unwrap();
    assert_eq!(take(&fd), 1);
    // The function mask holds every vector.
    m.set_function_mask(true);
    m.raise(0);
    assert_eq!(take(&fd), 0);
    m.set_function_mask(false);
    assert_eq!(take(&fd), 1);
    // So does the table's vector-control bit.
    m.set_vector_mask(0, true);
    m.raise(0);
    assert_eq!(take(&fd), 0);
    m.set_vector_mask(0, false);
    assert_eq!(take(&fd), 1);
}

#[test]
fn no_message_while_bus_mastering_is_off() {
    let m = Msix::new(4);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 3, 1, vec![dup(&fd)]).unwrap();
    m.set_bus_master(false);
    assert!(m.raise(3));
    assert_eq!(take(&fd), 0, "a message went out with bus mastering off");
    assert_eq!(m.pba(), vec![1 << 3]);
    m.set_bus_master(true);
    assert_eq!(take(&fd), 1, "the pending message goes out when it is back");
    assert_eq!(m.pba(), vec![0]);
}

#[test]
fn removing_an_eventfd_keeps_later_messages() {
    let m = Msix::new(4);
    let fd = eventfd();
    m.set(IrqAction::Trigger, 3, 1, vec![dup(&fd)]).unwrap();
    m.set(IrqAction::Trigger, 3, 1, vec![]).unwrap(); // QEMU's -1 descriptor
    m.raise(3);
    assert_eq!(take(&fd), 0);
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
    assert_eq!(take(&fd), 1);
}
