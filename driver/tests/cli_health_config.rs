//! `mlx5 health` and `mlx5 config` on the device model: output snapshotted (the health
//! counter, which runs on the clock, is masked), the monitor's verdict, and requests that fail
//! with exit status 1 and a message naming the setting.

mod cli_common;

use cli_common::{fails, mlx5, ok};

/// The text with the health counter's value masked.
fn mask_counter(text: &str) -> String {
    text.lines()
        .map(|l| match l.split_once("Health counter   : ") {
            Some((head, n)) if n.parse::<u32>().is_ok() => {
                format!("{head}Health counter   : [counter]")
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn health_reports_and_monitors() {
    insta::assert_snapshot!("health", mask_counter(&ok(&["health"])));
    let mut json: serde_json::Value = serde_json::from_str(&ok(&["health", "--json"])).unwrap();
    assert!(json["health_counter"].as_u64().unwrap() >= 1);
    json["health_counter"] = "[counter]".into();
    insta::assert_snapshot!("health_json", serde_json::to_string_pretty(&json).unwrap());

    let text = ok(&["health", "--polls", "3", "--interval", "40"]);
    assert!(text.contains("\tPolls   : 3 of 3, 40 ms apart\n"), "{text}");
    assert!(
        text.contains("\tMisses  : 0 in a row (fatal at 3)\n"),
        "{text}"
    );
    assert!(text.ends_with("\tVerdict : healthy\n"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "health",
        "--json",
        "--polls",
        "2",
        "--interval",
        "40",
    ]))
    .unwrap();
    assert_eq!(json["monitor"]["status"]["verdict"], "healthy", "{json}");
    assert_eq!(json["monitor"]["status"]["polls"], 2);
    assert_eq!(json["monitor"]["config"]["interval_ms"], 40);
    assert_eq!(json["healthy"], true);
    // A usage error is clap's (exit status 2).
    let (code, _, e) = mlx5(&["health", "--polls", "x"]);
    assert_eq!(code, 2);
    assert!(e.contains("--polls"), "{e}");
}

#[test]
fn config_queries_and_sets() {
    insta::assert_snapshot!("config_query", ok(&["config", "query"]));
    insta::assert_snapshot!(
        "config_query_json",
        ok(&["config", "query", "--json", "sriov_en", "max_vfs_per_pf"])
    );
    insta::assert_snapshot!(
        "config_set",
        ok(&[
            "config",
            "set",
            "sriov_en=1",
            "total_vfs=8",
            "cqe_compression=aggressive"
        ])
    );
    insta::assert_snapshot!(
        "config_set_json",
        ok(&["config", "set", "--json", "pf_total_vf=2"])
    );
    insta::assert_snapshot!("config_caps", ok(&["config", "caps"]));
    insta::assert_snapshot!(
        "config_set_swp_l4_csum_mode",
        ok(&[
            "config",
            "set",
            "swp_l4_csum_mode=l4_only",
            "pf_total_sf=16",
            "pf_log_sf_bar_size=12"
        ])
    );
    insta::assert_snapshot!(
        "config_query_swp_l4_csum_mode_json",
        ok(&[
            "config",
            "query",
            "--json",
            "swp_l4_csum_mode",
            "swp_l4_csum_mode_l4_only"
        ])
    );
    let same = ok(&["config", "set", "sriov_en=false"]);
    assert!(
        same.ends_with("Nothing waits for a reset: the values written are the ones in force.\n"),
        "{same}"
    );
}

#[test]
fn config_errors_name_the_setting() {
    let e = fails(&["config", "set", "total_vfs=500"]);
    assert_eq!(
        e,
        "mlx5: total_vfs: invalid argument: 500 VFs, the device allows at most 127 per PF\n"
    );
    let e = fails(&["config", "set", "sriov_en=maybe"]);
    assert_eq!(
        e,
        "mlx5: sriov_en: invalid argument: `maybe` is not true or false\n"
    );
    let e = fails(&["config", "set", "max_vfs_per_pf=3"]);
    assert_eq!(e, "mlx5: max_vfs_per_pf: read only\n");
    let e = fails(&["config", "set", "swp_l4_csum_mode_l4_only=1"]);
    assert_eq!(e, "mlx5: swp_l4_csum_mode_l4_only: read only\n");
    // devlink's values by name; `default` is the factory value, never set.
    let e = fails(&["config", "set", "swp_l4_csum_mode=device_default"]);
    assert_eq!(
        e,
        "mlx5: swp_l4_csum_mode: invalid argument: `device_default` is not default, full_csum or l4_only\n"
    );
    let e = fails(&[
        "config",
        "set",
        "cqe_compression=aggressive",
        "swp_l4_csum_mode=default",
    ]);
    assert!(
        e.starts_with("mlx5: swp_l4_csum_mode: invalid argument: `default` is the factory value"),
        "{e}"
    );
    let e = fails(&["config", "set", "sriov_en"]);
    assert_eq!(e, "mlx5: `sriov_en` is not KEY=VALUE\n");
    let e = fails(&["config", "query", "num_of_vfs"]);
    assert!(e.starts_with("mlx5: non-volatile setting: invalid argument: `num_of_vfs` is not one (settings: sriov_en, "), "{e}");
    // A bad pair after good ones: nothing is written (all are checked first).
    let e = fails(&["config", "set", "sriov_en=1", "total_vfs=x"]);
    assert!(e.starts_with("mlx5: total_vfs: "), "{e}");
}
