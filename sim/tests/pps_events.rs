//! PPS events: MTPPSE (0x9054) per pin (read, write, a pin the model lacks, an undefined
//! mode), an input pulse (`Device::pps_pulse`) raising a pps_event EQE with the pin and the
//! time (internal timer ticks, or the UTC clock's seconds and nanoseconds in real-time
//! mode), once-till-armed against repetitive, no event when the pin's events are off, the pin
//! is not an enabled input or no EQ takes the event, and output pins pulsing at their
//! time_stamp from the device's own work (periodic ones every second after, single pulses
//! once).

mod common;

use common::{Host, Reply};
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{
    cmd, AccessRegisterId, CmdStatus, EventType, HcaTsFormatCap, MtppsReg, MtppseEventMode,
    MtppseReg, MtutcOperation, MtutcReg, PpsEvent, PpsPinMode, MTPPS_FS_ENABLE, MTPPS_FS_PATTERN,
    MTPPS_FS_PIN_MODE, MTPPS_FS_TIME_STAMP,
};
use mlx5_sim::{syndrome as syn, Config, DmaRegion};
use std::time::Duration;

const BAD_PARAM: u8 = CmdStatus::BadParamErr as u8;
const KHZ: u64 = 156_250;

/// ACCESS_REGISTER of `reg` (op_mod 0 write, 1 read) with `image`.
fn access(host: &Host, reg: AccessRegisterId, op_mod: u16, image: &[u8]) -> Reply {
    let mut input = vec![0u8; 0x10 + image.len()];
    input[..2].copy_from_slice(&cmd::AccessRegister::OPCODE.to_be_bytes());
    input[6..8].copy_from_slice(&op_mod.to_be_bytes());
    input[10..12].copy_from_slice(&reg.raw().to_be_bytes());
    input[0x10..].copy_from_slice(image);
    host.exec(&input, 0x10 + image.len())
}

fn mtppse(host: &Host, op_mod: u16, fill: impl FnOnce(&mut MtppseReg<&mut [u8]>)) -> Reply {
    let mut image = vec![0u8; MtppseReg::<&[u8]>::SIZE];
    fill(&mut MtppseReg::new_unchecked(&mut image[..]));
    access(host, AccessRegisterId::Mtppse, op_mod, &image)
}

/// MTPPSE write: `mode` and `arm` for `pin`.
fn events(host: &Host, pin: u8, mode: MtppseEventMode, arm: bool) {
    mtppse(host, 0, |r| {
        r.set_pin(pin);
        r.set_event_generation_mode(mode);
        r.set_event_arm(arm);
    })
    .ok();
}

fn mtpps(host: &Host, op_mod: u16, fill: impl FnOnce(&mut MtppsReg<&mut [u8]>)) -> Reply {
    let mut image = vec![0u8; MtppsReg::<&[u8]>::SIZE];
    fill(&mut MtppsReg::new_unchecked(&mut image[..]));
    access(host, AccessRegisterId::Mtpps, op_mod, &image)
}

/// MTPPS write: `pin` enabled in `mode` with `pattern`, its next pulse at `time_stamp`.
fn pin(host: &Host, pin: u8, mode: PpsPinMode, pattern: u8, time_stamp: u64) {
    mtpps(host, 0, |r| {
        r.set_pin(pin);
        r.set_pin_mode(mode);
        r.set_pattern(pattern);
        r.set_enable(true);
        r.set_time_stamp(time_stamp);
        r.set_field_select(
            (MTPPS_FS_PIN_MODE | MTPPS_FS_PATTERN | MTPPS_FS_ENABLE | MTPPS_FS_TIME_STAMP) as u32,
        );
    })
    .ok();
}

/// A brought-up device with an EQ subscribed to PPS events only, and a reader of it.
struct Dev {
    host: Host,
    ring: DmaRegion,
    ci: std::cell::Cell<u64>,
}

impl Dev {
    fn new(config: Config) -> Dev {
        let host = Host::new(config);
        host.bring_up();
        let uar = host.alloc_uar();
        let (_, ring) = host.create_eq(3, 1 << EventType::PpsEvent.raw(), uar, 0);
        Dev {
            host,
            ring,
            ci: Default::default(),
        }
    }

    /// The next EQE, as (event type, pin, time stamp), if the device wrote one.
    fn next(&self) -> Option<(u8, u8, u64)> {
        let ci = self.ci.get();
        if !self.host.eqe_ready(&self.ring, ci % 8, (ci / 8) % 2 == 1) {
            return None;
        }
        let e = self.host.eqe(&self.ring, ci % 8);
        self.ci.set(ci + 1);
        let ev = PpsEvent::new_unchecked(&e.storage()[0x20..0x3c]);
        Some((e.event_type_raw(), ev.pin(), ev.time_stamp()))
    }

    /// The internal timer (high, low, high).
    fn timer(&self) -> u64 {
        self.pair(0x1000)
    }

    fn pair(&self, at: usize) -> u64 {
        let dev = &self.host.dev;
        loop {
            let h = dev.read32(at);
            let l = dev.read32(at + 4);
            if dev.read32(at) == h {
                return (u64::from(h) << 32) | u64::from(l);
            }
        }
    }
}

#[test]
fn mtppse_keeps_each_pins_mode_and_refuses_what_it_lacks() {
    let d = Dev::new(Config::default());
    let h = &d.host;
    let read = |p: u8| {
        let r = mtppse(h, 1, |r| r.set_pin(p)).ok();
        let v = MtppseReg::new_unchecked(&r.out[0x10..]);
        (v.pin(), v.event_generation_mode(), v.event_arm())
    };
    assert_eq!(read(0), (0, Ok(MtppseEventMode::Disable), false));
    events(h, 1, MtppseEventMode::OnceTillArm, true);
    assert_eq!(read(1), (1, Ok(MtppseEventMode::OnceTillArm), true));
    assert_eq!(read(0), (0, Ok(MtppseEventMode::Disable), false));
    events(h, 0, MtppseEventMode::Repetitive, false);
    assert_eq!(read(0), (0, Ok(MtppseEventMode::Repetitive), false));
    for p in [2u8, 8, 255] {
        mtppse(h, 1, |r| r.set_pin(p)).fails(BAD_PARAM, syn::MTPPSE_BAD_PIN);
        mtppse(h, 0, |r| r.set_pin(p)).fails(BAD_PARAM, syn::MTPPSE_BAD_PIN);
    }
    for mode in [3u8, 0xf] {
        mtppse(h, 0, |r| {
            r.set_pin(1);
            r.set_event_generation_mode_raw(mode);
            r.set_event_arm(false);
        })
        .fails(BAD_PARAM, syn::MTPPSE_BAD_MODE);
    }
    // Refused writes changed nothing.
    assert_eq!(read(1), (1, Ok(MtppseEventMode::OnceTillArm), true));
    // A profile without the clock unit has no MTPPSE.
    let linux = Host::new(Config::linux_probe_only());
    linux.bring_up();
    mtppse(&linux, 1, |_| {}).fails(BAD_PARAM, syn::REG_UNKNOWN);
}

#[test]
fn an_input_pulse_raises_an_event_with_its_pin_and_time() {
    let d = Dev::new(Config::default());
    pin(&d.host, 1, PpsPinMode::PpsIn, 0, 0);
    events(&d.host, 1, MtppseEventMode::Repetitive, false);
    let before = d.timer();
    assert!(d.host.dev.pps_pulse(1));
    let after = d.timer();
    let (ty, p, ts) = d.next().expect("a PPS event");
    assert_eq!((ty, p), (EventType::PpsEvent.raw(), 1));
    assert!(before <= ts && ts <= after, "{before} <= {ts} <= {after}");
    // Repetitive: every pulse.
    assert!(d.host.dev.pps_pulse(1));
    assert_eq!(d.next().map(|e| e.1), Some(1));
    assert!(d.next().is_none());
}

#[test]
fn in_real_time_mode_the_event_carries_the_utc_clock() {
    let d = Dev::new(Config::default().with_ts_formats(HcaTsFormatCap::FreeRunningAndRealTime));
    let mut image = vec![0u8; MtutcReg::<&[u8]>::SIZE];
    let mut r = MtutcReg::new_unchecked(&mut image[..]);
    r.set_operation(MtutcOperation::SetTimeImmediate);
    r.set_utc_sec(1_700_000_000);
    access(&d.host, AccessRegisterId::Mtutc, 0, &image).ok();
    pin(&d.host, 0, PpsPinMode::PpsIn, 1, 0);
    events(&d.host, 0, MtppseEventMode::Repetitive, false);
    assert!(d.host.dev.pps_pulse(0));
    let (_, p, ts) = d.next().unwrap();
    assert_eq!((p, ts >> 32), (0, 1_700_000_000));
    assert!(ts & 0xffff_ffff < 1_000_000_000);
}

#[test]
fn once_till_armed_raises_one_event_per_arm() {
    let d = Dev::new(Config::default());
    pin(&d.host, 0, PpsPinMode::PpsIn, 0, 0);
    events(&d.host, 0, MtppseEventMode::OnceTillArm, true);
    assert!(d.host.dev.pps_pulse(0));
    assert!(!d.host.dev.pps_pulse(0), "disarmed by the first event");
    assert_eq!(d.next().map(|e| e.1), Some(0));
    assert!(d.next().is_none());
    let r = mtppse(&d.host, 1, |r| r.set_pin(0)).ok();
    assert!(!MtppseReg::new_unchecked(&r.out[0x10..]).event_arm());
    events(&d.host, 0, MtppseEventMode::OnceTillArm, true);
    assert!(d.host.dev.pps_pulse(0));
    assert!(d.next().is_some() && d.next().is_none());
}

#[test]
fn no_event_unless_an_enabled_armed_input_and_a_subscribed_eq() {
    let d = Dev::new(Config::default());
    // Events off (the power-on mode), and a pin that is not enabled.
    assert!(!d.host.dev.pps_pulse(0));
    events(&d.host, 0, MtppseEventMode::Repetitive, false);
    assert!(!d.host.dev.pps_pulse(0), "pin not enabled");
    // An output pin takes no input pulse.
    pin(&d.host, 0, PpsPinMode::PpsOut, 0, u64::MAX);
    assert!(!d.host.dev.pps_pulse(0));
    // Once till armed, not armed.
    pin(&d.host, 1, PpsPinMode::PpsIn, 0, 0);
    events(&d.host, 1, MtppseEventMode::OnceTillArm, false);
    assert!(!d.host.dev.pps_pulse(1));
    // Disabled again.
    events(&d.host, 1, MtppseEventMode::Disable, true);
    assert!(!d.host.dev.pps_pulse(1));
    // Pins the model lacks.
    assert!(!d.host.dev.pps_pulse(2) && !d.host.dev.pps_pulse(255));
    assert!(d.next().is_none());

    // An EQ that does not subscribe to PPS events gets none.
    let host = Host::new(Config::default());
    host.bring_up();
    let uar = host.alloc_uar();
    let (_, ring) = host.create_eq(3, 1 << EventType::PortChange.raw(), uar, 0);
    pin(&host, 0, PpsPinMode::PpsIn, 0, 0);
    events(&host, 0, MtppseEventMode::Repetitive, false);
    assert!(!host.dev.pps_pulse(0));
    assert!(!host.eqe_ready(&ring, 0, false));
}

#[test]
fn output_pins_pulse_at_their_time() {
    let d = Dev::new(Config::default());
    // Periodic output 5 ms from now.
    let due = d.timer() + 5 * KHZ;
    pin(&d.host, 1, PpsPinMode::PpsOut, 1, due);
    events(&d.host, 1, MtppseEventMode::Repetitive, false);
    d.host.dev.tick();
    assert!(d.next().is_none(), "not yet");
    std::thread::sleep(Duration::from_millis(10));
    d.host.dev.tick();
    let (ty, p, ts) = d.next().expect("the pulse's event");
    assert_eq!((ty, p, ts), (EventType::PpsEvent.raw(), 1, due));
    d.host.dev.tick();
    assert!(d.next().is_none(), "one pulse a second");
    // The next pulse is a second later.
    let r = mtpps(&d.host, 1, |r| r.set_pin(1)).ok();
    assert_eq!(
        MtppsReg::new_unchecked(&r.out[0x10..]).time_stamp(),
        due + 1000 * KHZ
    );

    // A single pulse (pattern 0) on pin 0, already due (its events on first: the device's
    // work after the MTPPS write already pulses it): one event, then none.
    events(&d.host, 0, MtppseEventMode::Repetitive, false);
    pin(&d.host, 0, PpsPinMode::PpsOut, 0, d.timer());
    d.host.dev.tick();
    assert_eq!(d.next().map(|e| e.1), Some(0));
    d.host.dev.tick();
    assert!(d.next().is_none());
    // With events off, an output still pulses but raises nothing.
    events(&d.host, 0, MtppseEventMode::Disable, false);
    pin(&d.host, 0, PpsPinMode::PpsOut, 0, d.timer());
    d.host.dev.tick();
    assert!(d.next().is_none());
}

#[test]
fn any_mtppse_image_is_answered_without_panic() {
    let d = Dev::new(Config::default());
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..500 {
        let mut image = [0u8; 16];
        for b in &mut image {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = seed as u8;
        }
        image[3] &= 3;
        let r = access(&d.host, AccessRegisterId::Mtppse, (seed & 1) as u16, &image);
        assert!(r.status() == 0 || r.status() == BAD_PARAM);
        d.host.dev.pps_pulse(image[3]);
        d.host.dev.tick();
    }
}
