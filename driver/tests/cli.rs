//! The `mlx5` tool on the device model: every command's output is snapshotted (text and
//! JSON), and bad requests fail with exit status 1 and a message that names what failed.

mod cli_common;

use cli_common::{fails, mlx5, ok};

#[test]
fn link_shows_and_changes() {
    insta::assert_snapshot!("link", ok(&["link"]));
    insta::assert_snapshot!("link_json", ok(&["link", "--json"]));
    let down = ok(&["link", "down"]);
    assert!(down.contains("\tLink detected: no\n"), "{down}");
    assert!(down.contains("\tSpeed: Unknown!\n"), "{down}");
    insta::assert_snapshot!(
        "link_advertise",
        ok(&["link", "advertise", "25000baseSR/Full", "eth_10gbase_sr"])
    );
    let mtu = ok(&["link", "mtu", "9000"]);
    assert!(
        mtu.contains("\tMTU: 9000 (in use 9000, max 9978)\n"),
        "{mtu}"
    );
    let fec = ok(&["link", "fec", "off"]);
    assert!(
        fec.contains("\tConfigured FEC encodings: Off\n\tActive FEC encoding: Off (no_fec)\n"),
        "{fec}"
    );
    let e = fails(&["link", "fec", "sideways"]);
    assert!(
        e.contains("not a FEC encoding (auto, off, baser, rs, llrs)"),
        "{e}"
    );
    let pause = ok(&["link", "pause", "--tx", "on", "--rx", "off"]);
    assert!(pause.contains("\tPause: tx on, rx off\n"), "{pause}");
}

#[test]
fn link_errors_name_the_register() {
    let e = fails(&["link", "mtu", "20"]);
    assert!(
        e.starts_with("mlx5: write of register pmtu (id 0x5003) failed: access_register (opcode 0x805, op_mod 0x0) failed: status 0x03 (bad_param_err), syndrome 0x"),
        "{e}"
    );
    let e = fails(&["--port", "2", "link"]);
    assert!(
        e.starts_with("mlx5: read of register paos (id 0x5006) failed"),
        "{e}"
    );
    let e = fails(&["link", "advertise", "1000baseKX"]);
    assert!(e.contains("register ptys"), "{e}");
    let e = fails(&["link", "advertise", "400000baseSR4"]);
    assert_eq!(e, "mlx5: `400000baseSR4` names no legacy link mode\n");
}

#[test]
fn module_decodes_and_dumps() {
    insta::assert_snapshot!("module", ok(&["module"]));
    insta::assert_snapshot!("module_json", ok(&["module", "--json"]));
    insta::assert_snapshot!("module_hex_page3", ok(&["module", "--hex", "--page", "3"]));
    let e = fails(&["module", "--hex", "--page", "7"]);
    assert!(e.contains("page 0x07") || e.contains("page 7"), "{e}");
    let e = fails(&["module", "--hex", "--i2c", "0x51"]);
    assert!(e.contains("0x51"), "{e}");
}

#[test]
fn caps_lists_the_general_capabilities() {
    insta::assert_snapshot!("caps", ok(&["caps"]));
    let json: serde_json::Value = serde_json::from_str(&ok(&["caps", "--json"])).unwrap();
    assert_eq!(json["general"]["log_max_qp"], 18, "{json}");
    assert_eq!(json["general"]["gid_table_size"], "entries_128");
    assert_eq!(json["firmware_version"], "16.35.1000");
}

#[test]
fn any_register_by_name() {
    insta::assert_snapshot!("reg_list", ok(&["reg", "list"]));
    let list: serde_json::Value = serde_json::from_str(&ok(&["reg", "list", "--json"])).unwrap();
    assert_eq!(list.as_array().unwrap().len(), mlx5_prm::reg::ALL.len());
    insta::assert_snapshot!(
        "reg_read_paos",
        ok(&["reg", "read", "paos", "local_port=1"])
    );
    // By id, with an enum value by name: the same register.
    assert_eq!(
        ok(&["reg", "read", "0x5006", "local_port=1"]),
        ok(&["reg", "read", "PAOS", "local_port=0x1"])
    );
    insta::assert_snapshot!(
        "reg_read_ppcnt_json",
        ok(&[
            "reg",
            "read",
            "ppcnt",
            "local_port=1",
            "grp=rfc_2863",
            "--json"
        ])
    );
    let w = ok(&[
        "reg",
        "write",
        "paos",
        "local_port=1",
        "admin_status=down",
        "ase=true",
    ]);
    assert!(w.contains("admin_status : down (0x2)"), "{w}");
    assert!(w.contains("oper_status  : down (0x2)"), "{w}");
}

#[test]
fn register_requests_that_cannot_work_say_why() {
    let e = fails(&["reg", "read", "nope"]);
    assert!(
        e.starts_with("mlx5: no register `nope` in the spec (registers: ") && e.contains(" paos,"),
        "{e}"
    );
    let e = fails(&["reg", "write", "pcam"]);
    assert_eq!(
        e,
        "mlx5: register access: invalid argument: register pcam is read-only in the spec\n"
    );
    let e = fails(&["reg", "read", "ptys", "lol=1"]);
    assert!(
        e.starts_with("mlx5: ptys: ptys_reg has no field `lol` (fields: an_disable_admin"),
        "{e}"
    );
    let e = fails(&["reg", "read", "paos", "local_port=300"]);
    assert_eq!(e, "mlx5: paos: 0x12c does not fit local_port (8 bits)\n");
    let e = fails(&["reg", "read", "paos", "admin_status=sideways"]);
    assert!(
        e.starts_with(
            "mlx5: paos: `sideways` is not a value of admin_status (paos_port_status: up, down)"
        ),
        "{e}"
    );
    let e = fails(&["reg", "read", "paos", "local_port"]);
    assert_eq!(e, "mlx5: paos: `local_port` is not NAME=VALUE\n");
    let e = fails(&["reg", "read", "paos", "local_port=2"]);
    assert!(e.contains("status 0x03 (bad_param_err)"), "{e}");
    // A VFIO address that is none: a usage error where the build has VFIO (the address does
    // not parse), a failure to open where it does not (the feature is named).
    let (code, _, e) = mlx5(&["--device", "vfio:nothing", "link"]);
    assert!(code == 1 || code == 2, "{code}");
    assert!(e.contains("vfio"), "{e}");
}

#[test]
fn counters_by_ethtool_name_by_group_and_per_second() {
    let all = ok(&["counters"]);
    assert!(
        all.starts_with("Port 1 statistics (PPCNT, as ethtool -S names them):\n"),
        "{all}"
    );
    for name in [
        "tx_packets_phy",
        "rx_64_bytes_phy",
        "rx_prio7_bytes",
        "link_down_events_phy",
        "rx_pcs_symbol_err_phy",
    ] {
        assert!(all.contains(&format!("\t{name} ")), "{name} in {all}");
    }
    insta::assert_snapshot!(
        "counters_ieee_802_3",
        ok(&["counters", "--group", "ieee_802_3"])
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&["counters", "--json"])).unwrap();
    let groups = json.as_array().unwrap();
    assert_eq!(
        groups.len(),
        15,
        "five groups, eight priorities, two physical"
    );
    assert_eq!(groups[0]["counters"][0]["ethtool"], "tx_packets_phy");
    let phy = ok(&["counters", "-g", "phy_statistical"]);
    assert!(phy.contains("\teffective BER (after FEC)"), "{phy}");
    assert!(
        phy.contains(" : 0 (< "),
        "no error yet, and the bound: {phy}"
    );
    let watch: serde_json::Value = serde_json::from_str(&ok(&[
        "counters", "-g", "phy", "--watch", "0.05", "--count", "2", "--json",
    ]))
    .unwrap();
    let samples = watch.as_array().unwrap();
    assert_eq!(samples.len(), 2);
    let ms = samples[0]["per_second"]["time_since_last_clear"]
        .as_f64()
        .unwrap();
    assert!(ms > 500.0, "the clear clock runs at 1000 ms a second: {ms}");
    // A bad argument is a usage error (exit status 2, clap's), naming the choices.
    let (code, _, e) = mlx5(&["counters", "-g", "nope"]);
    assert_eq!(code, 2);
    assert!(
        e.contains("no counter group `nope` (groups: ieee_802_3, "),
        "{e}"
    );
    let e = fails(&["counters", "--watch", "0", "--count", "1"]);
    assert!(e.contains("positive number of seconds"), "{e}");
}

#[test]
fn loopback_self_test_moves_the_counters_it_should() {
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["loopback", "--frames", "300", "--json"])).unwrap();
    assert_eq!(json["frames"], 300);
    assert_eq!(json["verified"], true);
    let moved = &json["counters_moved"];
    assert_eq!(
        (
            moved["tx_packets_phy"].as_u64(),
            moved["rx_packets_phy"].as_u64()
        ),
        (Some(300), Some(300))
    );
    // Lengths 60..=359 (+4 FCS): 1 frame of 64, 63 of 65..=127, 128 of 128..=255, the rest
    // (108) of 256..=511; bytes are their sum.
    assert_eq!(moved["rx_64_bytes_phy"], 1);
    assert_eq!(moved["rx_65_to_127_bytes_phy"], 63);
    assert_eq!(moved["rx_128_to_255_bytes_phy"], 128);
    assert_eq!(moved["rx_256_to_511_bytes_phy"], 108);
    let bytes: u64 = (60..360u64).map(|l| l + 4).sum();
    assert_eq!(moved["tx_bytes_phy"].as_u64(), Some(bytes));
    let text = ok(&["loopback", "--frames", "10", "--size", "100"]);
    assert!(
        text.starts_with(
            "Loopback test on port 1: 10 frames sent and received, every byte checked, in "
        ),
        "{text}"
    );
    assert!(text.contains("\trx_65_to_127_bytes_phy : +10\n"), "{text}");
    let e = fails(&["loopback", "--size", "20"]);
    assert_eq!(e, "mlx5: --size 20: frames are 60 to 1514 bytes\n");
}
