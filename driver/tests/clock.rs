//! The clock on the device model: what it offers, the timecounter against an exact model (any
//! frequency, any readings less than a wrap apart) and across the timer's wrap, PTP frequency
//! and time adjustments reaching the model's UTC clock through MTUTC, the PPS pins through
//! MTPPS, bad requests coming back as typed register errors, and CQE timestamps of Ethernet
//! and RC completions converted to times near the timecounter's now.

mod common;

use common::{frame, qp_config, to_rts, MAC_A};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::clock::{
    scaled_ppm_to_ppb, Clock, CycleCounter, FreqAdjust, PinMode, PpsConfig, TimeAdjust,
    Timecounter, MASK_BITS,
};
use mlx5_driver::cq::Cq;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::qp::Qp;
use mlx5_driver::{Error, HcaConfig};
use mlx5_prm::reg::{Mtpps, Mtutc};
use mlx5_prm::{CmdStatus, PpsPinMode};
use mlx5_sim::{syndrome, Config, Mode};
use proptest::prelude::*;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The model's internal timer frequency (its ConnectX-5 profile).
const KHZ: u64 = 156_250;

/// The command status and syndrome inside a register error; panics on any other error.
fn register_error(e: Error, register: &str) -> (u8, u32) {
    match e {
        Error::Register {
            register: r,
            source,
            ..
        } if r == register => match *source {
            Error::Command {
                status, syndrome, ..
            } => (status, syndrome),
            other => panic!("not a command error: {other}"),
        },
        other => panic!("not a {register} register error: {other}"),
    }
}

#[test]
fn the_clock_reports_what_the_model_offers() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    let c = clock.caps();
    assert_eq!(u64::from(c.frequency_khz), KHZ);
    assert!(c.mtutc && c.modify_real_time && c.scaled_ppm && c.pps);
    assert!(!c.extended_time_range && !c.real_time_queues);
    assert_eq!((c.max_adj_ppb, c.max_phase_ns()), (1 << 24, 32767));
    let cc = *clock.timecounter().cycle_counter();
    assert_eq!(
        (cc.mask_bits(), cc.shift(), cc.mult()),
        (MASK_BITS, 29, 3_435_973_837)
    );
    // The timer runs at the advertised frequency: the ticks between two reads lie between
    // the host time from after the first read to before the second and the time around both.
    let a = Instant::now();
    let r0 = clock.raw();
    let b = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    let c = Instant::now();
    let r1 = clock.raw();
    let d = Instant::now();
    let ticks = |d: Duration| d.as_nanos() as u64 * KHZ / 1_000_000;
    let (lo, hi) = (ticks(c - b), ticks(d - a));
    assert!(
        (lo..=hi + 1).contains(&(r1 - r0)),
        "{} ticks, not in {lo}..={hi}",
        r1 - r0
    );
    let report = clock.report().unwrap();
    assert_eq!(report.wrap_period_ns, 14_073_748_835_532);
    assert_eq!(report.pps.as_ref().unwrap().pins.len(), 2);
    assert!(report.real_time_ns.is_some());
}

/// Exact time of `total` cycles through `cc` from `start_ns`: ⌊total × mult / 2^shift⌋.
fn exact(cc: &CycleCounter, start_ns: u64, total: u128) -> u128 {
    u128::from(start_ns) + ((total * u128::from(cc.mult())) >> cc.shift())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// For a counter of 1 MHz to 3 GHz, any start and any readings less than a wrap apart,
    /// every read is the exact ⌊Σ cycles × mult / 2^shift⌋ (the carried fraction loses
    /// nothing), never goes back, and is within the documented rounding of the true time:
    /// |ns − cycles × 10^6 / khz| ≤ cycles × |mult × khz − 10^6 × 2^shift| / (khz × 2^shift)
    /// + 1, that is `mult` rounded to the nearest (at most 1/(2 mult) relative).
    #[test]
    fn the_timecounter_is_the_exact_sum_and_monotonic(
        khz in 1_000u32..=3_000_000,
        bits in prop_oneof![Just(41u32), 24u32..=64],
        start in any::<u64>(),
        start_ns in 0u64..1 << 62,
        gaps in proptest::collection::vec(any::<u64>(), 1..40),
    ) {
        let cc = CycleCounter::new(khz, bits).unwrap();
        let now = Cell::new(start);
        let mut tc = Timecounter::new(|| now.get(), cc, start_ns);
        let (mut total, mut prev) = (0u128, start_ns);
        // Gaps below the wrap, and below 2^41 so the sum stays far from 2^64 ns.
        let limit = cc.mask().min((1 << 41) - 1);
        for g in gaps {
            let g = g % (limit + 1);
            now.set(now.get().wrapping_add(g));
            total += u128::from(g);
            let ns = tc.read();
            prop_assert_eq!(u128::from(ns), exact(&cc, start_ns, total));
            prop_assert!(ns >= prev);
            prev = ns;
            let scale = u128::from(khz) << cc.shift();
            let got = u128::from(ns - start_ns) * scale;
            let truth = (total * 1_000_000) << cc.shift();
            let step = (u128::from(cc.mult()) * u128::from(khz)).abs_diff(1_000_000 << cc.shift());
            prop_assert!(got.abs_diff(truth) <= total * step + scale);
        }
    }

    /// A timestamp taken between two reads converts to the time the second read would give
    /// at that instant; one taken before the last read converts to a time before it.
    #[test]
    fn cqe_timestamps_convert_as_reads_would(
        khz in 1_000u32..=3_000_000,
        start in any::<u64>(),
        first in 0u64..1 << 40,
        at in 0u64..1 << 39,
        back in 1u64..1 << 39,
    ) {
        let cc = CycleCounter::new(khz, MASK_BITS).unwrap();
        let now = Cell::new(start);
        let mut tc = Timecounter::new(|| now.get(), cc, 1 << 50);
        now.set(start.wrapping_add(first));
        let last = tc.read();
        let stamp = start.wrapping_add(first).wrapping_add(at);
        let converted = tc.cyc2time(stamp);
        now.set(stamp);
        prop_assert_eq!(converted, tc.clone().read());
        let before = tc.cyc2time(start.wrapping_add(first).wrapping_sub(back));
        prop_assert!(before < last || back * 1_000_000 < 2 * u64::from(khz));
        let mut f = 0;
        prop_assert!(last - before <= cc.cyc2ns(back, &mut f) + 1);
    }

    /// After a frequency adjustment the counter runs at the adjusted multiplier: Linux's
    /// nominal ± ⌊nominal × |scaled_ppm| / (10^6 × 2^16)⌋.
    #[test]
    fn adjfine_changes_the_rate_from_the_next_cycle(
        khz in 1_000u32..=3_000_000,
        scaled_ppm in -(50_000i64 << 16)..=(50_000i64 << 16),
        before in 0u64..1 << 36,
        after in 0u64..1 << 36,
    ) {
        let cc = CycleCounter::new(khz, MASK_BITS).unwrap();
        let now = Cell::new(0u64);
        let mut tc = Timecounter::new(|| now.get(), cc, 0);
        now.set(before);
        let t0 = tc.read();
        let base = i128::from(cc.nominal_mult());
        let diff = base * i128::from(scaled_ppm).abs() / (1_000_000 << 16);
        let mult = if scaled_ppm < 0 { base - diff } else { base + diff };
        if mult > i128::from(u32::MAX) {
            // Out of the 32-bit multiplier (the nominal one can be near 2^32): refused, and
            // the rate is the one before.
            prop_assert!(tc.adjfine(scaled_ppm).is_err());
            prop_assert_eq!(tc.cycle_counter().mult(), cc.nominal_mult());
            return Ok(());
        }
        tc.adjfine(scaled_ppm).unwrap();
        prop_assert_eq!(i128::from(tc.cycle_counter().mult()), mult);
        now.set(before + after);
        let t1 = tc.read();
        let d = u128::from(t1 - t0);
        let want = (u128::from(after) * mult as u128) >> cc.shift();
        prop_assert!(d == want || d == want + 1, "{} vs {}", d, want);
    }
}

/// Started a second before the 41-bit mask wraps (and, second, before the timer's own 64-bit
/// wrap), the timecounter read every few ms goes on across the wrap, never back, and keeps
/// pace with the host's clock.
#[test]
fn the_timecounter_stays_monotonic_across_the_timers_wrap() {
    for bits in [MASK_BITS, 64] {
        let config = Config::default().with_timer_before_wrap(bits, KHZ * 1000);
        let (hca, _dev) = common::up_with(config, &HcaConfig::default());
        let clock = Clock::new(&hca).unwrap();
        let mask = (1u64 << MASK_BITS) - 1;
        let (t0, n0) = (Instant::now(), clock.now());
        let (mut prev, mut last_raw) = (n0, clock.raw());
        assert!(
            last_raw & mask > mask - KHZ * 1000,
            "starts before the wrap: {last_raw:#x}"
        );
        // Until 100 ms past the wrap (which is less than a second away).
        let mut wrapped_at = None;
        while wrapped_at.is_none_or(|w: Instant| w.elapsed() < Duration::from_millis(100)) {
            assert!(t0.elapsed() < Duration::from_secs(5), "{bits}: no wrap");
            std::thread::sleep(Duration::from_millis(3));
            let raw = clock.raw();
            let now = clock.now();
            assert!(now >= prev, "{now} after {prev}");
            if raw & mask < last_raw & mask {
                wrapped_at = Some(Instant::now());
                if bits == 64 {
                    assert!(raw < 1 << 40, "the whole timer wrapped to a small value");
                }
            }
            (prev, last_raw) = (now, raw);
        }
        let (host, dev) = (t0.elapsed().as_nanos() as u64, clock.now() - n0);
        assert!(
            dev.abs_diff(host) < host / 20,
            "device {dev} ns, host {host} ns"
        );
    }
}

#[test]
fn frequency_adjustments_reach_the_utc_clock_and_the_timecounter() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    let nominal = clock.timecounter().cycle_counter().nominal_mult();
    // +1%: 10^7 ppb is 655 360 000 scaled ppm, sent as such (MCAM offers scaled ppm).
    let sent = clock.adjust_freq_ppb(10_000_000).unwrap();
    assert_eq!(sent, FreqAdjust::ScaledPpm(655_360_000));
    assert_eq!(scaled_ppm_to_ppb(655_360_000), 10_000_000);
    let mult = clock.timecounter().cycle_counter().mult();
    assert_eq!(u64::from(mult), u64::from(nominal) * 101 / 100);
    // The UTC clock now runs 1% fast against the free-running timer.
    let (u0, r0) = (clock.real_time(), clock.raw());
    std::thread::sleep(Duration::from_millis(100));
    let (u1, r1) = (clock.real_time(), clock.raw());
    let nominal_ns = (r1 - r0) * 1_000_000 / KHZ;
    let ratio = (u1 - u0) as f64 / nominal_ns as f64;
    assert!(
        (ratio - 1.01).abs() < 0.002,
        "UTC runs at {ratio} of nominal"
    );
    // Back to nominal; beyond the device's bound is refused before anything is sent.
    assert_eq!(clock.adjust_freq(0).unwrap(), FreqAdjust::ScaledPpm(0));
    assert_eq!(clock.timecounter().cycle_counter().mult(), nominal);
    let e = clock.adjust_freq_ppb(1 << 25).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
}

#[test]
fn time_adjustments_step_within_the_range_and_set_beyond_it() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    clock.set_time(1_000_000_000_000).unwrap();
    let (u0, t0) = (clock.real_time(), clock.now());
    assert!((1_000_000_000_000..1_000_050_000_000).contains(&u0), "{u0}");
    assert!((1_000_000_000_000..1_000_050_000_000).contains(&t0), "{t0}");
    assert_eq!(clock.adjust_time(30_000).unwrap(), TimeAdjust::Phase);
    assert_eq!(clock.adjust_time(-5_000_000_000).unwrap(), TimeAdjust::Step);
    let (u1, t1) = (clock.real_time(), clock.now());
    for (before, after) in [(u0, u1), (t0, t1)] {
        let moved = after as i64 - before as i64;
        assert!(
            (-4_999_970_000..-4_900_000_000).contains(&moved),
            "moved {moved} ns"
        );
    }
    // The UTC clock cannot go before 0: refused, nothing moved.
    let e = clock.adjust_time(-2_000_000_000_000).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    assert!(clock.now() >= t1);
}

/// A profile without the clock registers (no pps, as the Linux guest profiles): MCAM lists no
/// MTUTC, so adjustments stay in the timecounter, and the registers are unknown to the model.
#[test]
fn without_the_clock_registers_adjustments_stay_in_software() {
    let mut config = Config::default();
    for g in [&mut config.caps.general_max, &mut config.caps.general_cur] {
        g.set_pps(false);
        g.set_pps_modify(false);
    }
    let (hca, _dev) = common::up_with(config, &HcaConfig::default());
    let clock = Clock::new(&hca).unwrap();
    let c = clock.caps();
    assert!(!c.mtutc && !c.modify_real_time && !c.pps);
    assert_eq!(c.max_adj_ppb, mlx5_driver::clock::DEFAULT_MAX_ADJ_PPB);
    assert_eq!(
        clock.adjust_freq_ppb(-300).unwrap(),
        FreqAdjust::SoftwareOnly
    );
    let t0 = clock.now();
    assert_eq!(
        clock.adjust_time(10_000_000_000).unwrap(),
        TimeAdjust::SoftwareOnly
    );
    assert!(clock.now() >= t0 + 10_000_000_000);
    let report = clock.report().unwrap();
    assert!(report.pps.is_none() && report.real_time_ns.is_none());
    let e = hca.read_reg::<Mtutc>(|_| {}).unwrap_err();
    let unknown = (CmdStatus::BadParamErr.raw(), syndrome::REG_UNKNOWN);
    assert_eq!(register_error(e, "mtutc"), unknown);
}

#[test]
fn pps_pins_are_configured_and_read_back() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    let pins = clock.pps().unwrap();
    assert_eq!((pins.max_in, pins.max_out, pins.pins.len()), (2, 2, 2));
    assert!(pins
        .pins
        .iter()
        .all(|p| p.can_in && p.can_out && !p.enabled));
    let out = PpsConfig {
        enable: Some(true),
        mode: Some(PpsPinMode::PpsOut),
        pattern: Some(1),
        time_stamp: Some(clock.raw() + KHZ * 1000),
    };
    let p = clock.configure_pps_pin(1, &out).unwrap();
    assert!(p.enabled && p.mode == PinMode::Out && p.pattern == 1);
    assert_eq!(clock.pps_pin(1).unwrap(), p);
    let off = PpsConfig {
        enable: Some(false),
        ..PpsConfig::default()
    };
    let q = clock.configure_pps_pin(1, &off).unwrap();
    assert!(!q.enabled && q.mode == PinMode::Out, "the rest is kept");
    assert!(!clock.pps_pin(0).unwrap().enabled);
}

#[test]
fn bad_requests_are_typed_register_errors() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    let bad_param = CmdStatus::BadParamErr.raw();
    for op in [0u8, 4, 0xf] {
        let e = hca
            .write_reg::<Mtutc>(|r| r.set_operation_raw(op))
            .unwrap_err();
        assert_eq!(
            register_error(e, "mtutc"),
            (bad_param, syndrome::MTUTC_BAD_OPERATION)
        );
    }
    let e = hca
        .write_reg::<Mtutc>(|r| {
            r.set_operation(mlx5_prm::MtutcOperation::AdjustTime);
            r.set_time_adjustment(40_000);
        })
        .unwrap_err();
    assert_eq!(
        register_error(e, "mtutc"),
        (bad_param, syndrome::MTUTC_BAD_TIME_ADJUSTMENT)
    );
    for pin in [2u8, 7, 255] {
        let e = clock.pps_pin(pin).unwrap_err();
        assert_eq!(
            register_error(e, "mtpps"),
            (bad_param, syndrome::MTPPS_BAD_PIN)
        );
        let e = clock
            .configure_pps_pin(pin, &PpsConfig::default())
            .unwrap_err();
        assert_eq!(
            register_error(e, "mtpps"),
            (bad_param, syndrome::MTPPS_BAD_PIN)
        );
    }
    let pattern = PpsConfig {
        pattern: Some(3),
        ..PpsConfig::default()
    };
    let e = clock.configure_pps_pin(0, &pattern).unwrap_err();
    assert_eq!(
        register_error(e, "mtpps"),
        (bad_param, syndrome::MTPPS_BAD_PATTERN)
    );
    let e = hca
        .write_reg::<Mtpps>(|r| r.set_field_select(0xffff_ffff))
        .unwrap_err();
    assert_eq!(
        register_error(e, "mtpps"),
        (bad_param, syndrome::MTPPS_BAD_FIELD_SELECT)
    );
    let e = clock
        .configure_pps_pin(
            0,
            &PpsConfig {
                pattern: Some(16),
                ..PpsConfig::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    // Nothing of it changed the pins, and the device still answers.
    assert!(clock.pps().unwrap().pins.iter().all(|p| !p.enabled));
}

/// Receives until `want` packets (and their timestamps) arrived, or two seconds passed.
fn receive_stamped<'p>(
    eth: &mut EthQueues<'p, SimBackend>,
    dev: &mlx5_sim::Device,
    want: usize,
    out: &mut Vec<mlx5_driver::eth::Packet<'p>>,
    stamps: &mut Vec<u64>,
) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while out.len() < want && Instant::now() < deadline {
        if eth.rx_batch_timestamped(out, stamps, 32).unwrap() == 0 {
            dev.tick();
            std::thread::yield_now();
        }
    }
    assert_eq!(out.len(), want);
}

#[test]
fn ethernet_receive_timestamps_are_near_the_timecounters_now() {
    for mode in [Mode::Inline, Mode::Threaded] {
        let (hca, dev) = common::up(mode);
        dev.loopback(true);
        let clock = Clock::new(&hca).unwrap();
        let pool = Pool::new(&hca, 256, 2048).unwrap();
        let config = EthConfig {
            log_sq_size: 6,
            log_rq_size: 7,
            signal_every: 8,
            inline_l2: false,
            macs: vec![MAC_A],
        };
        let mut eth = EthQueues::create(&pool, &config).unwrap();
        let (mut rx, mut stamps, mut times) = (Vec::new(), Vec::new(), Vec::new());
        let mut seq = 0;
        for _round in 0..8 {
            let before = clock.now();
            let mut batch = Vec::new();
            for _ in 0..8 {
                let mut p = pool.alloc().unwrap();
                p.write(&frame(MAC_A, seq, 128)).unwrap();
                batch.push(p);
                seq += 1;
            }
            eth.tx_batch(&mut batch).unwrap();
            receive_stamped(&mut eth, &dev, 8, &mut rx, &mut stamps);
            let after = clock.now();
            assert_eq!(stamps.len(), 8);
            for &s in &stamps {
                let t = clock.cqe_time(s);
                // Within the round (no wall-clock bound: a loaded machine may take any time
                // between the two readings).
                assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
                times.push(t);
            }
            rx.clear();
            stamps.clear();
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert!(
            times[times.len() - 1] - times[0] >= 14_000_000,
            "seven 2 ms pauses"
        );
        drop((rx, stamps, eth));
        drop(pool);
        hca.teardown().unwrap();
    }
}

#[test]
fn rc_completions_carry_timestamps_near_now() {
    let (hca, _dev) = common::up(Mode::Inline);
    let clock = Clock::new(&hca).unwrap();
    let mut cq = Cq::create(&hca, 6).unwrap();
    let a = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let b = Qp::create(&hca, &cq, &cq, &qp_config(4)).unwrap();
    let (qa, qb) = (a.qpn(), b.qpn());
    let (mut a, mut b) = (to_rts(a, qb), to_rts(b, qa));
    let before = clock.now();
    let stamps = common::send_stamped(&hca, &mut cq, (&mut a, &mut b), 1);
    let after = clock.now();
    for stamp in stamps {
        let t = clock.cqe_time(stamp);
        assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
    }
}
