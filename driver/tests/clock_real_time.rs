//! Real-time CQE timestamps through the driver: the format the driver picks (real time when
//! the model offers it, free running otherwise, or what the caller asks for), the model's
//! refusal of a format it does not offer, Ethernet and RC completions converted to times
//! between two readings of the UTC clock, the clock's time being the UTC clock in real-time
//! mode and moving with MTUTC, and the conversion exact and monotonic.

mod common;

use common::{frame, qp_config, to_rts, MAC_A};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::clock::{real_time_to_ns, Clock, OfferedFormats, TimeAdjust, TimestampFormat};
use mlx5_driver::cq::Cq;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::qp::Qp;
use mlx5_driver::{Error, Hca, HcaConfig};
use mlx5_prm::{CmdStatus, HcaTsFormatCap};
use mlx5_sim::{syndrome, Config, Mode};
use proptest::prelude::*;
use std::time::{Duration, Instant};

const NS: u64 = 1_000_000_000;

fn up(formats: HcaTsFormatCap, mode: Mode) -> (Hca<SimBackend>, std::sync::Arc<mlx5_sim::Device>) {
    common::up_with(
        Config {
            mode,
            ..Config::default()
        }
        .with_ts_formats(formats),
        &HcaConfig::default(),
    )
}

fn eth_config() -> EthConfig {
    EthConfig {
        log_sq_size: 6,
        log_rq_size: 7,
        signal_every: 8,
        inline_l2: false,
        macs: vec![MAC_A],
    }
}

/// The command status and syndrome of a refused command.
fn refused(e: Error) -> (u8, u32) {
    match e {
        Error::Command {
            status, syndrome, ..
        } => (status, syndrome),
        other => panic!("not a command error: {other}"),
    }
}

#[test]
fn the_driver_picks_real_time_when_offered() {
    for (formats, want, sq) in [
        (
            HcaTsFormatCap::FreeRunning,
            TimestampFormat::FreeRunning,
            OfferedFormats::FreeRunning,
        ),
        (
            HcaTsFormatCap::FreeRunningAndRealTime,
            TimestampFormat::RealTime,
            OfferedFormats::Both,
        ),
        (
            HcaTsFormatCap::RealTime,
            TimestampFormat::RealTime,
            OfferedFormats::RealTime,
        ),
    ] {
        let (hca, _dev) = up(formats, Mode::Inline);
        let clock = Clock::new(&hca).unwrap();
        assert_eq!(clock.format(), want);
        let c = clock.caps();
        assert_eq!((c.sq_formats, c.rq_formats), (sq, sq));
        assert_eq!(c.real_time_queues, want == TimestampFormat::RealTime);
        let report = clock.report().unwrap();
        assert_eq!(report.format, want);
        let pool = Pool::new(&hca, 64, 2048).unwrap();
        let eth = EthQueues::create(&pool, &eth_config()).unwrap();
        assert_eq!(eth.ts_format(), want);
        drop(eth);
        let cq = Cq::create(&hca, 4).unwrap();
        let qp = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
        assert_eq!(qp.ts_format(), want);
    }
}

#[test]
fn a_format_the_device_does_not_offer_is_refused_by_it() {
    let bad = CmdStatus::BadParamErr as u8;
    let (hca, _dev) = up(HcaTsFormatCap::FreeRunning, Mode::Inline);
    let pool = Pool::new(&hca, 64, 2048).unwrap();
    let e = EthQueues::create_with_format(&pool, &eth_config(), TimestampFormat::RealTime)
        .err()
        .unwrap();
    assert_eq!(refused(e), (bad, syndrome::SQ_BAD_TS_FORMAT));
    let cq = Cq::create(&hca, 4).unwrap();
    let e = Qp::create_with_format(&hca, &cq, &cq, &qp_config(4), TimestampFormat::RealTime)
        .err()
        .unwrap();
    assert_eq!(refused(e), (bad, syndrome::QP_BAD_TS_FORMAT));

    let (hca, _dev) = up(HcaTsFormatCap::RealTime, Mode::Inline);
    let pool = Pool::new(&hca, 64, 2048).unwrap();
    let e = EthQueues::create_with_format(&pool, &eth_config(), TimestampFormat::FreeRunning)
        .err()
        .unwrap();
    assert_eq!(refused(e), (bad, syndrome::SQ_BAD_TS_FORMAT));
    // A device offering both takes either.
    let (hca, _dev) = up(HcaTsFormatCap::FreeRunningAndRealTime, Mode::Inline);
    let pool = Pool::new(&hca, 64, 2048).unwrap();
    let eth =
        EthQueues::create_with_format(&pool, &eth_config(), TimestampFormat::FreeRunning).unwrap();
    assert_eq!(eth.ts_format(), TimestampFormat::FreeRunning);
}

#[test]
fn ethernet_timestamps_are_the_utc_clock() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (hca, dev) = up(HcaTsFormatCap::FreeRunningAndRealTime, mode);
        dev.loopback(true);
        let clock = Clock::new(&hca).unwrap();
        // Linux sets the UTC clock to the host's time when it starts in real-time mode.
        clock.set_time(1_700_000_000 * NS).unwrap();
        let pool = Pool::new(&hca, 256, 2048).unwrap();
        let mut eth = EthQueues::create(&pool, &eth_config()).unwrap();
        assert_eq!(eth.ts_format(), TimestampFormat::RealTime);
        let (mut rx, mut stamps) = (Vec::new(), Vec::new());
        let before = clock.now();
        assert_eq!(
            before,
            clock.real_time().min(before),
            "now is the UTC clock"
        );
        let mut batch = Vec::new();
        for seq in 0..8 {
            let mut p = pool.alloc().unwrap();
            p.write(&frame(MAC_A, seq, 128)).unwrap();
            batch.push(p);
        }
        eth.tx_batch(&mut batch).unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while rx.len() < 8 && Instant::now() < deadline {
            if eth.rx_batch_timestamped(&mut rx, &mut stamps, 32).unwrap() == 0 {
                dev.tick();
                std::thread::yield_now();
            }
        }
        let after = clock.now();
        assert_eq!(stamps.len(), 8);
        for &s in &stamps {
            assert!(s & 0xffff_ffff < NS, "{s:#x}: seconds and nanoseconds");
            let t = clock.cqe_time(s);
            assert_eq!(t, real_time_to_ns(s));
            assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
            assert_eq!(t / NS, 1_700_000_000);
        }
    }
}

#[test]
fn rc_timestamps_are_the_utc_clock_and_follow_mtutc() {
    let (hca, _dev) = up(HcaTsFormatCap::RealTime, Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let a = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let b = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    assert_eq!(a.ts_format(), TimestampFormat::RealTime);
    let (qa, qb) = (a.qpn(), b.qpn());
    let (mut a, mut b) = (to_rts(a, qb), to_rts(b, qa));
    for (k, sec) in [(0u64, 1_000u64), (1, 3_000_000_000)] {
        clock.set_time(sec * NS).unwrap();
        // A step beyond ADJUST_TIME's range is a new time on the UTC clock.
        assert_eq!(clock.adjust_time(5 * NS as i64).unwrap(), TimeAdjust::Step);
        let before = clock.now();
        let stamps = common::send_stamped(&hca, &mut cq, (&mut a, &mut b), k);
        let after = clock.now();
        for stamp in stamps {
            let t = clock.cqe_time_in(a.ts_format(), stamp);
            assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
            assert_eq!(t / NS, sec + 5);
        }
    }
}

proptest! {
    /// Real-time conversion is exact (seconds × 10^9 + nanoseconds, round-tripping) and
    /// monotonic: of two times as seconds and nanoseconds below 10^9, the later converts to
    /// the larger ns value, and equal ones to equal values.
    #[test]
    fn real_time_conversion_is_exact_and_monotonic(
        a in (any::<u32>(), 0u32..1_000_000_000),
        b in (any::<u32>(), 0u32..1_000_000_000),
    ) {
        let raw = |(sec, nsec): (u32, u32)| u64::from(sec) << 32 | u64::from(nsec);
        let (na, nb) = (real_time_to_ns(raw(a)), real_time_to_ns(raw(b)));
        prop_assert_eq!(
            u128::from(na),
            u128::from(a.0) * 1_000_000_000 + u128::from(a.1)
        );
        prop_assert_eq!(((na / NS) << 32) | (na % NS), raw(a));
        prop_assert_eq!(a.cmp(&b), na.cmp(&nb));
    }
}
