//! The clock registers: MTUTC (0x9055), which steers the UTC (real-time) clock, MTPPS
//! (0x9053), the pulse-per-second pins, and MTPPSE (0x9054), the pins' PPS events. All act on
//! the device's [`Clock`], whose free-running counter (the internal timer, free-running CQE
//! timestamps) they leave alone: see `clock.rs` for why. MTUTC moves the UTC clock, which
//! is also what queues in the real-time format put in their CQEs: in real-time mode
//! ([`real_time_mode`]) Linux's PHC is that clock, and every adjfine, adjtime and settime
//! reaches it through MTUTC.
//!
//! MTUTC, as Linux's `lib/clock.c` uses it: a read reports log_max_freq_adjustment (Linux
//! bounds its ptp max_adj with it); a write runs one operation on the UTC clock:
//! SET_TIME_IMMEDIATE (utc_sec, utc_nsec), ADJUST_TIME (a signed step of at most
//! [`MTUTC_ADJUST_TIME_MAX`] ns, the range of a device without the extended range that MCAM
//! could report) and ADJUST_FREQ_UTC (a signed offset from the nominal rate, in ppb or, as
//! MCAM's mtutc_freq_adj_units offers, in scaled ppm, at most 2^[`LOG_MAX_FREQ_ADJUSTMENT`]
//! ppb). Anything else is refused with BAD_PARAM and changes nothing.
//!
//! MTPPS: [`PPS_PINS`] pins, each able to be an input or an output. A read reports the pins'
//! capabilities and the configuration of the pin it names; a write applies the fields its
//! field_select names (enable, pattern, pin mode, next pulse, pulse width, enhanced period
//! adjustment) to that pin, all or nothing. The configuration is kept and reported back; an
//! enabled output pulses at its time_stamp (in the queues' clock: ticks, or the UTC clock's
//! seconds and nanoseconds in real-time mode) and an enabled input time-stamps the pulses the
//! host brings (`Device::pps_pulse`): `datapath/pps.rs`.
//!
//! MTPPSE: per pin, whether pulses raise PPS events: event_generation_mode disable (0),
//! repetitive (1: every pulse) or once till armed (2: the first pulse after a write with
//! event_arm set, which the event disarms). A write sets both fields; a read reports them,
//! event_arm as the pin's arm now. Linux writes repetitive with event_arm 0 to turn a pin's
//! events on and disable to turn them off. A pin the model lacks, or another mode, is refused
//! with BAD_PARAM.

use super::reg::id;
use crate::caps::Caps;
use crate::clock::{Clock, Pin, PPS_PINS, RATE_ONE_PPB};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::syndrome as s;
use mlx5_prm::{
    HcaTsFormatCap, McamReg, MtppsReg, MtppseEventMode, MtppseReg, MtutcFreqAdjUnits,
    MtutcOperation, MtutcReg, PpsPinMode, MTPPS_CAP_PIN_PPS_IN, MTPPS_CAP_PIN_PPS_OUT,
    MTPPS_FS_ENABLE, MTPPS_FS_ENH_OUT_PER_ADJ, MTPPS_FS_OUT_PULSE_DURATION, MTPPS_FS_PATTERN,
    MTPPS_FS_PIN_MODE, MTPPS_FS_TIME_STAMP, MTUTC_ADJUST_TIME_MAX,
};

/// log2 of the largest frequency offset MTUTC takes, in ppb (2^24: about 1.7%).
pub(crate) const LOG_MAX_FREQ_ADJUSTMENT: u8 = 24;
/// Nanoseconds per second.
const NS_PER_SEC: u32 = 1_000_000_000;
/// What each pin can do.
const PIN_CAPS: u8 = (MTPPS_CAP_PIN_PPS_IN | MTPPS_CAP_PIN_PPS_OUT) as u8;
/// The field_select bits the model applies; any other is refused (npps_period and
/// out_pulse_duration_ns need MCAM features the model does not report).
const FIELDS: u32 = (MTPPS_FS_ENABLE
    | MTPPS_FS_PATTERN
    | MTPPS_FS_PIN_MODE
    | MTPPS_FS_TIME_STAMP
    | MTPPS_FS_OUT_PULSE_DURATION
    | MTPPS_FS_ENH_OUT_PER_ADJ) as u32;

/// Whether the profile has the clock registers: the model has its clock unit (MTUTC, MTPPS
/// and their MCAM bits) exactly when the profile reports pps. The profiles made for a Linux
/// guest leave it out, so that its probe stays the one `docs/linux-probe.md` lists (Linux
/// would read MTUTC and MTPPS in `mlx5_init_clock`); without it both registers answer as
/// registers the model does not have (REG_UNKNOWN), as DTOR does without timeouts.
pub(crate) fn has_clock(caps: &Caps) -> bool {
    caps.general_cur.pps()
}

/// Whether the device runs its clock in real-time mode: its queues can stamp completions
/// with the UTC clock (sq_ts_format or rq_ts_format offers real time). Then PPS events and
/// output pins' time_stamp are UTC seconds and nanoseconds, as Linux's `lib/clock.c`
/// (`mlx5_real_time_mode`) reads and writes them; otherwise internal timer ticks.
pub(crate) fn real_time_mode(caps: &Caps) -> bool {
    let real = |f: u8| {
        matches!(
            HcaTsFormatCap::from_raw(f.into()),
            Some(HcaTsFormatCap::RealTime | HcaTsFormatCap::FreeRunningAndRealTime)
        )
    };
    let g = &caps.general_cur;
    real(g.sq_ts_format_raw()) || real(g.rq_ts_format_raw())
}

/// MTUTC, when the profile has the clock (see [`has_clock`]).
pub(super) fn mtutc(m: &Model, image: &mut [u8], write: bool) -> Outcome<()> {
    ensure(has_clock(&m.cur), Fail::bad_param(s::REG_UNKNOWN))?;
    mtutc_on(&m.clock, image, write)
}

/// MTPPS, when the profile has the clock (see [`has_clock`]).
pub(super) fn mtpps(m: &Model, image: &mut [u8], write: bool) -> Outcome<()> {
    ensure(has_clock(&m.cur), Fail::bad_param(s::REG_UNKNOWN))?;
    mtpps_on(&m.clock, image, write)
}

/// MTPPSE, when the profile has the clock (see [`has_clock`]).
pub(super) fn mtppse(m: &Model, image: &mut [u8], write: bool) -> Outcome<()> {
    ensure(has_clock(&m.cur), Fail::bad_param(s::REG_UNKNOWN))?;
    mtppse_on(&m.clock, image, write)
}

/// Base register id of MCAM access register group 0.
const MCAM_BASE: u16 = 0x9000;
/// Register bit of the group where MCAM's range field `regs_84_to_68` starts.
const REGS_84_TO_68: u16 = 68;

/// The clock's bits of an MCAM answer: MTUTC (its named bit of group 0), MTPPS and MTPPSE
/// (bits 0x53 and 0x54 of group 0, inside the range field regs_84_to_68), and in feature
/// group 0 what Linux asks
/// for before it uses them: mtutc_freq_adj_units (it may send scaled ppm),
/// ptpcyc2realtime_modify (it then writes MTUTC on its adjfine, adjtime and settime),
/// mtpps_fs and mtpps_enh_out_per_adj (with the general capabilities pps and pps_modify, its
/// MLX5_PPS_CAP). Not the extended ADJUST_TIME range nor the npps features: the model has
/// neither. Nothing when the profile has no clock.
pub(super) fn mcam(r: &mut McamReg<&mut [u8]>, caps: &Caps) {
    if !has_clock(caps) {
        return;
    }
    if r.access_reg_group() == 0 {
        let mut mask = r.mng_access_reg_cap_mask_mut();
        let mut regs = mask.access_regs_mut();
        regs.set_mtutc(true);
        regs.set_regs_84_to_68(
            1 << (id::MTPPS - MCAM_BASE - REGS_84_TO_68)
                | 1 << (id::MTPPSE - MCAM_BASE - REGS_84_TO_68),
        );
    }
    let mut mask = r.mng_feature_cap_mask_mut();
    let mut f = mask.enhanced_features_mut();
    f.set_mtutc_freq_adj_units(true);
    f.set_ptpcyc2realtime_modify(true);
    f.set_mtpps_fs(true);
    f.set_mtpps_enh_out_per_adj(true);
}

/// MTUTC: a write runs its operation on the UTC clock; both directions answer with
/// log_max_freq_adjustment (a write's other fields are echoed).
fn mtutc_on(clock: &Clock, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = MtutcReg::new_unchecked(image);
    if write {
        match r.operation() {
            Ok(MtutcOperation::SetTimeImmediate) => {
                let nsec = r.utc_nsec();
                ensure(nsec < NS_PER_SEC, Fail::bad_param(s::MTUTC_BAD_TIME))?;
                let ns = u64::from(r.utc_sec()) * u64::from(NS_PER_SEC) + u64::from(nsec);
                clock.set_utc(ns);
            }
            Ok(MtutcOperation::AdjustTime) => {
                // A signed 32-bit field.
                let delta = i64::from(r.time_adjustment() as i32);
                ensure(
                    delta.unsigned_abs() <= MTUTC_ADJUST_TIME_MAX,
                    Fail::bad_param(s::MTUTC_BAD_TIME_ADJUSTMENT),
                )?;
                clock.step_utc(delta);
            }
            Ok(MtutcOperation::AdjustFreqUtc) => {
                let v = i64::from(r.freq_adjustment() as i32);
                let rate = match r.freq_adj_units() {
                    Ok(MtutcFreqAdjUnits::Ppb) => v * RATE_ONE_PPB,
                    // 2^-16 ppm is 1000 × 2^-16 ppb.
                    Ok(MtutcFreqAdjUnits::ScaledPpm) => v * 1000,
                    Err(_) => return Err(Fail::bad_param(s::MTUTC_BAD_FREQ_UNITS)),
                };
                let max = (1i64 << LOG_MAX_FREQ_ADJUSTMENT) * RATE_ONE_PPB;
                ensure(rate.abs() <= max, Fail::bad_param(s::MTUTC_BAD_FREQ))?;
                clock.set_utc_rate(rate);
            }
            Err(_) => return Err(Fail::bad_param(s::MTUTC_BAD_OPERATION)),
        }
    } else {
        r.storage_mut().fill(0);
    }
    r.set_log_max_freq_adjustment(LOG_MAX_FREQ_ADJUSTMENT);
    Ok(())
}

/// MTPPS: the pin the image names must exist; a write applies the selected fields (checked
/// first, so a refused write changes nothing); the answer is the capabilities and the pin's
/// configuration.
fn mtpps_on(clock: &Clock, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = MtppsReg::new_unchecked(image);
    let index = r.pin();
    ensure(
        usize::from(index) < PPS_PINS,
        Fail::bad_param(s::MTPPS_BAD_PIN),
    )?;
    let mut pins = clock.pins();
    let pin = &mut pins[usize::from(index)];
    if write {
        *pin = apply(&r, *pin)?;
        clock.set_pins_changed(&pins);
    }
    let p = pins[usize::from(index)];
    drop(pins);
    r.storage_mut().fill(0);
    // The pin count and the pins' modes fit their 4-bit fields; pins 0 and 1 exist.
    const _: () = assert!(PPS_PINS == 2 && PIN_CAPS < 16);
    r.set_cap_number_of_pps_pins(PPS_PINS as u8);
    r.set_cap_max_num_of_pps_in_pins(PPS_PINS as u8);
    r.set_cap_max_num_of_pps_out_pins(PPS_PINS as u8);
    r.set_cap_pin_0_mode(PIN_CAPS);
    r.set_cap_pin_1_mode(PIN_CAPS);
    r.set_pin(index);
    r.set_enable(p.enable);
    // Both were checked to fit when written (mode 0 or 1, pattern 0 or 1).
    r.set_pin_mode(if p.mode == PpsPinMode::PpsOut.raw() {
        PpsPinMode::PpsOut
    } else {
        PpsPinMode::PpsIn
    });
    r.set_pattern(p.pattern & 1);
    r.set_time_stamp(p.time_stamp);
    r.set_out_pulse_duration(p.out_pulse_duration);
    r.set_enhanced_out_periodic_adjustment(p.enhanced_out_periodic_adjustment);
    Ok(())
}

/// The configuration `old` with the fields the write selects, or why the write is refused.
fn apply(r: &MtppsReg<&mut [u8]>, old: Pin) -> Outcome<Pin> {
    let fs = r.field_select();
    ensure(
        fs & !FIELDS == 0,
        Fail::bad_param(s::MTPPS_BAD_FIELD_SELECT),
    )?;
    let has = |bit: u64| fs & bit as u32 != 0;
    let mut p = old;
    if has(MTPPS_FS_PIN_MODE) {
        let mode = r
            .pin_mode()
            .map_err(|_| Fail::bad_param(s::MTPPS_BAD_PIN_MODE))?;
        let can = match mode {
            PpsPinMode::PpsIn => MTPPS_CAP_PIN_PPS_IN,
            PpsPinMode::PpsOut => MTPPS_CAP_PIN_PPS_OUT,
        };
        ensure(
            u64::from(PIN_CAPS) & can != 0,
            Fail::bad_param(s::MTPPS_BAD_PIN_MODE),
        )?;
        p.mode = mode.raw();
    }
    if has(MTPPS_FS_PATTERN) {
        // Inputs: rising (0) or falling (1) edge; outputs: one pulse (0) or periodic (1).
        ensure(r.pattern() <= 1, Fail::bad_param(s::MTPPS_BAD_PATTERN))?;
        p.pattern = r.pattern();
    }
    if has(MTPPS_FS_ENABLE) {
        p.enable = r.enable();
    }
    if has(MTPPS_FS_TIME_STAMP) {
        p.time_stamp = r.time_stamp();
    }
    if has(MTPPS_FS_OUT_PULSE_DURATION) {
        p.out_pulse_duration = r.out_pulse_duration();
    }
    if has(MTPPS_FS_ENH_OUT_PER_ADJ) {
        p.enhanced_out_periodic_adjustment = r.enhanced_out_periodic_adjustment();
    }
    // A new pulse time, or the pin turned on or into an output: its pulse is to come.
    if has(MTPPS_FS_TIME_STAMP) || has(MTPPS_FS_ENABLE) || has(MTPPS_FS_PIN_MODE) {
        p.fired = false;
    }
    Ok(p)
}

/// MTPPSE: the pin the image names must exist; a write sets its event mode and arm (the mode
/// checked first, so a refused write changes nothing); the answer is the pin's mode and arm.
fn mtppse_on(clock: &Clock, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = MtppseReg::new_unchecked(image);
    let index = r.pin();
    ensure(
        usize::from(index) < PPS_PINS,
        Fail::bad_param(s::MTPPSE_BAD_PIN),
    )?;
    let mut pins = clock.pins();
    let pin = &mut pins[usize::from(index)];
    if write {
        let mode = r
            .event_generation_mode()
            .map_err(|_| Fail::bad_param(s::MTPPSE_BAD_MODE))?;
        pin.event_mode = mode.raw();
        pin.event_armed = r.event_arm();
    }
    let (mode, armed) = (pin.event_mode, pin.event_armed);
    drop(pins);
    r.storage_mut().fill(0);
    r.set_pin(index);
    // Only values checked on the way in are kept.
    r.set_event_generation_mode(
        MtppseEventMode::from_raw(mode.into()).unwrap_or(MtppseEventMode::Disable),
    );
    r.set_event_arm(armed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlx5_prm::rt::View;
    use mlx5_prm::CmdStatus;

    fn mtutc_image(fill: impl FnOnce(&mut MtutcReg<&mut [u8]>)) -> Vec<u8> {
        let mut v = vec![0u8; MtutcReg::<&[u8]>::SIZE];
        fill(&mut MtutcReg::new_unchecked(&mut v[..]));
        v
    }

    fn mtpps_image(fill: impl FnOnce(&mut MtppsReg<&mut [u8]>)) -> Vec<u8> {
        let mut v = vec![0u8; MtppsReg::<&[u8]>::SIZE];
        fill(&mut MtppsReg::new_unchecked(&mut v[..]));
        v
    }

    fn refused(r: Outcome<()>, syndrome: u32) {
        assert_eq!(
            r,
            Err(Fail {
                status: CmdStatus::BadParamErr.raw(),
                syndrome
            })
        );
    }

    #[test]
    fn a_read_reports_the_frequency_bound_only() {
        let c = Clock::start(156_250);
        let mut img = mtutc_image(|r| r.set_utc_sec(7));
        mtutc_on(&c, &mut img, false).unwrap();
        let r = MtutcReg::new_unchecked(&img[..]);
        assert_eq!(r.log_max_freq_adjustment(), LOG_MAX_FREQ_ADJUSTMENT);
        assert_eq!(r.utc_sec(), 0);
    }

    #[test]
    fn operations_move_the_utc_clock_only() {
        let c = Clock::start(156_250);
        let ticks = c.ticks();
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::SetTimeImmediate);
            r.set_utc_sec(100);
            r.set_utc_nsec(5);
        });
        mtutc_on(&c, &mut img, true).unwrap();
        let t = c.utc_ns();
        assert!((100_000_000_005..100_100_000_000).contains(&t), "{t}");
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::AdjustTime);
            r.set_time_adjustment(-32767i32 as u32);
        });
        mtutc_on(&c, &mut img, true).unwrap();
        assert!(c.utc_ns() < t + 500_000_000 - 32_767);
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::AdjustFreqUtc);
            r.set_freq_adj_units(MtutcFreqAdjUnits::ScaledPpm);
            r.set_freq_adjustment((-65536i32) as u32); // -1 ppm
        });
        mtutc_on(&c, &mut img, true).unwrap();
        assert_eq!(c.utc_rate(), -1000 * RATE_ONE_PPB);
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::AdjustFreqUtc);
            r.set_freq_adjustment(250);
        });
        mtutc_on(&c, &mut img, true).unwrap();
        assert_eq!(c.utc_rate(), 250 * RATE_ONE_PPB);
        // The free-running counter went on undisturbed.
        assert!(c.ticks() >= ticks);
    }

    #[test]
    fn bad_operations_are_refused_and_change_nothing() {
        let c = Clock::start(156_250);
        c.set_utc_rate(7);
        for op in [0u8, 4, 0xf] {
            let mut img = mtutc_image(|r| r.set_operation_raw(op));
            refused(mtutc_on(&c, &mut img, true), s::MTUTC_BAD_OPERATION);
        }
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::SetTimeImmediate);
            r.set_utc_nsec(NS_PER_SEC);
        });
        refused(mtutc_on(&c, &mut img, true), s::MTUTC_BAD_TIME);
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::AdjustTime);
            r.set_time_adjustment(32768);
        });
        refused(mtutc_on(&c, &mut img, true), s::MTUTC_BAD_TIME_ADJUSTMENT);
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::AdjustFreqUtc);
            r.set_freq_adj_units_raw(5);
        });
        refused(mtutc_on(&c, &mut img, true), s::MTUTC_BAD_FREQ_UNITS);
        let mut img = mtutc_image(|r| {
            r.set_operation(MtutcOperation::AdjustFreqUtc);
            r.set_freq_adjustment(i32::MIN as u32);
        });
        refused(mtutc_on(&c, &mut img, true), s::MTUTC_BAD_FREQ);
        assert_eq!(c.utc_rate(), 7);
    }

    #[test]
    fn pins_keep_their_configuration() {
        let c = Clock::start(156_250);
        let mut img = mtpps_image(|r| {
            r.set_pin(1);
            r.set_pin_mode(PpsPinMode::PpsOut);
            r.set_pattern(1);
            r.set_enable(true);
            r.set_time_stamp(0x1234_5678_9abc);
            r.set_field_select(
                (MTPPS_FS_PIN_MODE | MTPPS_FS_PATTERN | MTPPS_FS_ENABLE | MTPPS_FS_TIME_STAMP)
                    as u32,
            );
        });
        mtpps_on(&c, &mut img, true).unwrap();
        let mut img = mtpps_image(|r| r.set_pin(1));
        mtpps_on(&c, &mut img, false).unwrap();
        let r = MtppsReg::new_unchecked(&img[..]);
        assert_eq!(r.cap_number_of_pps_pins(), PPS_PINS as u8);
        assert_eq!((r.cap_pin_0_mode(), r.cap_pin_1_mode()), (3, 3));
        assert_eq!(r.pin_mode(), Ok(PpsPinMode::PpsOut));
        assert!(r.enable());
        assert_eq!((r.pattern(), r.time_stamp()), (1, 0x1234_5678_9abc));
        // Disabling leaves the rest.
        let mut img = mtpps_image(|r| {
            r.set_pin(1);
            r.set_field_select(MTPPS_FS_ENABLE as u32);
        });
        mtpps_on(&c, &mut img, true).unwrap();
        let r = MtppsReg::new_unchecked(&img[..]);
        assert!(!r.enable());
        assert_eq!(r.pin_mode(), Ok(PpsPinMode::PpsOut));
        // Pin 0 is untouched.
        let mut img = mtpps_image(|_| {});
        mtpps_on(&c, &mut img, false).unwrap();
        assert!(!MtppsReg::new_unchecked(&img[..]).enable());
    }

    #[test]
    fn bad_pins_and_fields_are_refused_and_change_nothing() {
        let c = Clock::start(156_250);
        for pin in [PPS_PINS as u8, 8, 255] {
            let mut img = mtpps_image(|r| r.set_pin(pin));
            refused(mtpps_on(&c, &mut img, false), s::MTPPS_BAD_PIN);
            refused(mtpps_on(&c, &mut img, true), s::MTPPS_BAD_PIN);
        }
        let mut img = mtpps_image(|r| r.set_field_select(0x2 | MTPPS_FS_ENABLE as u32));
        refused(mtpps_on(&c, &mut img, true), s::MTPPS_BAD_FIELD_SELECT);
        let mut img = mtpps_image(|r| {
            r.set_pin_mode_raw(2);
            r.set_enable(true);
            r.set_field_select((MTPPS_FS_PIN_MODE | MTPPS_FS_ENABLE) as u32);
        });
        refused(mtpps_on(&c, &mut img, true), s::MTPPS_BAD_PIN_MODE);
        let mut img = mtpps_image(|r| {
            r.set_pattern(2);
            r.set_enable(true);
            r.set_field_select((MTPPS_FS_PATTERN | MTPPS_FS_ENABLE) as u32);
        });
        refused(mtpps_on(&c, &mut img, true), s::MTPPS_BAD_PATTERN);
        assert_eq!(c.pins()[0], Pin::default());
    }

    #[test]
    fn mtppse_sets_and_reports_a_pins_events() {
        let c = Clock::start(156_250);
        let mut img = [0u8; 16];
        {
            let mut r = MtppseReg::new_unchecked(&mut img[..]);
            r.set_pin(1);
            r.set_event_generation_mode(MtppseEventMode::OnceTillArm);
            r.set_event_arm(true);
        }
        mtppse_on(&c, &mut img, true).unwrap();
        let p = c.pins()[1];
        assert_eq!((p.event_mode, p.event_armed), (2, true));
        let mut img = [0u8; 16];
        img[3] = 1;
        mtppse_on(&c, &mut img, false).unwrap();
        let r = MtppseReg::new_unchecked(&img[..]);
        assert_eq!(r.event_generation_mode(), Ok(MtppseEventMode::OnceTillArm));
        assert!(r.event_arm());
        let mut bad = [0u8; 16];
        bad[3] = 1;
        bad[7] = 3; // event_generation_mode 3
        refused(mtppse_on(&c, &mut bad, true), s::MTPPSE_BAD_MODE);
        bad[3] = 2;
        refused(mtppse_on(&c, &mut bad, false), s::MTPPSE_BAD_PIN);
        assert_eq!(c.pins()[1].event_mode, 2, "unchanged");
    }

    #[test]
    fn any_image_is_answered_without_panic() {
        let c = Clock::start(156_250);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let mut a = vec![0u8; MtutcReg::<&[u8]>::SIZE];
            let mut b = vec![0u8; MtppsReg::<&[u8]>::SIZE];
            for x in a.iter_mut().chain(b.iter_mut()) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *x = seed as u8;
            }
            // Small pin numbers and field selects often, so writes get through.
            b[0x23] &= 3;
            let write = seed & 1 == 1;
            let _ = mtutc_on(&c, &mut a, write);
            let _ = mtpps_on(&c, &mut b, write);
            let mut e = [0u8; 16];
            e.copy_from_slice(&b[..16]);
            let _ = mtppse_on(&c, &mut e, write);
        }
    }
}
