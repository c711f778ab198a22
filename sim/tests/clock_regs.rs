//! The clock through the command interface and the initialization segment: MTUTC and MTPPS
//! exist (and MCAM lists them) exactly on a profile with the clock, which the Linux guest
//! profiles are not; MTUTC's operations show in the segment's UTC clock words (0x1040) and
//! leave the internal timer (0x1000) alone; a timer configured to start before a wrap wraps;
//! bad operations and pins are refused with BAD_PARAM and their syndromes.

mod common;

use common::{Host, Reply};
use mlx5_prm::rt::{Command, View};
use mlx5_prm::{
    cmd, AccessRegisterId, CmdStatus, McamReg, MtppsReg, MtutcFreqAdjUnits, MtutcOperation,
    MtutcReg,
};
use mlx5_sim::{syndrome as syn, Config};
use std::time::Duration;

const BAD_PARAM: u8 = CmdStatus::BadParamErr as u8;
const KHZ: u64 = 156_250;

/// ACCESS_REGISTER of `reg` (op_mod 0 write, 1 read) with `image`; the reply's image follows
/// its 16-byte header.
fn access(host: &Host, reg: AccessRegisterId, op_mod: u16, image: &[u8]) -> Reply {
    let mut input = vec![0u8; 0x10 + image.len()];
    input[..2].copy_from_slice(&cmd::AccessRegister::OPCODE.to_be_bytes());
    input[6..8].copy_from_slice(&op_mod.to_be_bytes());
    input[10..12].copy_from_slice(&reg.raw().to_be_bytes());
    input[0x10..].copy_from_slice(image);
    host.exec(&input, 0x10 + image.len())
}

fn mtutc(host: &Host, fill: impl FnOnce(&mut MtutcReg<&mut [u8]>)) -> Reply {
    let mut image = vec![0u8; MtutcReg::<&[u8]>::SIZE];
    fill(&mut MtutcReg::new_unchecked(&mut image[..]));
    access(host, AccessRegisterId::Mtutc, 0, &image)
}

/// A 64-bit pair of the segment read as Linux reads it: high, low, high again.
fn pair(host: &Host, at: usize) -> u64 {
    loop {
        let h = host.dev.read32(at);
        let l = host.dev.read32(at + 4);
        if host.dev.read32(at) == h {
            return (u64::from(h) << 32) | u64::from(l);
        }
    }
}

/// The UTC clock in ns, from the segment's seconds and nanoseconds.
fn utc(host: &Host) -> u64 {
    let v = pair(host, 0x1040);
    (v >> 32) * 1_000_000_000 + (v & 0xffff_ffff)
}

#[test]
fn the_clock_registers_follow_the_profile() {
    for (config, has) in [
        (Config::default(), true),
        (Config::linux_probe_only(), false),
        (Config::linux_ethernet(), false),
    ] {
        let host = Host::new(config);
        host.bring_up();
        let mcam = access(&host, AccessRegisterId::Mcam, 1, &[0; 0x48]).ok();
        let m = McamReg::new_unchecked(&mcam.out[0x10..]);
        let features = m.mng_feature_cap_mask();
        let f = features.enhanced_features();
        assert_eq!(m.mng_access_reg_cap_mask().access_regs().mtutc(), has);
        // MTPPS, 0x9053, is bit 15 of the range field of registers 84..68; MTPPSE, 0x9054,
        // bit 16.
        let range = m.mng_access_reg_cap_mask().access_regs().regs_84_to_68();
        assert_eq!(range >> 15 & 1 == 1, has);
        assert_eq!(range >> 16 & 1 == 1, has);
        assert_eq!(
            (f.ptpcyc2realtime_modify(), f.mtutc_freq_adj_units()),
            (has, has)
        );
        assert_eq!((f.mtpps_fs(), f.mtpps_enh_out_per_adj()), (has, has));
        assert!(!f.mtutc_time_adjustment_extended_range() && !f.npps_period());
        let r = access(&host, AccessRegisterId::Mtutc, 1, &[0; 0x1c]);
        let p = access(&host, AccessRegisterId::Mtpps, 1, &[0; 0x3c]);
        if has {
            let r = r.ok();
            assert_eq!(
                MtutcReg::new_unchecked(&r.out[0x10..]).log_max_freq_adjustment(),
                24
            );
            let p = p.ok();
            assert_eq!(
                MtppsReg::new_unchecked(&p.out[0x10..]).cap_number_of_pps_pins(),
                2
            );
        } else {
            r.fails(BAD_PARAM, syn::REG_UNKNOWN);
            p.fails(BAD_PARAM, syn::REG_UNKNOWN);
        }
    }
}

#[test]
fn mtutc_steers_the_utc_clock_and_not_the_timer() {
    let host = Host::inline();
    host.bring_up();
    assert!(utc(&host) < 1_000_000_000, "the UTC clock starts at 0");
    let t0 = pair(&host, 0x1000);
    mtutc(&host, |r| {
        r.set_operation(MtutcOperation::SetTimeImmediate);
        r.set_utc_sec(1_700_000_000);
        r.set_utc_nsec(999_999_999);
    })
    .ok();
    let u = utc(&host);
    assert!(
        (1_700_000_000_999_999_999..1_700_000_001_100_000_000).contains(&u),
        "{u}"
    );
    mtutc(&host, |r| {
        r.set_operation(MtutcOperation::AdjustTime);
        r.set_time_adjustment(-32_767i32 as u32);
    })
    .ok();
    // Half a percent slow, in ppb.
    mtutc(&host, |r| {
        r.set_operation(MtutcOperation::AdjustFreqUtc);
        r.set_freq_adj_units(MtutcFreqAdjUnits::Ppb);
        r.set_freq_adjustment((-5_000_000i32) as u32);
    })
    .ok();
    let (u0, r0) = (utc(&host), pair(&host, 0x1000));
    std::thread::sleep(Duration::from_millis(100));
    let (u1, r1) = (utc(&host), pair(&host, 0x1000));
    let nominal = (r1 - r0) * 1_000_000 / KHZ;
    let ratio = (u1 - u0) as f64 / nominal as f64;
    assert!((ratio - 0.995).abs() < 0.001, "{ratio}");
    // The timer ran on at its own rate all along.
    assert!(r1 > t0 && (r1 - t0) * 1_000_000 / KHZ >= 100_000_000);
}

#[test]
fn bad_operations_and_pins_are_refused() {
    let host = Host::inline();
    host.bring_up();
    for op in [0u8, 4, 9, 15] {
        mtutc(&host, |r| r.set_operation_raw(op)).fails(BAD_PARAM, syn::MTUTC_BAD_OPERATION);
    }
    mtutc(&host, |r| {
        r.set_operation(MtutcOperation::SetTimeImmediate);
        r.set_utc_nsec(1_000_000_000);
    })
    .fails(BAD_PARAM, syn::MTUTC_BAD_TIME);
    mtutc(&host, |r| {
        r.set_operation(MtutcOperation::AdjustFreqUtc);
        r.set_freq_adj_units(MtutcFreqAdjUnits::Ppb);
        r.set_freq_adjustment(1 << 25);
    })
    .fails(BAD_PARAM, syn::MTUTC_BAD_FREQ);
    for pin in [2u8, 8, 0xff] {
        let mut image = [0u8; 0x3c];
        MtppsReg::new_unchecked(&mut image[..]).set_pin(pin);
        access(&host, AccessRegisterId::Mtpps, 1, &image).fails(BAD_PARAM, syn::MTPPS_BAD_PIN);
        access(&host, AccessRegisterId::Mtpps, 0, &image).fails(BAD_PARAM, syn::MTPPS_BAD_PIN);
    }
    // Refusals are not "unimplemented".
    assert!(host.dev.unimplemented_commands().commands.is_empty());
}

#[test]
fn a_timer_started_before_the_wrap_wraps() {
    for bits in [41u32, 64] {
        let host = Host::new(Config::default().with_timer_before_wrap(bits, KHZ * 300));
        let wrap = 1u128 << bits;
        let t0 = u128::from(pair(&host, 0x1000));
        assert!(
            t0 + u128::from(KHZ) * 300 >= wrap && t0 < wrap,
            "{bits}: {t0:#x}"
        );
        std::thread::sleep(Duration::from_millis(350));
        let t1 = u128::from(pair(&host, 0x1000));
        // Past the wrap: at 2^41 for 41 bits, around to a small value for 64.
        let past = if bits == 64 {
            t1 < wrap / 2
        } else {
            t1 >= wrap
        };
        assert!(past, "{bits}: {t1:#x}");
    }
}
