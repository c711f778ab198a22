//! PPS events through the driver: MTPPSE per pin through the clock (set, read back, a pin the
//! model lacks refused as a typed register error), the HCA's event queue receiving the
//! model's PPS EQEs as `Event::Pps`, converted by the clock to the time of the pulse in the
//! free-running and the real-time format, once-till-armed events disarming, and output pins'
//! events.

mod common;

use mlx5_driver::clock::{Clock, PpsConfig, PpsEventMode, PpsEvents, TimestampFormat};
use mlx5_driver::eq::Event;
use mlx5_driver::{Error, HcaConfig};
use mlx5_prm::{CmdStatus, HcaTsFormatCap, PpsPinMode};
use mlx5_sim::{syndrome, Config, Mode};
use std::time::{Duration, Instant};

const NS: u64 = 1_000_000_000;

/// The PPS events among the HCA's events, waiting up to a second for `want` of them.
fn pps_events<B: mlx5_driver::backend::Backend>(
    hca: &mlx5_driver::Hca<B>,
    want: usize,
) -> Vec<Event> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(1);
    while got.len() < want && Instant::now() < deadline {
        let events = hca
            .wait_events(Instant::now() + Duration::from_millis(20))
            .unwrap();
        got.extend(
            events
                .into_iter()
                .filter(|e| matches!(e, Event::Pps { .. })),
        );
    }
    got
}

/// An enabled input pin, time-stamping rising edges.
fn input() -> PpsConfig {
    PpsConfig {
        enable: Some(true),
        mode: Some(PpsPinMode::PpsIn),
        pattern: Some(0),
        time_stamp: None,
    }
}

#[test]
fn mtppse_through_the_clock() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    assert_eq!(
        clock.pps_events(1).unwrap(),
        PpsEvents {
            pin: 1,
            mode: PpsEventMode::Off,
            armed: false
        }
    );
    let set = clock
        .set_pps_events(1, PpsEventMode::OnceTillArmed, true)
        .unwrap();
    assert_eq!((set.mode, set.armed), (PpsEventMode::OnceTillArmed, true));
    assert_eq!(clock.pps_events(1).unwrap(), set);
    assert_eq!(
        clock.pps().unwrap().pins[1].events.map(|e| e.mode),
        Some(PpsEventMode::OnceTillArmed)
    );
    for e in [
        clock.pps_events(2).err().unwrap(),
        clock
            .set_pps_events(9, PpsEventMode::EveryPulse, false)
            .err()
            .unwrap(),
        clock
            .set_pps_events(0, PpsEventMode::Unknown(7), false)
            .err()
            .unwrap(),
    ] {
        let Error::Register {
            register, source, ..
        } = e
        else {
            panic!("not a register error: {e}");
        };
        assert_eq!(register, "mtppse");
        let Error::Command {
            status, syndrome, ..
        } = *source
        else {
            panic!("not a command error");
        };
        assert_eq!(status, CmdStatus::BadParamErr as u8);
        assert!([syndrome::MTPPSE_BAD_PIN, syndrome::MTPPSE_BAD_MODE].contains(&syndrome));
    }
}

#[test]
fn input_pulses_arrive_as_events_with_their_time() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (hca, dev) = common::up(mode);
        let clock = Clock::new(&hca).unwrap();
        assert_eq!(clock.format(), TimestampFormat::FreeRunning);
        clock.configure_pps_pin(0, &input()).unwrap();
        clock
            .set_pps_events(0, PpsEventMode::EveryPulse, false)
            .unwrap();
        let before = clock.now();
        assert!(dev.pps_pulse(0));
        let events = pps_events(&hca, 1);
        let after = clock.now();
        assert_eq!(events.len(), 1, "{events:?}");
        let e = clock.pps_event(&events[0]).unwrap();
        assert_eq!(e.pin, 0);
        assert!(
            before <= e.time_ns && e.time_ns <= after,
            "{before} <= {} <= {after}",
            e.time_ns
        );
        // Other events are not PPS events.
        assert!(clock
            .pps_event(&Event::PortChange {
                port: 1,
                sub_type: 4
            })
            .is_none());
    }
}

#[test]
fn real_time_events_carry_the_utc_clock() {
    let (hca, dev) = common::up_with(
        Config::default().with_ts_formats(HcaTsFormatCap::FreeRunningAndRealTime),
        &HcaConfig::default(),
    );
    let clock = Clock::new(&hca).unwrap();
    assert_eq!(clock.format(), TimestampFormat::RealTime);
    clock.set_time(1_800_000_000 * NS).unwrap();
    clock.configure_pps_pin(1, &input()).unwrap();
    clock
        .set_pps_events(1, PpsEventMode::OnceTillArmed, true)
        .unwrap();
    let before = clock.now();
    assert!(dev.pps_pulse(1));
    assert!(!dev.pps_pulse(1), "disarmed by the first event");
    let after = clock.now();
    let events = pps_events(&hca, 1);
    assert_eq!(events.len(), 1);
    let e = clock.pps_event(&events[0]).unwrap();
    assert_eq!((e.pin, e.raw >> 32), (1, 1_800_000_000));
    assert!(before <= e.time_ns && e.time_ns <= after);
    assert!(!clock.pps_events(1).unwrap().armed);
}

#[test]
fn an_output_pin_reports_its_pulses() {
    let (hca, dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    clock
        .set_pps_events(1, PpsEventMode::EveryPulse, false)
        .unwrap();
    // Due 2 ms from now, in internal timer ticks (the free-running format).
    let due = clock.raw() + 2 * u64::from(clock.caps().frequency_khz);
    clock
        .configure_pps_pin(
            1,
            &PpsConfig {
                enable: Some(true),
                mode: Some(PpsPinMode::PpsOut),
                pattern: Some(1),
                time_stamp: Some(due),
            },
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    dev.tick();
    let events = pps_events(&hca, 1);
    assert_eq!(
        events,
        vec![Event::Pps {
            pin: 1,
            time_stamp: due
        }]
    );
    let e = clock.pps_event(&events[0]).unwrap();
    assert_eq!(e.time_ns, clock.cqe_time(due));
}
