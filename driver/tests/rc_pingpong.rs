//! The `rc_pingpong` example's parts: the address exchange against literal ibv_rc_pingpong
//! messages (written by hand from its `"%04x:%06x:%06x:%s"` format and its GID encoding, 16
//! bytes as 32 hex digits) and against a byte-level script of its client and server, and the
//! whole ping-pong between two model devices in one process, each side in its own thread with
//! the exchange over loopback TCP: on the in-memory RC fabric, as RoCE v2 frames over a
//! wire, and over a wire that loses frames (the transport's retransmissions recover, and the
//! QPs' counters say so).

#[path = "../examples/rc_pingpong/exchange.rs"]
#[allow(dead_code)]
mod exchange;
#[path = "../examples/rc_pingpong/pingpong.rs"]
#[allow(dead_code)]
mod pingpong;

use exchange::{client_exchange, server_exchange, Dest, ExchangeError, MESSAGE_LEN};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::counters::{QCounter, QCounts};
use mlx5_driver::roce::{ip_gid, link_local_gid, RoceAddress, RocePath};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::QpMtu;
use mlx5_sim::{Config, Device, Faults, RcTransport, Wire};
use pingpong::{Params, Side, Stats};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// ibv_rc_pingpong's message for LID 0, QPN 0x11, PSN 0xabcdef and GID ::ffff:10.0.0.1.
const V4_MSG: &str = "0000:000011:abcdef:00000000000000000000ffff0a000001";
/// And for LID 0x12, QPN 0x1234, PSN 0x0, GID fe80::ff:fe00:1 (the link-local GID of MAC
/// 02:00:00:00:00:01).
const LL_MSG: &str = "0012:001234:000000:fe80000000000000000000fffe000001";

fn wire_bytes(text: &str) -> [u8; MESSAGE_LEN] {
    let mut m = [0u8; MESSAGE_LEN];
    m[..text.len()].copy_from_slice(text.as_bytes());
    m
}

fn v4_dest() -> Dest {
    Dest {
        lid: 0,
        qpn: 0x11,
        psn: 0xab_cdef,
        gid: ip_gid(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
    }
}

#[test]
fn messages_are_ibv_rc_pingpongs() {
    assert_eq!(V4_MSG.len() + 1, MESSAGE_LEN);
    assert_eq!(v4_dest().to_wire(), wire_bytes(V4_MSG));
    assert_eq!(Dest::from_wire(&wire_bytes(V4_MSG)), Ok(v4_dest()));
    let ll = Dest {
        lid: 0x12,
        qpn: 0x1234,
        psn: 0,
        gid: link_local_gid([2, 0, 0, 0, 0, 1]).octets(),
    };
    assert_eq!(ll.to_wire(), wire_bytes(LL_MSG));
    assert_eq!(Dest::from_wire(&wire_bytes(LL_MSG)), Ok(ll));
    // The lines printed, as ibv_rc_pingpong prints them (inet_ntop's spelling of the GID).
    assert_eq!(
        format!("  local address:  {}", v4_dest()),
        "  local address:  LID 0x0000, QPN 0x000011, PSN 0xabcdef, GID ::ffff:10.0.0.1"
    );
    assert_eq!(
        format!("  remote address: {ll}"),
        "  remote address: LID 0x0012, QPN 0x001234, PSN 0x000000, GID fe80::ff:fe00:1"
    );
    // A zero GID (no -g) goes out as 32 zeros and prints as "::".
    let none = Dest {
        gid: [0; 16],
        ..v4_dest()
    };
    assert!(none
        .to_wire()
        .starts_with(b"0000:000011:abcdef:0000000000000000"));
    assert!(format!("{none}").ends_with("GID ::"));
    // Malformed messages are refused, not guessed at.
    for bad in [
        "0000:000011:abcdef",
        "0000:000011:abcdef:00ff",
        "0000:0000zz:abcdef:00000000000000000000ffff0a000001",
        "10000:000011:abcdef:00000000000000000000ffff0a000001",
    ] {
        assert!(Dest::from_wire(&wire_bytes(bad)).is_err(), "{bad}");
    }
}

/// A connected pair of loopback TCP streams.
fn tcp_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    for t in [&s, &c] {
        t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    (s, c)
}

#[test]
fn the_server_side_talks_to_ibv_rc_pingpongs_client() {
    let (mut server, mut client) = tcp_pair();
    let mine = v4_dest();
    let peer = std::thread::spawn(move || {
        // ibv_rc_pingpong's client: its message, the server's, then "done" and the NUL.
        client.write_all(&wire_bytes(LL_MSG)).unwrap();
        let mut theirs = [0u8; MESSAGE_LEN];
        client.read_exact(&mut theirs).unwrap();
        client.write_all(b"done\0").unwrap();
        theirs
    });
    let mut connected_to = None;
    let got = server_exchange(&mut server, &mine, |d| {
        connected_to = Some(*d);
        Ok::<(), String>(())
    })
    .unwrap();
    assert_eq!(peer.join().unwrap(), wire_bytes(V4_MSG));
    assert_eq!(Dest::from_wire(&wire_bytes(LL_MSG)), Ok(got));
    assert_eq!(connected_to, Some(got), "connected before answering");
}

#[test]
fn the_client_side_talks_to_ibv_rc_pingpongs_server() {
    let (mut server, mut client) = tcp_pair();
    let peer = std::thread::spawn(move || {
        // ibv_rc_pingpong's server: the client's message, its own, then the client's "done".
        let mut theirs = [0u8; MESSAGE_LEN];
        server.read_exact(&mut theirs).unwrap();
        server.write_all(&wire_bytes(LL_MSG)).unwrap();
        let mut done = [0u8; 5];
        server.read_exact(&mut done).unwrap();
        (theirs, done)
    });
    let got = client_exchange(&mut client, &v4_dest()).unwrap();
    let (theirs, done) = peer.join().unwrap();
    assert_eq!(theirs, wire_bytes(V4_MSG));
    assert_eq!(&done, b"done\0");
    assert_eq!(Ok(got), Dest::from_wire(&wire_bytes(LL_MSG)));
}

#[test]
fn a_server_refuses_a_client_that_does_not_say_done() {
    let (mut server, mut client) = tcp_pair();
    let peer = std::thread::spawn(move || {
        client.write_all(&wire_bytes(LL_MSG)).unwrap();
        let mut theirs = [0u8; MESSAGE_LEN];
        client.read_exact(&mut theirs).unwrap();
        client.write_all(b"nope\0").unwrap();
    });
    let r = server_exchange(&mut server, &v4_dest(), |_| Ok::<(), String>(()));
    peer.join().unwrap();
    assert!(matches!(r, Err(ExchangeError::Io(_))), "{r:?}");
}

/// One side's device settings.
struct End {
    mac: [u8; 6],
    ip: Ipv4Addr,
}

const ENDS: [End; 2] = [
    End {
        mac: [0x02, 0x4d, 0x4c, 0x58, 0x35, 0x10],
        ip: Ipv4Addr::new(10, 99, 0, 2),
    },
    End {
        mac: [0x02, 0x4d, 0x4c, 0x58, 0x35, 0x11],
        ip: Ipv4Addr::new(10, 99, 0, 3),
    },
];

/// One side of the ping-pong, as the example runs it: GIDs, receives, exchange, connect, run.
fn side(
    hca: &Hca<SimBackend>,
    me: &End,
    peer_mac: [u8; 6],
    params: &Params,
    stream: &mut TcpStream,
    client: bool,
) -> (Stats, QCounts) {
    hca.set_roce_address(
        0,
        &RoceAddress::v2(IpAddr::V6(link_local_gid(me.mac)), me.mac),
    )
    .unwrap();
    hca.set_roce_address(1, &RoceAddress::v2(IpAddr::V4(me.ip), me.mac))
        .unwrap();
    let counter = QCounter::alloc(hca).unwrap();
    let params = &Params {
        counter_set_id: counter.id(),
        ..params.clone()
    };
    let side = Side::new(hca, params).unwrap();
    let gid = hca.query_roce_address(1).unwrap().unwrap().gid();
    let mine = Dest {
        lid: 0,
        qpn: side.qpn(),
        psn: if client { 0x12_3456 } else { 0xff_fff0 },
        gid,
    };
    let path = |remote: &Dest| RocePath::new(remote.gid, peer_mac, 1);
    let connected = if client {
        let remote = client_exchange(stream, &mine).unwrap();
        side.connect(&remote, &path(&remote), mine.psn).unwrap()
    } else {
        let mut side = Some(side);
        let mut connected = None;
        server_exchange(stream, &mine, |remote| {
            connected = Some(
                side.take()
                    .unwrap()
                    .connect(remote, &path(remote), mine.psn)?,
            );
            Ok::<(), String>(())
        })
        .unwrap();
        connected.unwrap()
    };
    let stats = connected.run(client, &mut || {}).unwrap();
    (stats, counter.query(false).unwrap())
}

/// Two devices joined by a wire, each HCA driven by its own thread, `runs` one after another;
/// each port loses one frame in `loss` each way (0: none). The devices (for their counts) and
/// both sides' QP counters of each run.
fn pingpong(
    transport: RcTransport,
    loss: u32,
    runs: &[Params],
) -> ([Arc<Device>; 2], Vec<[QCounts; 2]>) {
    let config = Config {
        rc_transport: transport,
        faults: Faults {
            port_loss: loss,
            ..Faults::default()
        },
        ..Config::default()
    };
    let (ba, da) = SimBackend::new(config.clone());
    let (bb, db) = SimBackend::new(config);
    let mut counts = Vec::new();
    let _wire = Wire::connect(&da, &db);
    let ha = Hca::bring_up(ba, &HcaConfig::default()).unwrap();
    let hb = Hca::bring_up(bb, &HcaConfig::default()).unwrap();
    for params in runs {
        let (mut s, mut c) = tcp_pair();
        let (server, client) = std::thread::scope(|t| {
            let server = t.spawn(|| side(&ha, &ENDS[0], ENDS[1].mac, params, &mut s, false));
            let client = t.spawn(|| side(&hb, &ENDS[1], ENDS[0].mac, params, &mut c, true));
            (server.join().unwrap(), client.join().unwrap())
        });
        let ((server, sc), (client, cc)) = (server, client);
        counts.push([sc, cc]);
        for st in [&server, &client] {
            assert_eq!((st.size, st.iters), (params.size, params.iters));
            assert_eq!(st.checked, if params.check { params.iters } else { 0 });
            let [bytes, iters] = st.summary();
            assert!(
                bytes.starts_with(&format!(
                    "{} bytes in ",
                    params.size as u64 * 2 * u64::from(params.iters)
                )),
                "{bytes}"
            );
            assert!(bytes.ends_with(" Mbit/sec"), "{bytes}");
            assert!(
                iters.starts_with(&format!("{} iters in ", params.iters)),
                "{iters}"
            );
            assert!(iters.ends_with(" usec/iter"), "{iters}");
        }
    }
    assert_eq!(ha.teardown().unwrap().buffers, 0);
    assert_eq!(hb.teardown().unwrap().buffers, 0);
    ([da, db], counts)
}

fn runs() -> Vec<Params> {
    let p = |size, iters, rx_depth, mtu| Params {
        size,
        rx_depth,
        iters,
        mtu,
        check: true,
        timeout: Duration::from_secs(20),
        counter_set_id: 0,
        linger: Duration::ZERO,
        // No ACK timer: on a clean wire nothing needs resending, and a slow or loaded machine
        // (a coverage build took more than 67 ms for a 1 MiB message) must not make the
        // requester resend and the responder count duplicates.
        ack_timeout: 0,
    };
    vec![
        // ibv_rc_pingpong's defaults but fewer iterations.
        p(4096, 200, 500, QpMtu::Mtu1k),
        // Smaller than a WQE's inline room, and one byte.
        p(1, 50, 16, QpMtu::Mtu256),
        // 1 MiB messages at the smallest MTU: 4096 packets each on a RoCE path.
        p(1 << 20, 4, 500, QpMtu::Mtu256),
    ]
}

#[test]
fn pingpong_between_two_devices_on_the_rc_fabric() {
    pingpong(RcTransport::Fabric, 0, &runs());
}

#[test]
fn pingpong_between_two_devices_as_roce_v2_frames() {
    let (devices, counts) = pingpong(RcTransport::Roce, 0, &runs());
    // A clean wire: no retransmission of any kind was needed.
    for c in counts.iter().flatten() {
        assert_eq!(c.nonzero().collect::<Vec<_>>(), vec![], "counters moved");
    }
    for d in &devices {
        assert_eq!(d.faults().frames_lost(), (0, 0));
        let r = d.roce_stats();
        assert!(r.tx_packets > 0 && r.rx_packets > 0, "{r:?}");
        assert_eq!((r.icrc_errors, r.malformed, r.unknown_qpn), (0, 0, 0));
    }
}

#[test]
fn pingpong_over_a_port_losing_one_frame_in_20_recovers() {
    let p = |size, iters, mtu| Params {
        size,
        rx_depth: 64,
        iters,
        mtu,
        check: true,
        timeout: Duration::from_secs(20),
        counter_set_id: 0,
        // ibv_rc_pingpong's pattern ends without a handshake: the side that finishes first
        // stays to answer the other's resends (its ACK of the last message may be lost).
        linger: Duration::from_secs(1),
        ack_timeout: 14,
    };
    // ack_timeout is 14 (67 ms): a lost last packet or ACK costs one timeout.
    let runs = [p(4096, 100, QpMtu::Mtu1k), p(64 << 10, 10, QpMtu::Mtu1k)];
    let (devices, counts) = pingpong(RcTransport::Roce, 20, &runs);
    // Every message arrived intact (pingpong checked each byte); the loss was real on both
    // ports and both directions ...
    for d in &devices {
        let (out, arriving) = d.faults().frames_lost();
        assert!(
            out > 0 && arriving > 0,
            "lost {out} leaving, {arriving} arriving"
        );
    }
    // ... and the transport saw it: requesters timed out or were NAKed (and resent),
    // responders saw packets out of sequence or again.
    let total = |name: &str| -> u32 {
        counts
            .iter()
            .flatten()
            .map(|c| c.get(name).unwrap_or_else(|| panic!("no counter {name}")))
            .sum()
    };
    let resent = total("local_ack_timeout_err") + total("packet_seq_err");
    let seen = total("out_of_sequence") + total("duplicate_request");
    assert!(resent > 0, "no retransmission counted");
    assert!(seen > 0, "no out-of-sequence or duplicate packet counted");
    // Nothing ran out of retries, nothing was refused.
    for name in [
        "req_transport_retries_exceeded",
        "req_remote_invalid_request",
        "req_remote_access_errors",
    ] {
        assert_eq!(total(name), 0, "{name}");
    }
}

#[test]
fn the_summary_uses_ibv_rc_pingpongs_arithmetic() {
    // 4096 bytes, 1000 iters, 0.5 s: 8192000 bytes, 131.07 Mbit/s, 500 usec/iter.
    let s = Stats {
        size: 4096,
        iters: 1000,
        elapsed: Duration::from_millis(500),
        checked: 0,
    };
    assert_eq!(
        s.summary(),
        [
            "8192000 bytes in 0.50 seconds = 131.07 Mbit/sec".to_string(),
            "1000 iters in 0.50 seconds = 500.00 usec/iter".to_string(),
        ]
    );
}
