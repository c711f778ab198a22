//! The function's Ethernet port on a TAP interface (`--tap`, `--tap-addr`) with a capture
//! (`--pcap`): the server makes the interface in its network namespace (here a fresh one,
//! through `unshare --net`), keeps it from session to session, and writes one capture per
//! session. Needs root and /dev/net/tun; says so and passes without them.

mod common;

use common::{probe, Server};
use std::time::{Duration, Instant};

fn can_run() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tun = std::path::Path::new("/dev/net/tun").exists();
    if !(root && tun) {
        eprintln!("skipped: needs root and /dev/net/tun (root {root}, tun {tun})");
    }
    root && tun
}

#[test]
fn the_port_is_cabled_to_a_tap_interface_and_captured_per_session() {
    if !can_run() {
        return;
    }
    let s = Server::start_with("port", &["unshare", "--net", "--"], |dir| {
        vec![
            "--profile".into(),
            "ethernet".into(),
            "--tap".into(),
            "mlx5p%d".into(),
            "--tap-addr".into(),
            "10.80.0.1/24".into(),
            "--pcap".into(),
            dir.join("port.pcap").display().to_string(),
        ]
    });
    let st = s.control("status");
    let tap = &st["tap"];
    assert_eq!(tap["plugged"], true, "{st}");
    assert!(tap["name"].as_str().unwrap().starts_with("mlx5p"), "{st}");
    assert_eq!(tap["to_kernel"], 0);
    // Session 1's capture exists from the start (its file header written).
    let first = s.dir.join("port.pcap");
    let header = std::fs::read(&first).unwrap();
    assert_eq!(&header[..4], &0xa1b2_c3d4u32.to_le_bytes());
    assert_eq!(header.len(), 24, "no frame yet");
    // A client probes and leaves: session 2 gets a fresh device on the same interface.
    probe(&s.sock());
    s.wait_session(2);
    let t = Instant::now();
    while !s.dir.join("port-2.pcap").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no capture for session 2"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = s.control("status");
    assert_eq!(st["tap"]["plugged"], true, "{st}");
    assert_eq!(st["tap"]["name"], tap["name"], "the same interface");
}

#[test]
fn a_bad_tap_address_is_a_usage_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mlx5-vfio-user"))
        .args([
            "--socket",
            "/nonexistent/s",
            "--tap",
            "t0",
            "--tap-addr",
            "10.0.0.1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("10.77.0.1/24"), "{err}");
}
