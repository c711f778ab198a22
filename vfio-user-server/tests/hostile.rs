//! Hostile framing against the server binary: each message here broke the protocol crate on
//! its own (a panic, a multi-GiB allocation, a stream out of step). Through the relay each
//! gets an error reply and the same connection goes on working; a size no message can have
//! ends only that session.
//!
//! Run with `MLX5_VFIO_USER_NO_RELAY=1` (the server's hidden `--no-relay`) these tests fail:
//! that is how they were shown to test the relay.

mod common;

use common::*;
use std::os::fd::{AsRawFd, OwnedFd};

const EINVAL: u32 = 22;
const ENOSYS: u32 = 38;

/// One hostile message: what it is, its bytes (header included), its descriptors, the errno.
struct Hostile {
    what: &'static str,
    bytes: Vec<u8>,
    fds: Vec<OwnedFd>,
    errno: u32,
}

fn hostile(r: &mut Raw) -> Vec<Hostile> {
    let mut v = Vec::new();
    let mut add = |what, bytes: Vec<u8>, fds: Vec<OwnedFd>, errno| {
        v.push(Hostile {
            what,
            bytes,
            fds,
            errno,
        })
    };
    let msg = |r: &mut Raw, command: u16, flags: u32, body: &[u8]| {
        let mut m = r.header_with(command, 16 + body.len() as u32, flags);
        m.extend_from_slice(body);
        m
    };
    add("VERSION of 16 bytes", msg(r, 1, 0, &[]), vec![], EINVAL);
    add(
        "VERSION without a NUL",
        msg(r, 1, 0, b"\0\0\0\0{\"capabilities\":{}}"),
        vec![],
        EINVAL,
    );
    add(
        "REGION_READ of 4 GiB",
        msg(r, 9, 0, &region_access(0, CONFIG, 0xffff_ffff)),
        vec![],
        EINVAL,
    );
    let mut w = region_access(0, CONFIG, 64);
    w.extend_from_slice(&[0; 4]);
    add(
        "REGION_WRITE whose size disagrees with its count",
        msg(r, 10, 0, &w),
        vec![],
        EINVAL,
    );
    let mut long = region_access(0, CONFIG, 4);
    long.extend_from_slice(&[0xee; 12]);
    add(
        "REGION_READ with bytes after its fixed part",
        msg(r, 9, 0, &long),
        vec![],
        EINVAL,
    );
    add(
        "DEVICE_GET_INFO with bytes after its fixed part",
        msg(r, 4, 0, &[0; 24]),
        vec![],
        EINVAL,
    );
    add(
        "unknown command 99",
        msg(r, 99, 0, &[0x55; 40]),
        vec![],
        ENOSYS,
    );
    add("DMA_READ", msg(r, 11, 0, &[0; 24]), vec![], ENOSYS);
    add(
        "a reply where a command belongs",
        msg(r, 9, 1, &region_access(0, CONFIG, 4)),
        vec![],
        EINVAL,
    );
    // Refused messages that asked for no reply get none (errno 0 here: expect no reply).
    add(
        "REGION_READ with NoReply",
        msg(r, 9, 1 << 4, &region_access(0, CONFIG, 4)),
        vec![],
        0,
    );
    let mut posted = region_access(1 << 40, BAR0, 4);
    posted.extend_from_slice(&[0; 4]);
    add(
        "a posted (NoReply) REGION_WRITE past BAR 0",
        msg(r, 10, 1 << 4, &posted),
        vec![],
        0,
    );
    add(
        "SET_IRQS with more fds than its count",
        msg(r, 8, 0, &set_irqs_body(0x24, 2, 0, 1)),
        vec![eventfd(), eventfd()],
        EINVAL,
    );
    add(
        "DMA_MAP with 3 fds",
        msg(r, 2, 0, &dma_map_body(3, 0, 0x10_0000, 1 << 20)),
        vec![memfd(1 << 20), memfd(1 << 20), memfd(1 << 20)],
        EINVAL,
    );
    add(
        "GET_REGION_IO_FDS (the crate does not have it)",
        msg(r, 6, 0, &[0; 16]),
        vec![],
        ENOSYS,
    );
    v
}

#[test]
fn after_each_hostile_message_the_same_connection_still_works() {
    let s = Server::start("hostile");
    let mut r = Raw::connect(&s.sock());
    r.version();
    assert_eq!(r.vendor_id(), 0x15b3);
    let all = hostile(&mut r);
    let n = all.len() as u64;
    for h in all {
        let id = u16::from_le_bytes([h.bytes[0], h.bytes[1]]);
        let fds: Vec<i32> = h.fds.iter().map(|f| f.as_raw_fd()).collect();
        r.send(&h.bytes, &fds);
        if h.errno == 0 {
            // No reply: the next one is the vendor-id read's.
            assert_eq!(r.vendor_id(), 0x15b3, "after {}", h.what);
            continue;
        }
        let reply = r.reply_full();
        assert!(reply.error(), "{}: no error", h.what);
        assert_eq!(reply.errno, h.errno, "{}", h.what);
        assert_eq!(reply.id, id, "{}: reply id", h.what);
        assert_eq!(reply.flags & 0xf, 1, "{}: a reply", h.what);
        assert_eq!(r.vendor_id(), 0x15b3, "after {}", h.what);
    }
    let st = s.control("status");
    assert_eq!(st["session"], 1, "{st}");
    assert_eq!(st["relay_rejected_messages"].as_u64(), Some(n), "{st}");
    assert_eq!(st["dma_maps"], 0, "{st}");
}

#[test]
fn pipelined_messages_get_replies_matched_by_id() {
    let s = Server::start("pipeline");
    let mut r = Raw::connect(&s.sock());
    r.version();
    // A good read, a refused one, a good one, sent before any reply is read.
    let mut m = Vec::new();
    let mut ids = Vec::new();
    for count in [4u32, 0xffff_ffff, 2] {
        let h = r.header(9, 32);
        ids.push(u16::from_le_bytes([h[0], h[1]]));
        m.extend_from_slice(&h);
        m.extend_from_slice(&region_access(0, CONFIG, count));
    }
    r.send(&m, &[]);
    let mut got: Vec<(u16, bool)> = (0..3)
        .map(|_| {
            let rep = r.reply_full();
            (rep.id, rep.error())
        })
        .collect();
    got.sort();
    let mut want = vec![(ids[0], false), (ids[1], true), (ids[2], false)];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(r.vendor_id(), 0x15b3);
}

fn kib(s: &Server) -> (u64, u64, u64) {
    (s.vm_kib("VmHWM"), s.vm_kib("VmRSS"), s.vm_kib("VmPeak"))
}

#[test]
fn memory_stays_bounded_under_huge_read_counts() {
    let mut s = Server::start("memory");
    let mut r = Raw::connect(&s.sock());
    r.version();
    assert_eq!(r.vendor_id(), 0x15b3);
    let before = kib(&s);
    for _ in 0..100 {
        let (error, _, _) = r.call(9, &region_access(0, CONFIG, 0xffff_0000));
        assert!(error);
    }
    assert_eq!(r.vendor_id(), 0x15b3);
    assert!(s.alive());
    let after = kib(&s);
    // Resident peak, resident now, address space peak: none grows by 64 MiB (the crate alone
    // allocated 4 GiB per message).
    let limit = 64 << 10;
    assert!(after.0 < before.0 + limit, "VmHWM {before:?} -> {after:?}");
    assert!(after.1 < before.1 + limit, "VmRSS {before:?} -> {after:?}");
    assert!(after.2 < before.2 + limit, "VmPeak {before:?} -> {after:?}");
}

#[test]
fn a_size_no_message_can_have_ends_the_session_only() {
    let mut s = Server::start("oversize");
    let mut r = Raw::connect(&s.sock());
    r.version();
    assert_eq!(r.vendor_id(), 0x15b3);
    // A REGION_WRITE declaring 2 GiB: the fixed part follows, the data never does.
    let mut m = r.header(10, 0x8000_0000);
    m.extend_from_slice(&region_access(0, CONFIG, 0));
    r.send(&m, &[]);
    assert!(r.closed(), "the connection stays open");
    s.wait_session(2);
    assert!(s.alive());
    let st = s.control("status");
    assert_eq!(st["relay_closed_connections"], 1, "{st}");
    // A fresh device for the next client, which behaves.
    probe(&s.sock());
    let mut r = Raw::connect(&s.sock());
    r.version();
    assert_eq!(r.vendor_id(), 0x15b3);
    // A size below the header's own: the same.
    let mut m = r.header(9, 8);
    m.extend_from_slice(&region_access(0, CONFIG, 4));
    r.send(&m, &[]);
    assert!(r.closed(), "the connection stays open");
    s.wait_session(4);
    assert!(s.alive());
}

const ENOSPC: u32 = 28;
const MSIX: u32 = 2;
const ERR_IRQ: u32 = 3;
const REQ_IRQ: u32 = 4;
/// SET_IRQS flags: DATA_EVENTFD | ACTION_TRIGGER.
const EVENTFD_TRIGGER: u32 = 0x24;

/// A pipe: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut ends = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array (checked).
    assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are fresh and ours.
    unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) }
}

fn fd_flags(fd: &OwnedFd) -> i32 {
    // SAFETY: F_GETFL on our own descriptor; no memory is passed.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) }
}

/// An interrupt descriptor is written from the model's threads with the MSI-X lock held: one
/// that could block (a pipe, a blocking eventfd at its maximum) would stall the server. Only
/// eventfds are taken, and they are made non-blocking.
#[test]
fn interrupt_descriptors_are_eventfds_that_never_block() {
    let s = Server::start("irqfds");
    let mut r = Raw::connect(&s.sock());
    r.version();
    for index in [MSIX, ERR_IRQ, REQ_IRQ] {
        let (_read, write) = pipe();
        let (error, errno, _) = r.call_fd(
            8,
            &set_irqs_body(EVENTFD_TRIGGER, index, 0, 1),
            write.as_raw_fd(),
        );
        assert!(error, "index {index}: a pipe taken as an interrupt eventfd");
        assert_eq!(errno, EINVAL, "index {index}");
    }
    for index in [MSIX, ERR_IRQ, REQ_IRQ] {
        // SAFETY: eventfd's result is checked.
        let raw = unsafe { libc::eventfd(0, 0) };
        assert!(raw >= 0);
        // SAFETY: a fresh descriptor, ours.
        let ev = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        assert_eq!(fd_flags(&ev) & libc::O_NONBLOCK, 0);
        let (error, _, _) = r.call_fd(
            8,
            &set_irqs_body(EVENTFD_TRIGGER, index, 0, 1),
            ev.as_raw_fd(),
        );
        assert!(!error, "index {index}: a blocking eventfd refused");
        assert_ne!(
            fd_flags(&ev) & libc::O_NONBLOCK,
            0,
            "index {index}: the server may block writing it"
        );
    }
    assert_eq!(r.vendor_id(), 0x15b3);
}

/// DMA_MAP: a 4 KiB DMA_MAP at this IOVA (read and write) of `fd` from file offset 0.
fn dma_map_page(r: &mut Raw, fd: &OwnedFd, iova: u64) -> (bool, u32) {
    let (error, errno, _) = r.call_fd(2, &dma_map_body(3, 0, iova, 4096), fd.as_raw_fd());
    (error, errno)
}

/// A file the client could shrink after DMA_MAP would leave the server's mapping pointing
/// past its end: the model's next access there is a SIGBUS that kills the server. Only files
/// sealed against shrinking are mapped.
#[test]
fn guest_memory_cannot_shrink_under_the_server() {
    use std::os::unix::fs::FileExt;
    let mut s = Server::start("shrink");
    let mut r = Raw::connect(&s.sock());
    r.version();
    let unsealable = memfd_with(1 << 20, 0);
    let (error, errno) = dma_map_page(&mut r, &unsealable, 0x10_0000);
    assert!(error, "a memfd that cannot be sealed was mapped");
    assert_eq!(errno, EINVAL);
    let ram = std::fs::File::from(memfd(1 << 20));
    let iova = 0x20_0000u64;
    let (error, _) = dma_map_page(&mut r, &ram.try_clone().unwrap().into(), iova);
    assert!(!error);
    // The command queue's first entry (ENABLE_HCA, inline) in the mapped page.
    let mut entry = [0u8; 64];
    entry[0] = 7;
    entry[4..8].copy_from_slice(&16u32.to_be_bytes());
    entry[0x10..0x14].copy_from_slice(&(0x104u32 << 16).to_be_bytes());
    entry[0x38..0x3c].copy_from_slice(&16u32.to_be_bytes());
    entry[0x3f] = 1;
    ram.write_all_at(&entry, 0).unwrap();
    let shrunk = ram.set_len(0).is_ok();
    let write = |r: &mut Raw, region: u32, off: u64, data: &[u8]| {
        let mut body = region_access(off, region, data.len() as u32);
        body.extend_from_slice(data);
        let (error, _, _) = r.call(10, &body);
        assert!(!error);
    };
    write(&mut r, BAR0, 0x10, &0u32.to_be_bytes());
    write(&mut r, BAR0, 0x14, &(iova as u32).to_be_bytes());
    write(&mut r, CONFIG, 4, &0x0006u16.to_le_bytes()); // bus mastering on
    write(&mut r, BAR0, 0x18, &1u32.to_be_bytes()); // doorbell: the model reads the entry
    let t = std::time::Instant::now();
    let mut owner = [1u8; 1];
    while s.alive() && owner[0] & 1 != 0 && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        if ram.read_at(&mut owner, 0x3f).unwrap_or(0) == 0 {
            owner[0] = 1;
        }
    }
    assert!(s.alive(), "the server died touching a truncated mapping");
    assert!(!shrunk, "the client truncated a mapped file");
    assert_eq!(owner[0] & 1, 0, "the command never completed");
}

/// The byte limit counts what the server maps: a one-page region of a sparse 60 TiB file
/// would map all of it.
#[test]
fn a_small_region_of_a_huge_sparse_file_is_refused() {
    let s = Server::start("hugefile");
    let mut r = Raw::connect(&s.sock());
    r.version();
    let peak = s.vm_kib("VmPeak");
    let huge = memfd(60 << 40);
    let (error, errno) = dma_map_page(&mut r, &huge, 0x10_0000);
    let grown = s.vm_kib("VmPeak") - peak;
    assert!(error, "mapped (address space grew by {grown} KiB)");
    assert_eq!(errno, ENOSPC);
    assert!(grown < 1 << 20, "address space grew by {grown} KiB");
    assert_eq!(r.vendor_id(), 0x15b3);
}

/// Posted (NoReply) messages the backend refuses get no reply either: QEMU takes an
/// unexpected reply as a protocol error.
#[test]
fn a_refused_posted_message_gets_no_reply() {
    let s = Server::start("posted");
    let mut r = Raw::connect(&s.sock());
    r.version();
    let posted = |r: &mut Raw, command: u16, body: &[u8]| {
        let mut m = r.header_with(command, 16 + body.len() as u32, 1 << 4);
        m.extend_from_slice(body);
        r.send(&m, &[]);
    };
    // A 3-byte BAR write (the backend takes 1, 2, 4 or 8), an unmap of nothing, a SET_IRQS
    // with two action bits.
    let mut w = region_access(0, BAR0, 3);
    w.extend_from_slice(&[0; 3]);
    posted(&mut r, 10, &w);
    let mut unmap = 24u32.to_le_bytes().to_vec();
    unmap.extend_from_slice(&0u32.to_le_bytes());
    unmap.extend_from_slice(&0x10_0000u64.to_le_bytes());
    unmap.extend_from_slice(&4096u64.to_le_bytes());
    posted(&mut r, 3, &unmap);
    posted(&mut r, 8, &set_irqs_body(0x2c, MSIX, 0, 0));
    // An accepted posted write still takes effect, silently: memory space on.
    let mut cmd = region_access(4, CONFIG, 2);
    cmd.extend_from_slice(&0x0002u16.to_le_bytes());
    posted(&mut r, 10, &cmd);
    // The next reply is this read's.
    let (error, _, data) = r.call(9, &region_access(4, CONFIG, 2));
    assert!(!error, "an error reply to a posted message came instead");
    assert_eq!(data[16] & 2, 2);
    assert_eq!(r.vendor_id(), 0x15b3);
    // The same unmap, not posted: answered, with its own errno (ENOENT), not one left over
    // from the posted refusals above.
    let (error, errno, _) = r.call(3, &unmap);
    assert!(error);
    assert_eq!(errno, 2);
    let st = s.control("status");
    assert_eq!(st["session"], 1, "{st}");
}
