//! SFF-8472 (SFP, SFP+, SFP28). I2C address A0h holds the identity (check codes CC_BASE and
//! CC_EXT); A2h, present only when A0h byte 92 says the module has digital diagnostics, the
//! thresholds, calibration constants, monitors and flags (check code CC_DMI).
//!
//! A module may report calibrated values (internal calibration) or raw converter counts with
//! the constants to convert them (external calibration): then bias, transmit power,
//! temperature and supply voltage are `slope · count + offset`, and receive power is the
//! fourth-order polynomial of A2h bytes 56-75 in the count. Thresholds are stored in the
//! same form as the measurements and are converted the same way.

use super::codes::{self, Family};
use super::compliance;
use super::fields::Bytes;
use super::report::{
    Calibration, Coded, FlagSet, Flags, Lane, LaneFlags, Limits, LinkLength, Module, Monitors,
    RxPowerKind, Standard, Thresholds,
};
use super::units::{be_f32, offset, slope};
use super::{read_half, DecodeOptions, EepromReader, Half, ModuleError, I2C_A0, I2C_A2};

/// A0h fields.
const EXT_ID: usize = 1;
const CONNECTOR: usize = 2;
const COMPLIANCE: usize = 3;
const ENCODING: usize = 11;
const BIT_RATE: usize = 12;
const VENDOR_NAME: usize = 20;
const EXT_COMPLIANCE: usize = 36;
const VENDOR_OUI: usize = 37;
const VENDOR_PN: usize = 40;
const VENDOR_REV: usize = 56;
const WAVELENGTH: usize = 60;
const CC_BASE: usize = 63;
const BIT_RATE_EXT: usize = 66;
const VENDOR_SN: usize = 68;
const DATE_CODE: usize = 84;
/// Diagnostic monitoring type: bit 6 implemented, bit 5 internally calibrated, bit 4
/// externally calibrated, bit 3 rx power is average power (else OMA).
const DIAG_TYPE: usize = 92;
/// Enhanced options: bit 7 alarm and warning flags implemented.
const ENHANCED_OPTIONS: usize = 93;
const SFF8472_COMPLIANCE: usize = 94;
const CC_EXT: usize = 95;

/// A2h fields: thresholds (high alarm, low alarm, high warning, low warning each).
const TH_TEMP: usize = 0;
const TH_VCC: usize = 8;
const TH_TX_BIAS: usize = 16;
const TH_TX_POWER: usize = 24;
const TH_RX_POWER: usize = 32;
/// External calibration: rx power coefficients 4, 3, 2, 1, 0 (IEEE-754 singles), then
/// slope and offset for bias, tx power, temperature and supply voltage.
const CAL_RX_PWR4: usize = 56;
const CAL_TX_BIAS: usize = 76;
const CAL_TX_POWER: usize = 80;
const CAL_TEMP: usize = 84;
const CAL_VCC: usize = 88;
const CC_DMI: usize = 95;
const TEMPERATURE: usize = 96;
const VCC: usize = 98;
const TX_BIAS: usize = 100;
const TX_POWER: usize = 102;
const RX_POWER: usize = 104;
const ALARM_FLAGS: usize = 112;
const WARNING_FLAGS: usize = 116;

/// Reads A0h and (when the module has diagnostics) A2h, and decodes them.
pub(super) fn read(
    r: &mut dyn EepromReader,
    id: u8,
    opts: &DecodeOptions,
) -> Result<Module, ModuleError> {
    let a0 = read_half(r, I2C_A0, 0, 0, Half::Lower)?;
    let a0 = Bytes::lower(&a0);
    let mut checksums = Vec::new();
    a0.check("CC_BASE", I2C_A0, 0, (0, 62), CC_BASE, opts, &mut checksums)?;
    a0.check("CC_EXT", I2C_A0, 0, (64, 94), CC_EXT, opts, &mut checksums)?;
    let monitors = if a0.bit(DIAG_TYPE, 6) {
        let a2 = read_half(r, I2C_A2, 0, 0, Half::Lower)?;
        let a2 = Bytes::lower(&a2);
        a2.check("CC_DMI", I2C_A2, 0, (0, 94), CC_DMI, opts, &mut checksums)?;
        Some(monitors(&a0, &a2))
    } else {
        None
    };

    // Bytes 60-61 are the wavelength of optical modules; cables (byte 8 bits 2 and 3) keep
    // their copper compliance there instead.
    let cable = a0.byte(8) & 0x0c != 0;
    Ok(Module {
        standard: Standard::Sff8472 {
            revision: Coded::new(a0.byte(SFF8472_COMPLIANCE), codes::sff8472_revision_name),
        },
        identifier: Coded::new(id, codes::identifier_name),
        ext_identifier: Some(a0.byte(EXT_ID)),
        power_class: None,
        connector: Coded::new(a0.byte(CONNECTOR), codes::connector_name),
        compliance_codes: {
            let mut c = a0.slice(COMPLIANCE, 8).to_vec();
            c.push(a0.byte(EXT_COMPLIANCE));
            c
        },
        compliance: compliance::sff8472(a0.slice(COMPLIANCE, 8), a0.byte(EXT_COMPLIANCE)),
        media_type: None,
        applications: Vec::new(),
        encoding: Some(Coded::new(a0.byte(ENCODING), |c| {
            codes::encoding_name(c, Family::Sff8472)
        })),
        nominal_bit_rate_mbps: bit_rate(a0.byte(BIT_RATE), a0.byte(BIT_RATE_EXT)),
        lengths: lengths(&a0),
        wavelength_nm: (!cable).then(|| f64::from(a0.be16(WAVELENGTH))),
        transmitter_technology: None,
        vendor_name: a0.text(VENDOR_NAME, 16),
        vendor_oui: [
            a0.byte(VENDOR_OUI),
            a0.byte(VENDOR_OUI + 1),
            a0.byte(VENDOR_OUI + 2),
        ],
        vendor_pn: a0.text(VENDOR_PN, 16),
        vendor_rev: a0.text(VENDOR_REV, 4),
        vendor_sn: a0.text(VENDOR_SN, 16),
        date_code: a0.date_code(DATE_CODE),
        flat_memory: None,
        module_state: None,
        monitors,
        checksums,
    })
}

/// The nominal rate: byte 12 in 100 MBd, or when that says 0xFF, byte 66 in 250 MBd.
fn bit_rate(nominal: u8, extended: u8) -> Option<u32> {
    let mbps = match nominal {
        0xff => u32::from(extended) * 250,
        n => u32::from(n) * 100,
    };
    (mbps != 0).then_some(mbps)
}

/// The link lengths of bytes 14-19 that are not zero.
fn lengths(a0: &Bytes<'_>) -> Vec<LinkLength> {
    [
        (14, "SMF", 1000.0),
        (15, "SMF", 100.0),
        (16, "OM2 50um", 10.0),
        (17, "OM1 62.5um", 10.0),
        (18, "Copper or OM4", 1.0),
        (19, "OM3 50um", 10.0),
    ]
    .into_iter()
    .filter(|&(at, _, _)| a0.byte(at) != 0)
    .map(|(at, medium, unit)| LinkLength {
        medium,
        meters: f64::from(a0.byte(at)) * unit,
    })
    .collect()
}

/// Converts the raw words of A2h to physical units, applying the external calibration when
/// the module asks for it.
struct Converter<'a> {
    a2: Bytes<'a>,
    external: bool,
}

impl Converter<'_> {
    /// `slope · raw + offset` with the constants at `cal` (slope, then offset), or `raw`
    /// unchanged for an internally calibrated module. `signed` reads `raw` as two's
    /// complement (temperature).
    fn linear(&self, raw: u16, cal: usize, signed: bool) -> f64 {
        let value = if signed { offset(raw) } else { f64::from(raw) };
        if self.external {
            slope(self.a2.be16(cal)) * value + offset(self.a2.be16(cal + 2))
        } else {
            value
        }
    }

    /// Receive power in 0.1 µW: the polynomial Σ Rx_PWR(k) · rawᵏ for an externally
    /// calibrated module.
    fn rx_power(&self, raw: u16) -> f64 {
        if !self.external {
            return f64::from(raw);
        }
        let x = f64::from(raw);
        // Coefficient 4 comes first in the EEPROM, then 3, 2, 1 and 0: Horner's scheme.
        (0..5).fold(0.0, |acc, k| {
            acc * x + be_f32(self.a2.be4(CAL_RX_PWR4 + 4 * k))
        })
    }

    fn temperature_c(&self, raw: u16) -> f64 {
        self.linear(raw, CAL_TEMP, true) / 256.0
    }

    fn vcc_v(&self, raw: u16) -> f64 {
        self.linear(raw, CAL_VCC, false) / 10_000.0
    }

    fn bias_ma(&self, raw: u16) -> f64 {
        self.linear(raw, CAL_TX_BIAS, false) / 500.0
    }

    fn tx_power_mw(&self, raw: u16) -> f64 {
        self.linear(raw, CAL_TX_POWER, false) / 10_000.0
    }

    fn rx_power_mw(&self, raw: u16) -> f64 {
        self.rx_power(raw) / 10_000.0
    }

    /// The four thresholds at `at`, converted by `f`.
    fn limits(&self, at: usize, f: impl Fn(&Self, u16) -> f64) -> Limits {
        self.a2.limits(at, |raw| f(self, raw))
    }
}

/// Keeps a value only when it is a number (a calibration polynomial with infinite or NaN
/// coefficients yields none).
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The diagnostics of A2h.
fn monitors(a0: &Bytes<'_>, a2: &Bytes<'_>) -> Monitors {
    let external = a0.bit(DIAG_TYPE, 4);
    let c = Converter { a2: *a2, external };
    let alarms = a0.bit(ENHANCED_OPTIONS, 7);
    let flags = alarms.then(|| {
        // Alarms and warnings live in separate bytes with the same layout: the high flag of
        // a quantity on one bit, its low flag on the next lower bit.
        let set = |byte: usize, high_bit: u8| FlagSet {
            high_alarm: a2.bit(ALARM_FLAGS + byte, high_bit),
            low_alarm: a2.bit(ALARM_FLAGS + byte, high_bit.saturating_sub(1)),
            high_warning: a2.bit(WARNING_FLAGS + byte, high_bit),
            low_warning: a2.bit(WARNING_FLAGS + byte, high_bit.saturating_sub(1)),
        };
        Flags {
            temperature: set(0, 7),
            vcc: set(0, 5),
            lanes: vec![LaneFlags {
                tx_bias: set(0, 3),
                tx_power: set(0, 1),
                rx_power: set(1, 7),
            }],
        }
    });
    Monitors {
        temperature_c: c.temperature_c(a2.be16(TEMPERATURE)),
        vcc_v: c.vcc_v(a2.be16(VCC)),
        lanes: vec![Lane {
            tx_bias_ma: finite(c.bias_ma(a2.be16(TX_BIAS))),
            tx_power_mw: finite(c.tx_power_mw(a2.be16(TX_POWER))),
            rx_power_mw: finite(c.rx_power_mw(a2.be16(RX_POWER))),
        }],
        rx_power_kind: if a0.bit(DIAG_TYPE, 3) {
            RxPowerKind::Average
        } else {
            RxPowerKind::Oma
        },
        calibration: Some(if external {
            Calibration::External
        } else {
            Calibration::Internal
        }),
        thresholds: alarms.then(|| Thresholds {
            temperature_c: c.limits(TH_TEMP, Converter::temperature_c),
            vcc_v: c.limits(TH_VCC, Converter::vcc_v),
            tx_bias_ma: c.limits(TH_TX_BIAS, Converter::bias_ma),
            tx_power_mw: c.limits(TH_TX_POWER, Converter::tx_power_mw),
            rx_power_mw: c.limits(TH_RX_POWER, Converter::rx_power_mw),
        }),
        flags,
    }
}
