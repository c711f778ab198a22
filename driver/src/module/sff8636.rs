//! SFF-8636 (QSFP, QSFP+, QSFP28). The lower page holds the status, flags and monitors;
//! upper page 00h the identity (check codes CC_BASE and CC_EXT); upper page 03h, present
//! only when the memory is paged, the alarm and warning thresholds.

use super::codes::{self, Family};
use super::compliance;
use super::fields::{Bytes, FlagBits};
use super::report::{
    Coded, Flags, Lane, LaneFlags, LinkLength, Module, Monitors, PowerClass, RxPowerKind, Standard,
    Thresholds,
};
use super::units::{bias_ma, power_mw, temperature_c, vcc_v};
use super::{read_half, DecodeOptions, EepromReader, Half, ModuleError, I2C_A0};

/// SFF-8636 modules have four lanes.
const LANES: usize = 4;

/// Lower page byte 2, bit 2: flat memory (upper page 00h only).
const STATUS: usize = 2;
/// Lower page flags: temperature (6), supply voltage (7), then per lane pairs of bytes for
/// rx power (9-10), tx bias (11-12) and tx power (13-14); two lanes a byte, the odd lane in
/// the upper nibble.
const FLAGS_TEMP: usize = 6;
const FLAGS_VCC: usize = 7;
const FLAGS_RX_POWER: usize = 9;
const FLAGS_TX_BIAS: usize = 11;
const FLAGS_TX_POWER: usize = 13;
/// Lower page monitors.
const TEMPERATURE: usize = 22;
const VCC: usize = 26;
const RX_POWER: usize = 34;
const TX_BIAS: usize = 42;
const TX_POWER: usize = 50;

/// Page 00h fields.
const EXT_ID: usize = 129;
const CONNECTOR: usize = 130;
const COMPLIANCE: usize = 131;
const ENCODING: usize = 139;
const BIT_RATE: usize = 140;
const DEVICE_TECH: usize = 147;
const VENDOR_NAME: usize = 148;
const VENDOR_OUI: usize = 165;
const VENDOR_PN: usize = 168;
const VENDOR_REV: usize = 184;
const WAVELENGTH: usize = 186;
const CC_BASE: usize = 191;
const EXT_COMPLIANCE: usize = 192;
const VENDOR_SN: usize = 196;
const DATE_CODE: usize = 212;
const DIAG_TYPE: usize = 220;
const BIT_RATE_EXT: usize = 222;
const CC_EXT: usize = 223;

/// Page 03h thresholds: temperature, supply voltage, rx power, tx bias, tx power; each high
/// alarm, low alarm, high warning, low warning.
const TH_TEMP: usize = 128;
const TH_VCC: usize = 144;
const TH_RX_POWER: usize = 176;
const TH_TX_BIAS: usize = 184;
const TH_TX_POWER: usize = 192;

/// Reads the lower page, page 00h and (for paged memory) page 03h, and decodes them.
pub(super) fn read(
    r: &mut dyn EepromReader,
    id: u8,
    opts: &DecodeOptions,
) -> Result<Module, ModuleError> {
    let lower = read_half(r, I2C_A0, 0, 0, Half::Lower)?;
    let lo = Bytes::lower(&lower);
    let page00 = read_half(r, I2C_A0, 0, 0, Half::Upper)?;
    let up = Bytes::upper(&page00);
    let mut checksums = Vec::new();
    up.check(
        "CC_BASE",
        I2C_A0,
        0,
        (128, 190),
        CC_BASE,
        opts,
        &mut checksums,
    )?;
    up.check(
        "CC_EXT",
        I2C_A0,
        0,
        (192, 222),
        CC_EXT,
        opts,
        &mut checksums,
    )?;
    let flat = lo.bit(STATUS, 2);
    let page03 = if flat {
        None
    } else {
        Some(read_half(r, I2C_A0, 0, 3, Half::Upper)?)
    };

    let tech = up.byte(DEVICE_TECH) >> 4;
    let copper = tech >= 0x0a;
    Ok(Module {
        standard: Standard::Sff8636 {
            revision: Coded::new(lo.byte(1), codes::sff8636_revision_name),
        },
        identifier: Coded::new(id, codes::identifier_name),
        ext_identifier: Some(up.byte(EXT_ID)),
        power_class: Some(power_class(up.byte(EXT_ID))),
        connector: Coded::new(up.byte(CONNECTOR), codes::connector_name),
        compliance_codes: {
            let mut c = up.slice(COMPLIANCE, 8).to_vec();
            c.push(up.byte(EXT_COMPLIANCE));
            c
        },
        compliance: compliance::sff8636(up.slice(COMPLIANCE, 8), up.byte(EXT_COMPLIANCE)),
        media_type: None,
        applications: Vec::new(),
        encoding: Some(Coded::new(up.byte(ENCODING), |c| {
            codes::encoding_name(c, Family::Sff8636)
        })),
        nominal_bit_rate_mbps: bit_rate(up.byte(BIT_RATE), up.byte(BIT_RATE_EXT)),
        lengths: lengths(&up),
        // For copper the wavelength bytes hold cable attenuation instead.
        wavelength_nm: (!copper).then(|| f64::from(up.be16(WAVELENGTH)) / 20.0),
        transmitter_technology: Some(Coded::new(tech, codes::transmitter_technology_name)),
        vendor_name: up.text(VENDOR_NAME, 16),
        vendor_oui: [
            up.byte(VENDOR_OUI),
            up.byte(VENDOR_OUI + 1),
            up.byte(VENDOR_OUI + 2),
        ],
        vendor_pn: up.text(VENDOR_PN, 16),
        vendor_rev: up.text(VENDOR_REV, 2),
        vendor_sn: up.text(VENDOR_SN, 16),
        date_code: up.date_code(DATE_CODE),
        flat_memory: Some(flat),
        module_state: None,
        monitors: Some(monitors(&lo, &up, page03.as_ref().map(Bytes::upper))),
        checksums,
    })
}

/// Power classes 1-4 from bits 7..6 of the extended identifier, 5-7 from bits 1..0 when
/// those are not zero.
fn power_class(ext: u8) -> PowerClass {
    let (class, max_power_w) = match (ext & 0x03, ext >> 6) {
        (1, _) => (5, 4.0),
        (2, _) => (6, 4.5),
        (3, _) => (7, 5.0),
        (_, 0) => (1, 1.5),
        (_, 1) => (2, 2.0),
        (_, 2) => (3, 2.5),
        _ => (4, 3.5),
    };
    PowerClass { class, max_power_w }
}

/// The nominal rate: byte 140 in 100 Mb/s, or when that says 0xFF, byte 222 in 250 Mb/s.
fn bit_rate(nominal: u8, extended: u8) -> Option<u32> {
    let mbps = match nominal {
        0xff => u32::from(extended) * 250,
        n => u32::from(n) * 100,
    };
    (mbps != 0).then_some(mbps)
}

/// The link lengths of bytes 142-146 that are not zero.
fn lengths(up: &Bytes<'_>) -> Vec<LinkLength> {
    [
        (142, "SMF", 1000.0),
        (143, "OM3 50um", 2.0),
        (144, "OM2 50um", 1.0),
        (145, "OM1 62.5um", 1.0),
        (146, "Copper or Active cable", 1.0),
    ]
    .into_iter()
    .filter(|&(at, _, _)| up.byte(at) != 0)
    .map(|(at, medium, unit)| LinkLength {
        medium,
        meters: f64::from(up.byte(at)) * unit,
    })
    .collect()
}

/// The monitors of the lower page, with the thresholds of page 03h when it was read.
fn monitors(lo: &Bytes<'_>, up: &Bytes<'_>, page03: Option<Bytes<'_>>) -> Monitors {
    let raw_temp = lo.be16(TEMPERATURE);
    let diag = up.byte(DIAG_TYPE);
    let tx_power_supported = diag & 0x04 != 0;
    // SFF-8636 has no bit saying the lane monitors exist; like ethtool, take a temperature
    // reading that is neither 0 nor all ones as the sign that the module monitors at all.
    let lanes = if raw_temp == 0 || raw_temp == 0xffff {
        Vec::new()
    } else {
        (0..LANES)
            .map(|i| Lane {
                tx_bias_ma: Some(bias_ma(lo.be16(TX_BIAS + 2 * i))),
                tx_power_mw: tx_power_supported.then(|| power_mw(lo.be16(TX_POWER + 2 * i))),
                rx_power_mw: Some(power_mw(lo.be16(RX_POWER + 2 * i))),
            })
            .collect()
    };
    let lane_flags = |base: usize, i: usize| {
        let top = if i % 2 == 0 { 7 } else { 3 };
        lo.flags(base + i / 2, FlagBits::descending(top))
    };
    let flags = Flags {
        temperature: lo.flags(FLAGS_TEMP, FlagBits::descending(7)),
        vcc: lo.flags(FLAGS_VCC, FlagBits::descending(7)),
        lanes: (0..LANES)
            .map(|i| LaneFlags {
                tx_bias: lane_flags(FLAGS_TX_BIAS, i),
                tx_power: lane_flags(FLAGS_TX_POWER, i),
                rx_power: lane_flags(FLAGS_RX_POWER, i),
            })
            .collect(),
    };
    Monitors {
        temperature_c: temperature_c(raw_temp),
        vcc_v: vcc_v(lo.be16(VCC)),
        lanes,
        rx_power_kind: if diag & 0x08 != 0 {
            RxPowerKind::Average
        } else {
            RxPowerKind::Oma
        },
        calibration: None,
        thresholds: page03.map(|p| Thresholds {
            temperature_c: p.limits(TH_TEMP, temperature_c),
            vcc_v: p.limits(TH_VCC, vcc_v),
            tx_bias_ma: p.limits(TH_TX_BIAS, bias_ma),
            tx_power_mw: p.limits(TH_TX_POWER, power_mw),
            rx_power_mw: p.limits(TH_RX_POWER, power_mw),
        }),
        flags: Some(flags),
    }
}
