//! The `rdma_bw` example's parts: perftest's key message against literal messages written
//! from its published format (`KEY_PRINT_FMT_GID` of perftest 25.01:
//! `%04x:%04x:%06x:%06x:%08x:%016llx:` then 16 × `%02x:` then `%08x:`, 108 bytes with the
//! NUL), the payload file syntax and the buffer layout against perftest's macros worked by
//! hand, the server's half of the exchange against a byte-level script of a perftest client,
//! and whole sessions between two model devices as RoCE v2 frames (our client against our
//! server), every test kind, including runs whose data must fail the checks.

#[path = "../examples/rdma_bw/bw.rs"]
#[allow(dead_code)]
mod bw;
#[path = "../examples/rdma_bw/layout.rs"]
#[allow(dead_code)]
mod layout;
#[path = "../examples/rdma_bw/perftest.rs"]
#[allow(dead_code)]
mod perftest;
#[path = "../examples/rdma_bw/session.rs"]
#[allow(dead_code)]
mod session;

use bw::Kind;
use layout::{Layout, Payload, DEFAULT_PAYLOAD};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::roce::{ip_gid, link_local_gid, RoceAddress};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::{Config, RcTransport, Wire};
use perftest::{Key, Oob, Report, Role, KEY_LEN};
use session::{Outcome, Setup};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

/// A key message as perftest's sprintf writes it: LID 0, 16 outstanding reads, QPN 0x11,
/// PSN 0xabcdef, rkey 0x1234, address 0x7f0012345000, GID ::ffff:10.99.0.1, SRQN 0.
const KEY_MSG: &str = "0000:0010:000011:abcdef:00001234:00007f0012345000:\
00:00:00:00:00:00:00:00:00:00:ff:ff:0a:63:00:01:00000000:";

fn key_bytes(text: &str) -> [u8; KEY_LEN] {
    let mut m = [0u8; KEY_LEN];
    m[..text.len()].copy_from_slice(text.as_bytes());
    m
}

fn the_key() -> Key {
    Key {
        lid: 0,
        out_reads: 16,
        qpn: 0x11,
        psn: 0xab_cdef,
        rkey: 0x1234,
        vaddr: 0x7f00_1234_5000,
        gid: ip_gid(IpAddr::V4(Ipv4Addr::new(10, 99, 0, 1))),
        srqn: 0,
    }
}

#[test]
fn key_messages_are_perftests() {
    assert_eq!(KEY_MSG.len() + 1, KEY_LEN);
    assert_eq!(the_key().to_wire(), key_bytes(KEY_MSG));
    assert_eq!(Key::from_wire(&key_bytes(KEY_MSG)), Ok(the_key()));
    // perftest reads fields up to their colons: narrower fields (its own sprintf never
    // writes them) still parse, upper case too.
    let narrow = KEY_MSG.replacen("0000:0010:", "0:10:", 1).to_uppercase();
    assert_eq!(Key::from_wire(&key_bytes(&narrow)), Ok(the_key()));
    for bad in [
        // A field short, the trailing colon gone, a non-hex digit, a GID byte over 0xff, a
        // QPN over 24 bits.
        KEY_MSG.replacen("00000000:", "", 1),
        KEY_MSG.trim_end_matches(':').to_string(),
        KEY_MSG.replacen("abcdef", "abcdeg", 1),
        KEY_MSG.replacen(":ff:ff:", ":ff:1ff:", 1),
        KEY_MSG.replacen("000011", "1000011", 1),
    ] {
        assert!(Key::from_wire(&key_bytes(&bad)).is_err(), "{bad}");
    }
}

#[test]
fn payload_words_are_stored_least_significant_byte_first() {
    let p = Payload::parse("0xAABBCCDD,0x11223344").unwrap();
    assert_eq!(
        p.span(65536, 0, 10),
        [0xdd, 0xcc, 0xbb, 0xaa, 0x44, 0x33, 0x22, 0x11, 0xdd, 0xcc]
    );
    // perftest cuts the pattern to the message size.
    assert_eq!(p.span(2, 0, 5), [0xdd, 0xcc, 0xdd, 0xcc, 0xdd]);
    // Newlines separate words after the first comma, as perftest's reader allows.
    assert_eq!(
        Payload::parse("0xAABBCCDD,0x11223344\n0x01020304"),
        Payload::parse("0xAABBCCDD,0x11223344,0x01020304")
    );
    for bad in [
        "",
        "0xAABBCCD",
        "0xAABBCCDDE",
        "AABBCCDD12",
        "0xAABBCCDG",
        "0xAABBCCDD, 0x11223344",
    ] {
        assert!(Payload::parse(bad).is_err(), "{bad:?}");
    }
    let d = Payload::parse(DEFAULT_PAYLOAD).unwrap();
    assert_eq!(d.span(64, 0, 4), [0x35, 0x58, 0x4c, 0x4d]);
    assert!(d.span(64, 0, 64).iter().all(|&b| b != 0));
}

#[test]
fn the_layout_is_perftests() {
    // BUFF_SIZE = max(size, page); the buffer 2 × INC(BUFF_SIZE); INC(size) the size rounded
    // up to the cache line, at least one line; page / INC(size) slots up to half a page.
    let l = |size| Layout {
        size,
        cycle: 4096,
        line: 64,
    };
    let cases = [
        // size, target, len, inc, slots
        (65536, 65536, 131072, 65536, 1),
        (8, 4096, 8192, 64, 64),
        (100, 4096, 8192, 128, 32),
        (2048, 4096, 8192, 2048, 2),
        (3000, 4096, 8192, 3008, 1),
        (4096, 4096, 8192, 4096, 1),
    ];
    for (size, target, len, inc, slots) in cases {
        let x = l(size);
        assert_eq!(
            (x.target(), x.len(), x.inc(), x.slots()),
            (target, len, inc, slots),
            "{size}"
        );
    }
    // Atomics: message n at slot n mod 64, 64 bytes apart; 1000 of them hit slots 0..40
    // sixteen times and the rest fifteen.
    let a = l(8);
    assert_eq!(
        (a.offset(0), a.offset(1), a.offset(64), a.offset(65)),
        (0, 64, 0, 64)
    );
    assert_eq!(
        (a.hits(1000, 0), a.hits(1000, 39), a.hits(1000, 40)),
        (16, 16, 15)
    );
    assert!(a.written(1000, 7) && !a.written(1000, 8) && a.written(1000, 64));
    assert!(a.written(3, 128) && !a.written(3, 192));
}

/// A connected pair of loopback TCP streams (server end, client end).
fn tcp_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    for t in [&s, &c] {
        t.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    }
    (s, c)
}

fn model(transport: RcTransport) -> (Hca<SimBackend>, std::sync::Arc<mlx5_sim::Device>) {
    let (b, d) = SimBackend::new(Config {
        rc_transport: transport,
        ..Config::default()
    });
    (Hca::bring_up(b, &HcaConfig::default()).unwrap(), d)
}

const MACS: [[u8; 6]; 2] = [
    [2, 0x4d, 0x4c, 0x58, 0x35, 0x10],
    [2, 0x4d, 0x4c, 0x58, 0x35, 0x11],
];
const IPS: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 99, 0, 2), Ipv4Addr::new(10, 99, 0, 3)];

/// GIDs 0 and 1 as the example sets them; returns GID 1.
fn gids(hca: &Hca<SimBackend>, i: usize) -> [u8; 16] {
    let (mac, ip) = (MACS[i], IPS[i]);
    hca.set_roce_address(0, &RoceAddress::v2(IpAddr::V6(link_local_gid(mac)), mac))
        .unwrap();
    hca.set_roce_address(1, &RoceAddress::v2(IpAddr::V4(ip), mac))
        .unwrap();
    hca.query_roce_address(1).unwrap().unwrap().gid()
}

fn setup(kind: Kind, size: usize, iters: u64, payload: &str) -> Setup {
    Setup {
        kind,
        size,
        iters,
        mtu: 1024,
        gid_index: 1,
        payload: Payload::parse(payload).unwrap(),
        depth: 16,
        timeout: Duration::from_secs(20),
        psn: 0x12_3456,
    }
}

#[test]
fn the_server_speaks_to_a_perftest_clients_script() {
    let (hca, _device) = model(RcTransport::Roce);
    let gid = gids(&hca, 0);
    let (server, mut client) = tcp_pair();
    let peer = std::thread::spawn(move || {
        // ib_read_bw's client, byte for byte: each swap written first, then read.
        let mut swap = |mine: &[u8]| {
            client.write_all(mine).unwrap();
            let mut theirs = vec![0u8; mine.len()];
            client.read_exact(&mut theirs).unwrap();
            theirs
        };
        let version = swap(b"6.24\0\0\0\0\0\0\0\0\0\0\0\0");
        let page = swap(&[0, 0, 0x20, 0]); // an 8 KiB page: the larger wins
        let line = swap(&[0, 0, 0, 0x40]);
        let mtu = swap(b"4\0"); // 2048: ours (1024, "3") is smaller
        let keys: Vec<Vec<u8>> = (0..4).map(|_| swap(&key_bytes(KEY_MSG))).collect();
        let mut report = Vec::new();
        for v in [
            65536u64,
            20,
            100f64.to_bits(),
            90f64.to_bits(),
            0.5f64.to_bits(),
        ] {
            report.push(swap(&v.to_be_bytes()));
        }
        let last = swap(&key_bytes(KEY_MSG));
        (version, page, line, mtu, keys, report, last)
    });
    let mut resolve = |g: &[u8; 16]| {
        assert_eq!(*g, the_key().gid);
        Ok(MACS[1])
    };
    let o = session::run(
        &hca,
        server,
        Role::Server,
        &setup(Kind::Read, 65536, 20, DEFAULT_PAYLOAD),
        gid,
        &mut resolve,
        &mut || {},
    )
    .unwrap();
    let (version, page, line, mtu, keys, report, last) = peer.join().unwrap();
    assert_eq!(version, b"6.24\0\0\0\0\0\0\0\0\0\0\0\0");
    assert_eq!((page, line), (vec![0, 0, 0x10, 0], vec![0, 0, 0, 0x40]));
    assert_eq!(mtu, b"3\0");
    let ours = Key::from_wire(&keys[0]).unwrap();
    assert!(keys.iter().chain([&last]).all(|k| k == &keys[0]));
    assert_eq!(
        (ours.lid, ours.out_reads, ours.psn, ours.gid),
        (0, 16, 0x12_3456, gid)
    );
    assert_eq!(
        report,
        vec![vec![0u8; 8]; 5],
        "the server's report is zeros"
    );
    assert_eq!((o.layout.cycle, o.layout.line, o.mtu), (8192, 64, 1024));
    assert_eq!((o.keys.1, o.peer_version.as_str()), (the_key(), "6.24"));
    assert_eq!(
        (o.report.size, o.report.iters, o.report.bw_avg),
        (65536, 20, 90.0)
    );
    assert_eq!(
        o.checked,
        format!("all {} bytes served unchanged", 2 * 65536)
    );
    assert_eq!(hca.teardown().unwrap().buffers, 0);
}

#[test]
fn the_server_refuses_an_old_perftest_and_a_different_run() {
    let (hca, _device) = model(RcTransport::Roce);
    let gid = gids(&hca, 0);
    let s = setup(Kind::Read, 65536, 20, DEFAULT_PAYLOAD);
    let (server, mut client) = tcp_pair();
    let peer = std::thread::spawn(move || {
        client.write_all(b"5.60\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    });
    let r = session::run(
        &hca,
        server,
        Role::Server,
        &s,
        gid,
        &mut |_| Ok(MACS[1]),
        &mut || {},
    );
    peer.join().unwrap();
    assert!(r.unwrap_err().contains("5.70"));
    // A client that reports 10 iterations where 20 were expected.
    let (server, client) = tcp_pair();
    let peer = std::thread::spawn(move || {
        let mut o = Oob::new(client, Role::Client);
        o.versions().unwrap();
        o.sys_data(4096, 64).unwrap();
        o.mtu(3).unwrap();
        for _ in 0..4 {
            o.keys(&the_key()).unwrap();
        }
        let r = Report {
            size: 65536,
            iters: 10,
            bw_peak: 1.0,
            bw_avg: 1.0,
            msg_rate: 1.0,
        };
        o.reports(&r).unwrap();
        o.keys(&the_key()).unwrap();
    });
    let r = session::run(
        &hca,
        server,
        Role::Server,
        &s,
        gid,
        &mut |_| Ok(MACS[1]),
        &mut || {},
    );
    peer.join().unwrap();
    assert!(r.unwrap_err().contains("10 operations"));
    assert_eq!(hca.teardown().unwrap().buffers, 0);
}

/// Our server and our client on two model devices joined by a wire (RoCE v2 frames).
fn pair(server: &Setup, client: &Setup) -> (Result<Outcome, String>, Result<Outcome, String>) {
    let (ha, da) = model(RcTransport::Roce);
    let (hb, db) = model(RcTransport::Roce);
    let _wire = Wire::connect(&da, &db);
    let (ga, gb) = (gids(&ha, 0), gids(&hb, 1));
    let (s, c) = tcp_pair();
    let r = std::thread::scope(|t| {
        let srv = t.spawn(|| {
            session::run(
                &ha,
                s,
                Role::Server,
                server,
                ga,
                &mut |_| Ok(MACS[1]),
                &mut || {},
            )
        });
        let cli = t.spawn(|| {
            session::run(
                &hb,
                c,
                Role::Client,
                client,
                gb,
                &mut |_| Ok(MACS[0]),
                &mut || {},
            )
        });
        (srv.join().unwrap(), cli.join().unwrap())
    });
    assert_eq!(ha.teardown().unwrap().buffers, 0);
    assert_eq!(hb.teardown().unwrap().buffers, 0);
    r
}

#[test]
fn every_test_between_two_devices_as_roce_v2_frames() {
    let runs = [
        (Kind::Write, 65536, 30, "all 65536 bytes written (1 slot(s) of 65536) hold the pattern, the other 65536 bytes unchanged", "30 writes of the pattern sent"),
        (Kind::Write, 100, 50, "all 3200 bytes written (32 slot(s) of 100) hold the pattern, the other 4992 bytes unchanged", "50 writes"),
        (Kind::Read, 65536, 30, "all 131072 bytes served unchanged", "all 1966080 bytes read match the server's buffer"),
        (Kind::Read, 2048, 9, "all 8192 bytes served unchanged", "all 18432 bytes read match"),
        (Kind::FetchAdd, 8, 1000, "64 word(s) each raised by its share of 1000 adds of 1, the other 7680 bytes unchanged", "all 1000 returned values as predicted (big-endian peer memory)"),
        (Kind::FetchAdd, 8, 10, "10 word(s) each raised by its share of 10 adds of 1, the other 8112 bytes unchanged", "all 10 returned values"),
        (Kind::CompareSwap, 8, 200, "all 8192 bytes unchanged", "all 200 returned values as predicted (big-endian"),
    ];
    for (kind, size, iters, server_says, client_says) in runs {
        let s = setup(kind, size, iters, DEFAULT_PAYLOAD);
        let (srv, cli) = pair(&s, &s);
        let (srv, cli) = (srv.unwrap(), cli.unwrap());
        assert!(
            srv.checked.starts_with(server_says),
            "{kind:?} {size}: {}",
            srv.checked
        );
        assert!(
            cli.checked.starts_with(client_says),
            "{kind:?} {size}: {}",
            cli.checked
        );
        // The server got the client's own report.
        assert_eq!(srv.report, cli.report);
        assert_eq!((cli.report.size, cli.report.iters), (size as u64, iters));
        assert!(cli.report.bw_avg > 0.0 && cli.report.msg_rate > 0.0);
        assert_eq!((srv.keys.0, srv.keys.1), (cli.keys.1, cli.keys.0));
        assert_eq!(srv.keys.1.out_reads, bw::OUT_READS);
    }
}

#[test]
fn wrong_data_fails_the_checks() {
    const OTHER: &str = "0x01020304,0x05060708";
    // The client writes another pattern: the server finds the first byte that differs.
    let (srv, cli) = pair(
        &setup(Kind::Write, 4096, 5, DEFAULT_PAYLOAD),
        &setup(Kind::Write, 4096, 5, OTHER),
    );
    assert!(cli.is_ok());
    let e = srv.unwrap_err();
    assert!(
        e.starts_with("buffer byte 4096 (target half, offset 0): 0x04, expected 0x35"),
        "{e}"
    );
    // The server holds another pattern: the client's first read differs.
    let (_, cli) = pair(
        &setup(Kind::Read, 4096, 5, OTHER),
        &setup(Kind::Read, 4096, 5, DEFAULT_PAYLOAD),
    );
    let e = cli.unwrap_err();
    assert!(
        e.starts_with("read 0: byte 0 is 0x04, the server's buffer holds 0x35"),
        "{e}"
    );
    // Atomics on another initial value: the returned value is neither byte order's.
    let (_, cli) = pair(
        &setup(Kind::FetchAdd, 8, 5, OTHER),
        &setup(Kind::FetchAdd, 8, 5, DEFAULT_PAYLOAD),
    );
    assert!(cli
        .unwrap_err()
        .starts_with("atomic 0: returned 0x0403020108070605"));
    // More adds than the server expects: caught by the report before the buffer is read.
    let (srv, _) = pair(
        &setup(Kind::FetchAdd, 8, 5, DEFAULT_PAYLOAD),
        &setup(Kind::FetchAdd, 8, 6, DEFAULT_PAYLOAD),
    );
    assert!(srv.unwrap_err().contains("6 operations"));
}

/// RDMA READs over a port that loses one frame in `one_in`: the requester must re-ask from
/// the first missing response and finish, every byte still checked.
fn reads_over_a_lossy_port(
    one_in: u32,
) -> (Result<Outcome, String>, Result<Outcome, String>, (u64, u64)) {
    let (ha, da) = model(RcTransport::Roce);
    let (hb, db) = model(RcTransport::Roce);
    let _wire = Wire::connect(&da, &db);
    da.faults().port_loss(one_in);
    let (ga, gb) = (gids(&ha, 0), gids(&hb, 1));
    let s = setup(Kind::Read, 65536, 40, DEFAULT_PAYLOAD);
    let (st, ct) = tcp_pair();
    let r = std::thread::scope(|t| {
        let srv = t.spawn(|| {
            session::run(
                &ha,
                st,
                Role::Server,
                &s,
                ga,
                &mut |_| Ok(MACS[1]),
                &mut || {},
            )
        });
        let cli = t.spawn(|| {
            session::run(
                &hb,
                ct,
                Role::Client,
                &s,
                gb,
                &mut |_| Ok(MACS[0]),
                &mut || {},
            )
        });
        (srv.join().unwrap(), cli.join().unwrap())
    });
    let lost = da.faults().frames_lost();
    drop((ha, hb));
    (r.0, r.1, lost)
}

/// Reads over a port losing one frame in 300: after a lost read response the requester asks
/// again from the first missing PSN once, and drops the responses still arriving behind the
/// gap (as rxe's completer does with `started_retry`), instead of starting a new go-back-N for
/// each of them and running out of retries (the model did so until 7a21420; seen against
/// soft-RoCE too, in the rdma milestone's host-client ib_read_bw).
#[test]
fn reads_finish_over_a_lossy_port() {
    let (srv, cli, lost) = reads_over_a_lossy_port(300);
    eprintln!(
        "frames lost: {lost:?}; requester: {:?}",
        cli.as_ref().map(|o| &o.checked)
    );
    assert!(
        lost.0 > 0,
        "the responder's port lost nothing: the test proves nothing"
    );
    assert!(cli.is_ok(), "{cli:?}");
    assert!(srv.is_ok(), "{srv:?}");
}
