//! The health monitor on the model: a healthy device polls healthy (its counter moves), an
//! injected health syndrome is fatal at the next poll and named, a counter that stops is fatal
//! at exactly the max_misses-th poll, and the one-off report decodes the health buffer.

mod common;

use common::up;
use mlx5_driver::health::{Fatal, FwVersion, HealthConfig, Verdict, MAX_MISSES, POLL_INTERVAL};
use mlx5_driver::Error;
use mlx5_prm::HealthSyndrome;
use mlx5_sim::{HealthError, Mode, FW_REV, HEALTH_COUNTER_PERIOD};
use std::time::Duration;

/// Polls far enough apart for the model's counter to move.
fn quick() -> HealthConfig {
    HealthConfig {
        interval: HEALTH_COUNTER_PERIOD * 3,
        ..HealthConfig::default()
    }
}

#[test]
fn the_defaults_are_linuxs() {
    assert_eq!(MAX_MISSES, 3);
    assert_eq!(POLL_INTERVAL, Duration::from_secs(2));
    let d = HealthConfig::default();
    assert_eq!((d.max_misses, d.interval), (3, Duration::from_secs(2)));
}

#[test]
fn a_healthy_device_polls_healthy() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (hca, _dev) = up(mode);
        let report = hca.health();
        assert!(report.healthy(), "{report:?}");
        let (major, minor, subminor) = FW_REV;
        assert_eq!(
            report.fw_version,
            FwVersion {
                major,
                minor,
                subminor
            }
        );
        assert_eq!(report.health_syndrome.raw, 0);
        assert_eq!(report.buffer.hw_id, 0x1017);
        assert!(!report.buffer.rfr && !report.buffer.severity_valid);
        assert_eq!(report.buffer.assert_var, [0; 6]);
        let mut monitor = hca.health_monitor(quick());
        let status = monitor.run(5).unwrap().expect("five polls");
        assert_eq!(status.verdict, Verdict::Healthy, "{mode:?}");
        assert_eq!((status.polls, status.misses), (5, 0));
        assert!(status.counter > report.health_counter, "the counter moved");
        assert!(monitor.run(0).unwrap().is_none());
    }
}

#[test]
fn an_injected_syndrome_is_fatal_and_named() {
    let (hca, dev) = up(Mode::Inline);
    let mut monitor = hca.health_monitor(quick());
    // Polled at once, the counter may not have moved yet: one miss is no verdict.
    assert!(monitor.poll().unwrap().healthy());
    dev.inject_health_error(HealthError {
        syndrome: 0x8,
        ext_synd: 0x1234,
        irisc_index: 2,
        severity: 2,
        reset_required: true,
    });
    let status = monitor.poll().unwrap();
    let Verdict::Fatal(Fatal::Syndrome {
        syndrome,
        reset_required,
    }) = status.verdict
    else {
        panic!("{status:?}");
    };
    assert!(reset_required);
    assert_eq!((syndrome.raw, syndrome.name), (0x8, Some("hw_fatal_err")));
    assert_eq!(
        syndrome.description,
        "the hardware hit an error it cannot recover from"
    );
    let b = hca.health().buffer;
    assert_eq!((b.synd.raw, b.ext_synd, b.irisc_index), (0x8, 0x1234, 2));
    assert!(b.rfr && b.severity_valid);
    assert_eq!((b.severity, b.severity_name), (2, "critical"));
    // The existing check still answers as before.
    assert!(matches!(
        hca.check_health(),
        Err(Error::Health { syndrome: 0x8 })
    ));

    // Every syndrome the spec names, by its name; one it does not, as unknown.
    for s in HealthSyndrome::ALL {
        dev.set_health_syndrome(s.raw());
        let status = monitor.poll().unwrap();
        assert!(!status.healthy());
        assert_eq!(status.syndrome.name, Some(s.spec_name()));
        assert!(!status.syndrome.description.is_empty());
    }
    dev.set_health_syndrome(0x42);
    let status = monitor.poll().unwrap();
    assert_eq!((status.syndrome.raw, status.syndrome.name), (0x42, None));
    assert!(!status.healthy());

    // Healed: the counter runs again and the syndrome is gone; the misses counted meanwhile
    // end with the first sample that moved.
    dev.clear_health_error();
    std::thread::sleep(HEALTH_COUNTER_PERIOD * 3);
    let status = monitor.poll().unwrap();
    assert!(status.healthy() && status.misses == 0, "{status:?}");
}

#[test]
fn a_stopped_counter_is_fatal_after_exactly_max_misses_polls() {
    for max_misses in [MAX_MISSES, 1, 5] {
        let (hca, dev) = up(Mode::Inline);
        dev.stop_health_counter();
        let config = HealthConfig {
            max_misses,
            interval: Duration::ZERO,
        };
        let mut monitor = hca.health_monitor(config);
        for poll in 1..max_misses {
            let status = monitor.poll().unwrap();
            assert!(status.healthy(), "poll {poll} of {max_misses}: {status:?}");
            assert_eq!(status.misses, poll);
        }
        let status = monitor.poll().unwrap();
        assert_eq!(
            status.verdict,
            Verdict::Fatal(Fatal::MissedHeartbeats {
                misses: max_misses,
                counter: status.counter
            }),
            "at poll {max_misses}"
        );
        assert_eq!(status.syndrome.raw, 0, "no syndrome: firmware just stopped");
        assert!(hca.health().healthy(), "one snapshot cannot tell");
        // run() stops at the first fatal poll.
        let mut again = hca.health_monitor(config);
        let status = again.run(10).unwrap().unwrap();
        assert_eq!(status.polls, u64::from(max_misses));
        // Firmware comes back: the counter moves and the monitor says so.
        dev.clear_health_error();
        std::thread::sleep(HEALTH_COUNTER_PERIOD * 3);
        let status = monitor.poll().unwrap();
        assert!(status.healthy() && status.misses == 0, "{status:?}");
    }
}

#[test]
fn max_misses_of_zero_is_one() {
    let (hca, dev) = up(Mode::Inline);
    dev.stop_health_counter();
    let mut monitor = hca.health_monitor(HealthConfig {
        max_misses: 0,
        interval: Duration::ZERO,
    });
    assert_eq!(monitor.config().max_misses, 1);
    assert!(!monitor.poll().unwrap().healthy());
    dev.clear_health_error();
}
