//! `mlx5 clock` on the device model: the report's fixed parts (frequency, conversion, wrap
//! period, what the model offers, its PPS pins) are snapshotted with the time-dependent values
//! (timer, time, UTC clock) masked, whose shape is checked instead; adjustments print what
//! reached the device; bad adjustments fail with exit status 1 and a message.

mod cli_common;

use cli_common::{fails, mlx5, ok};

/// The value of `label`'s row in the text report.
fn row<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| {
            let (l, v) = l.trim_start().split_once(" : ")?;
            (l.trim_end() == label).then_some(v)
        })
        .unwrap_or_else(|| panic!("no row {label} in\n{text}"))
}

/// `text` with the time-dependent rows' values replaced by `<…>`.
fn masked(text: &str) -> String {
    text.lines()
        .map(|l| match l.split_once(" : ") {
            Some((label, _)) if ["Internal timer", "Time", "UTC clock"].contains(&label.trim()) => {
                format!("{label} : <time-dependent>")
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn clock_shows_the_timer_the_timecounter_and_the_pins() {
    let text = ok(&["clock"]);
    insta::assert_snapshot!("clock", masked(&text));
    let raw = row(&text, "Internal timer");
    assert!(raw.starts_with("0x") && raw.len() == 18, "{raw}");
    u64::from_str_radix(&raw[2..], 16).unwrap();
    // `S.NNNNNNNNN s (N ns)`, the same time twice, since the Unix epoch (after 2020).
    let time = row(&text, "Time");
    let (secs, ns) = time.split_once(" s (").unwrap();
    let ns: u64 = ns.strip_suffix(" ns)").unwrap().parse().unwrap();
    let (whole, frac) = secs.split_once('.').unwrap();
    assert_eq!(frac.len(), 9);
    assert_eq!(
        format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000),
        secs
    );
    assert!(whole.parse::<u64>().unwrap() > 1_577_836_800, "{time}");
    // The model's UTC clock starts at 0 at power-on.
    let utc = row(&text, "UTC clock");
    assert!(utc.starts_with("0.") && utc.ends_with(" s"), "{utc}");
}

#[test]
fn clock_json_has_the_report_fields() {
    let v: serde_json::Value = serde_json::from_str(&ok(&["clock", "--json"])).unwrap();
    assert_eq!(v["caps"]["frequency_khz"], 156_250);
    assert_eq!(v["caps"]["mtutc"], true);
    assert_eq!(v["caps"]["max_adj_ppb"], 1 << 24);
    assert_eq!(v["mask_bits"], 41);
    assert_eq!(v["wrap_period_ns"], 14_073_748_835_532u64);
    assert_eq!(
        (v["mult"].as_u64(), v["shift"].as_u64()),
        (Some(3_435_973_837), Some(29))
    );
    assert!(v["raw"].as_u64().is_some() && v["time_ns"].as_u64().unwrap() > 1 << 60);
    assert!(v["real_time_ns"].as_u64().unwrap() < 60_000_000_000);
    let pins = v["pps"]["pins"].as_array().unwrap();
    assert_eq!(pins.len(), 2);
    assert_eq!(pins[1]["mode"], "In");
    assert_eq!(pins[1]["can_out"], true);
}

#[test]
fn adjustments_say_what_reached_the_device() {
    insta::assert_snapshot!(
        "clock_adjust_freq",
        ok(&["clock", "adjust", "--freq", "250"])
    );
    insta::assert_snapshot!(
        "clock_adjust_freq_slower",
        ok(&["clock", "adjust", "--freq", "-1000"])
    );
    insta::assert_snapshot!(
        "clock_adjust_time",
        ok(&["clock", "adjust", "--time", "-20000"])
    );
    insta::assert_snapshot!(
        "clock_adjust_step",
        ok(&["clock", "adjust", "--time", "3000000000"])
    );
    insta::assert_snapshot!(
        "clock_adjust_freq_json",
        ok(&["clock", "adjust", "--freq", "250", "--json"])
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["clock", "adjust", "--time", "5", "--json"])).unwrap();
    assert_eq!(v["sent"], "Phase");
}

#[test]
fn bad_adjustments_fail_with_a_reason() {
    // Past the model's 2^24 ppb.
    let e = fails(&["clock", "adjust", "--freq", "20000000"]);
    assert!(e.contains("frequency adjustment: invalid argument"), "{e}");
    assert!(e.contains("at most 16777216"), "{e}");
    // The model's UTC clock is a few ms past 0: a step back of a second would go before it.
    let e = fails(&["clock", "adjust", "--time", "-1000000000"]);
    assert!(e.contains("before 0"), "{e}");
    // One of the two, not both, not neither (clap's usage error, status 2).
    let (code, _, err) = mlx5(&["clock", "adjust"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = mlx5(&["clock", "adjust", "--freq", "1", "--time", "1"]);
    assert_eq!(code, 2, "{err}");
}
