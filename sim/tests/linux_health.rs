//! Health as Linux's poll (`poll_health`, `mlx5_health_check_fatal_sensors` in health.c) reads
//! it: the counter at 0x1010 runs on the clock from power-on, with no reads and no thread;
//! it stops with a syndrome in the health buffer when firmware fails, or without one when it
//! hangs; commands stop completing either way; the fields sit where the kernel reads them.

mod common;

use common::{Host, Tweak};
use mlx5_prm::rt::{Command, MmioBytes};
use mlx5_prm::{cmd, InitialSeg};
use mlx5_sim::{Config, Device, HealthError, HEALTH_COUNTER_PERIOD};
use std::time::Duration;

fn seg(dev: &Device) -> InitialSeg<MmioBytes<&Device>> {
    InitialSeg::new_unchecked(MmioBytes::new(dev, InitialSeg::SIZE))
}

/// The kernel's fatal sensors that look at the device: fw_ver all ones, NIC interface
/// disabled (1) or in software reset (7), rfr with a non-zero syndrome.
fn linux_sees_fatal(dev: &Device) -> bool {
    let s = seg(dev);
    let h = s.health_buffer();
    let nic = dev.read32(0x14) >> 8 & 7;
    h.fw_version() == u32::MAX || nic == 1 || nic == 7 || (h.rfr() && h.synd_raw() != 0)
}

/// True when QUERY_ISSI posted in slot 1 comes back.
fn commands_complete(host: &Host) -> bool {
    let mut input = vec![0u8; 16];
    cmd::QueryIssi::input(&mut input[..], 0).unwrap();
    host.submit(1, &input, 0x70, &Tweak::default()).is_some()
}

#[test]
fn the_counter_runs_on_the_clock_from_power_on() {
    let dev = Device::new(Config::linux_probe_only());
    // Linux starts its poll before ENABLE_HCA; nothing else has happened yet.
    let a = seg(&dev).health_counter();
    assert_ne!(a, 0, "alive from the start");
    std::thread::sleep(HEALTH_COUNTER_PERIOD * 10);
    let b = seg(&dev).health_counter();
    assert!(
        b >= a + 5,
        "about one tick per period without reads in between: {a} then {b}"
    );
    assert!(!linux_sees_fatal(&dev));
}

#[test]
fn a_fatal_error_stops_the_counter_and_fills_the_health_buffer() {
    let host = Host::new(Config::linux_probe_only());
    host.bring_up();
    let dev = &host.dev;
    dev.inject_health_error(HealthError {
        syndrome: 0x8,
        ext_synd: 0xbeef,
        irisc_index: 1,
        severity: 3,
        reset_required: true,
    });
    // The bytes the kernel's struct health_buffer reads (offsets from 0x200): rfr_severity
    // at 0x38, irisc_index 0x3c, synd 0x3d, ext_synd 0x3e; the syndrome byte over the counter.
    assert_eq!(dev.read32(0x238) >> 24, 0x80 | 0x08 | 3);
    assert_eq!(dev.read32(0x23c), 1 << 24 | 0x8 << 16 | 0xbeef);
    assert_eq!(dev.read32(0x1010) >> 24, 0x8);
    assert!(linux_sees_fatal(dev));
    let stopped = seg(dev).health_counter();
    std::thread::sleep(HEALTH_COUNTER_PERIOD * 4);
    assert_eq!(seg(dev).health_counter(), stopped, "three polls would miss");
    assert!(!commands_complete(&host), "firmware is dead");
    // A syndrome without rfr is reported, not fatal.
    dev.inject_health_error(HealthError {
        reset_required: false,
        ..HealthError::fatal(0x1)
    });
    assert!(!linux_sees_fatal(dev));
    assert_eq!(seg(dev).health_buffer().synd_raw(), 0x1);
    dev.clear_health_error();
    assert_eq!(seg(dev).health_buffer().synd_raw(), 0);
    std::thread::sleep(HEALTH_COUNTER_PERIOD * 4);
    assert!(
        seg(dev).health_counter() > stopped,
        "runs on after the fault clears"
    );
    // The entry left in slot 1 is served by the next doorbell of its slot.
    assert!(commands_complete(&host));
}

#[test]
fn a_hang_stops_the_counter_without_a_syndrome() {
    let host = Host::new(Config::linux_probe_only());
    host.bring_up();
    let dev = &host.dev;
    dev.stop_health_counter();
    let c = seg(dev).health_counter();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(seg(dev).health_counter(), c);
    assert_eq!(seg(dev).health_buffer().synd_raw(), 0);
    assert!(!linux_sees_fatal(dev), "only the miss counter notices");
    assert!(!commands_complete(&host));
    // set_health_syndrome (the older control) reports a fatal error with rfr.
    dev.set_health_syndrome(0x9);
    assert!(linux_sees_fatal(dev));
    dev.set_health_syndrome(0);
    assert!(!linux_sees_fatal(dev));
}
