//! The driver against a peer no one here wrote: the Linux kernel's network stack, across a
//! TAP device in a private network namespace (the `ping` example's session). The kernel pings
//! the driver's host, the host pings the kernel, UDP datagrams go to a kernel socket and back;
//! then the driver's, the model's, the TAP cable's and the kernel's own packet counters must
//! all tell the same story, and the pcap capture must hold every frame that crossed the port.
//!
//! Needs root (CI runs as root). Skips, saying why, only where /dev/net/tun does not exist.

#[allow(dead_code)]
#[path = "../examples/ping/session.rs"]
mod session;

use mlx5_sim::Mode;
use pcap_file::pcap::PcapReader;
use session::{Options, Report, HOST_IP, HOST_MAC, KERNEL_IP};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

const COUNT: u16 = 5;
const UDP: u16 = 6;
const SIZE: usize = 200;

fn exchange(mode: Mode, name: &str) -> Option<(Report, Vec<Vec<u8>>)> {
    if !mlx5_sim::tap::available() {
        eprintln!("skipped: /dev/net/tun does not exist, so no TAP device can be made here");
        return None;
    }
    let pcap = std::env::temp_dir().join(format!("mlx5-tap-{name}-{}.pcap", std::process::id()));
    let opts = Options {
        count: COUNT,
        udp: UDP,
        size: SIZE,
        interval: Duration::from_millis(5),
        mode,
        pcap: Some(pcap.clone()),
        stop: Arc::new(AtomicBool::new(false)),
    };
    let report = session::run(&opts, &mut |line| eprintln!("{line}"))
        .unwrap_or_else(|e| panic!("session ({mode:?}): {e}"));
    let file = std::fs::File::open(&pcap).unwrap();
    let mut reader = PcapReader::new(file).expect("a pcap header");
    assert_eq!(
        reader.header().datalink,
        pcap_file::DataLink::ETHERNET,
        "link type"
    );
    let mut frames = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.expect("a well-formed pcap record");
        assert_eq!(p.orig_len as usize, p.data.len());
        frames.push(p.data.into_owned());
    }
    std::fs::remove_file(&pcap).unwrap();
    Some((report, frames))
}

fn check(report: &Report, frames: &[Vec<u8>]) {
    // The kernel's echo requests were answered by the driver's host, payload intact.
    assert_eq!(
        report.kernel_pings.len(),
        COUNT as usize,
        "kernel → driver echoes"
    );
    for (i, e) in report.kernel_pings.iter().enumerate() {
        assert_eq!(e.seq, i as u16 + 1);
        assert_eq!(e.sent.len(), SIZE);
        assert_eq!(e.got, e.sent, "payload of echo {}", e.seq);
    }
    // The kernel answered the host's echo requests.
    assert_eq!(report.pings.len(), COUNT as usize, "driver → kernel echoes");
    for (i, p) in report.pings.iter().enumerate() {
        assert_eq!(p.seq, i as u16 + 1);
        assert_eq!(p.payload, session::payload(p.seq, SIZE));
    }
    // UDP round trips through the kernel's socket.
    assert_eq!(report.udp.len(), UDP as usize);
    for u in &report.udp {
        assert_eq!(u.got, u.sent);
    }
    assert_eq!(report.kernel_udp_echoed, u64::from(UDP));

    // Every side counts the same frames. Driver → model → TAP → kernel:
    let frames_out = report.driver.tx_packets;
    assert_eq!(
        report.model_tx, frames_out,
        "model transmitted what the driver posted"
    );
    assert_eq!(
        report.tap_port.to_kernel, frames_out,
        "the TAP device took them all"
    );
    assert_eq!(report.tap_port.write_errors, 0);
    assert_eq!(
        report.kernel.rx_packets, frames_out,
        "the kernel received them all"
    );
    // Kernel → TAP → model → driver (nothing unasked: IPv6 is off on the TAP device):
    let frames_in = report.kernel.tx_packets;
    assert_eq!(report.tap_port.from_kernel, frames_in);
    assert_eq!(report.model_rx + report.model_dropped, frames_in);
    assert_eq!(
        report.model_dropped, 0,
        "every kernel frame was for the host's MAC or broadcast"
    );
    assert_eq!(
        report.driver.rx_packets, report.model_rx,
        "the driver took every CQE"
    );
    assert_eq!((report.driver.tx_errors, report.driver.rx_errors), (0, 0));
    // At least: one ARP each way, 2 × COUNT echoes each way, UDP there and back.
    assert!(
        frames_out >= u64::from(1 + 2 * COUNT + UDP),
        "{frames_out} frames out"
    );

    // The capture holds each frame once, both directions, in order of crossing.
    assert_eq!(report.pcap_frames, Some(frames_out + frames_in));
    assert_eq!(frames.len() as u64, frames_out + frames_in);
    let from_host = |f: &&Vec<u8>| f[6..12] == HOST_MAC;
    assert_eq!(frames.iter().filter(from_host).count() as u64, frames_out);
    // The host's ARP reply to the kernel: opcode 2, sender MAC and IP ours, target the kernel.
    assert!(
        frames.iter().any(|f| f.len() >= 42
            && f[12..14] == [0x08, 0x06]
            && f[20..22] == [0, 2]
            && f[22..28] == HOST_MAC
            && f[28..32] == HOST_IP
            && f[38..42] == KERNEL_IP),
        "an ARP reply from the host"
    );
    // Echo replies from the host, as IPv4 ICMP type 0 from HOST_IP.
    let replies = frames
        .iter()
        .filter(|f| {
            f.len() >= 42
                && f[12..14] == [0x08, 0x00]
                && f[23] == 1
                && f[26..30] == HOST_IP
                && f[34] == 0
        })
        .count();
    assert_eq!(replies, COUNT as usize, "echo replies in the capture");
}

#[test]
fn ping_and_udp_with_the_kernel_inline() {
    if let Some((report, frames)) = exchange(Mode::Inline, "inline") {
        check(&report, &frames);
    }
}

#[test]
fn ping_and_udp_with_the_kernel_threaded() {
    if let Some((report, frames)) = exchange(Mode::Threaded, "threaded") {
        check(&report, &frames);
    }
}

#[test]
fn a_session_stopped_at_once_still_tears_everything_down() {
    if !mlx5_sim::tap::available() {
        eprintln!("skipped: /dev/net/tun does not exist, so no TAP device can be made here");
        return;
    }
    let opts = Options {
        count: 100,
        udp: 100,
        size: 56,
        interval: Duration::from_millis(100),
        mode: Mode::Inline,
        pcap: None,
        stop: Arc::new(AtomicBool::new(true)),
    };
    let started = std::time::Instant::now();
    let report = session::run(&opts, &mut |_| {}).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a stop request is heeded"
    );
    assert!(report.pings.is_empty() && report.udp.is_empty());
    assert!(report.kernel_pings.is_empty());
    // Whatever crossed (nothing, or an ARP exchange) was counted alike on every side.
    assert_eq!(report.model_tx, report.driver.tx_packets);
    assert_eq!(report.kernel.rx_packets, report.tap_port.to_kernel);
    assert_eq!(report.pcap_frames, None);
}
