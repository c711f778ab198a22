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
