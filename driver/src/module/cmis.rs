//! CMIS (QSFP-DD, OSFP, QSFP+ or later with CMIS). The lower page holds the revision,
//! module state, module flags and monitors and the application advertisements; upper page
//! 00h the identity (one check code over bytes 128-221). A flat-memory module has nothing
//! else. A paged one also has page 01h (lengths, wavelength, which monitors exist), page 02h
//! (thresholds) and, per bank of eight lanes, page 11h (lane flags and monitors).

use super::codes;
use super::fields::{Bytes, FlagBits};
use super::report::{
    Application, Coded, FlagSet, Flags, Lane, LaneFlags, LinkLength, Module, Monitors, PowerClass,
    RxPowerKind, Standard, Thresholds,
};
use super::units::{bias_ma, power_mw, temperature_c, vcc_v};
use super::{read_half, DecodeOptions, EepromReader, Half, ModuleError, I2C_A0};

/// Lanes a bank of page 11h covers.
const LANES_PER_BANK: usize = 8;

/// Lower page fields.
const REVISION: usize = 1;
/// Byte 2 bit 7: flat memory.
const MEMORY_MODEL: usize = 2;
/// Byte 3 bits 3..1: module state.
const MODULE_STATE: usize = 3;
/// Byte 9: temperature flags on bits 0-3, supply voltage flags on bits 4-7 (high alarm,
/// low alarm, high warning, low warning).
const MODULE_FLAGS: usize = 9;
const TEMPERATURE: usize = 14;
const VCC: usize = 16;
const MEDIA_TYPE: usize = 85;
/// Eight application descriptors of four bytes: host interface, media interface, lane
/// counts (host in bits 7..4, media in bits 3..0), host lane assignment.
const APPLICATIONS: usize = 86;
const MAX_APPLICATIONS: usize = 8;

/// Page 00h fields.
const VENDOR_NAME: usize = 129;
const VENDOR_OUI: usize = 145;
const VENDOR_PN: usize = 148;
const VENDOR_REV: usize = 164;
const VENDOR_SN: usize = 166;
const DATE_CODE: usize = 182;
const POWER_CLASS: usize = 200;
const MAX_POWER: usize = 201;
const CABLE_LENGTH: usize = 202;
const CONNECTOR: usize = 203;
const MEDIA_TECH: usize = 212;
const CC: usize = 222;

/// Page 01h fields.
const LENGTH_SMF: usize = 132;
const WAVELENGTH: usize = 138;
/// Bits 1..0: banks of lane pages (0: bank 0, 1: banks 0-1, 2: banks 0-3).
const PAGES_ADVERTISED: usize = 142;
/// Bit 4: rx power is average power (else OMA).
const DIAG_TYPE: usize = 151;
/// Bit 0 tx bias, bit 1 tx power, bit 2 rx power monitored; bits 4..3 the bias multiplier.
const MONITORS_ADVERTISED: usize = 160;

/// Page 02h thresholds (high alarm, low alarm, high warning, low warning each).
const TH_TEMP: usize = 128;
const TH_VCC: usize = 136;
const TH_TX_POWER: usize = 176;
const TH_TX_BIAS: usize = 184;
const TH_RX_POWER: usize = 192;

/// Page 11h: lane flags (one bit per lane of the bank) and monitors.
const FLAGS_TX_POWER: usize = 139;
const FLAGS_TX_BIAS: usize = 143;
const FLAGS_RX_POWER: usize = 149;
const TX_POWER: usize = 154;
const TX_BIAS: usize = 170;
const RX_POWER: usize = 186;

/// Reads the lower page and page 00h, and for paged memory pages 01h, 02h and 11h of each
/// advertised bank, and decodes them.
pub(super) fn read(
    r: &mut dyn EepromReader,
    id: u8,
    opts: &DecodeOptions,
) -> Result<Module, ModuleError> {
    let lower = read_half(r, I2C_A0, 0, 0, Half::Lower)?;
    let lo = Bytes::lower(&lower);
    let page00 = read_half(r, I2C_A0, 0, 0, Half::Upper)?;
    let p00 = Bytes::upper(&page00);
    let mut checksums = Vec::new();
    p00.check("CC", I2C_A0, 0, (128, 221), CC, opts, &mut checksums)?;
    let flat = lo.bit(MEMORY_MODEL, 7);

    let tech = p00.byte(MEDIA_TECH);
    let copper = (0x0a..=0x0f).contains(&tech);
    let mut lengths = cable_length(p00.byte(CABLE_LENGTH))
        .into_iter()
        .collect::<Vec<_>>();
    let mut wavelength_nm = None;
    let monitors = if flat {
        None
    } else {
        let page01 = read_half(r, I2C_A0, 0, 1, Half::Upper)?;
        let p01 = Bytes::upper(&page01);
        let page02 = read_half(r, I2C_A0, 0, 2, Half::Upper)?;
        let banks: u8 = match p01.byte(PAGES_ADVERTISED) & 0x03 {
            1 => 2,
            2 => 4,
            _ => 1,
        };
        let mut lane_pages = Vec::with_capacity(usize::from(banks));
        for bank in 0..banks {
            match read_half(r, I2C_A0, bank, 0x11, Half::Upper) {
                // A reader without banks (MCIA): the lanes of bank 0 are all it can give.
                Err(ModuleError::BankUnsupported { at }) if bank > 0 => {
                    log::warn!(
                        "CMIS module advertises {banks} banks of lane pages; {at} cannot be \
                         read, so only the lanes of bank 0 are reported"
                    );
                    break;
                }
                page => lane_pages.push(page?),
            }
        }
        lengths.extend(fibre_lengths(&p01));
        if !copper {
            wavelength_nm = Some(f64::from(p01.be16(WAVELENGTH)) / 20.0);
        }
        Some(monitors(&lo, &p01, &Bytes::upper(&page02), &lane_pages))
    };

    let revision = lo.byte(REVISION);
    let media_type = lo.byte(MEDIA_TYPE);
    Ok(Module {
        standard: Standard::Cmis {
            major: revision >> 4,
            minor: revision & 0x0f,
        },
        identifier: Coded::new(id, codes::identifier_name),
        ext_identifier: None,
        power_class: Some(PowerClass {
            class: (p00.byte(POWER_CLASS) >> 5) + 1,
            max_power_w: f64::from(p00.byte(MAX_POWER)) * 0.25,
        }),
        connector: Coded::new(p00.byte(CONNECTOR), codes::connector_name),
        compliance_codes: Vec::new(),
        compliance: Vec::new(),
        media_type: Some(Coded::new(media_type, codes::cmis_media_type_name)),
        applications: applications(&lo, media_type),
        encoding: None,
        nominal_bit_rate_mbps: None,
        lengths,
        wavelength_nm,
        transmitter_technology: Some(Coded::new(tech, codes::transmitter_technology_name)),
        vendor_name: p00.text(VENDOR_NAME, 16),
        vendor_oui: [
            p00.byte(VENDOR_OUI),
            p00.byte(VENDOR_OUI + 1),
            p00.byte(VENDOR_OUI + 2),
        ],
        vendor_pn: p00.text(VENDOR_PN, 16),
        vendor_rev: p00.text(VENDOR_REV, 2),
        vendor_sn: p00.text(VENDOR_SN, 16),
        date_code: p00.date_code(DATE_CODE),
        flat_memory: Some(flat),
        module_state: Some(Coded::new(
            (lo.byte(MODULE_STATE) >> 1) & 0x07,
            codes::cmis_module_state_name,
        )),
        monitors,
        checksums,
    })
}

/// The advertised applications, up to the first unused descriptor.
fn applications(lo: &Bytes<'_>, media_type: u8) -> Vec<Application> {
    (0..MAX_APPLICATIONS)
        .map(|k| APPLICATIONS + 4 * k)
        .map(|at| (lo.byte(at), at))
        .take_while(|&(host, _)| host != 0xff && host != 0x00)
        .map(|(host, at)| {
            let lanes = lo.byte(at + 2);
            Application {
                host_interface: Coded::new(host, codes::host_interface_name),
                media_interface: Coded::new(lo.byte(at + 1), |c| {
                    codes::media_interface_name(media_type, c)
                }),
                host_lanes: lanes >> 4,
                media_lanes: lanes & 0x0f,
                host_lane_assignment: lo.byte(at + 3),
            }
        })
        .collect()
}

/// The cable assembly length of page 00h byte 202: six bits of value times a multiplier of
/// 0.1, 1, 10 or 100 m in bits 7..6. 0xFF (longer than 6.3 km) and 0 are left out.
fn cable_length(b: u8) -> Option<LinkLength> {
    if b == 0xff || b & 0x3f == 0 {
        return None;
    }
    let value = f64::from(b & 0x3f);
    let meters = match b >> 6 {
        0 => value / 10.0,
        1 => value,
        2 => value * 10.0,
        _ => value * 100.0,
    };
    Some(LinkLength {
        medium: "Cable assembly",
        meters,
    })
}

/// The fibre lengths of page 01h bytes 132-136 that are not zero.
fn fibre_lengths(p01: &Bytes<'_>) -> Vec<LinkLength> {
    let smf = p01.byte(LENGTH_SMF);
    let smf_m = match smf >> 6 {
        0 => Some(f64::from(smf & 0x3f) * 100.0),
        1 => Some(f64::from(smf & 0x3f) * 1000.0),
        _ => None,
    };
    let mut out: Vec<LinkLength> = smf_m
        .filter(|&m| m > 0.0)
        .map(|meters| LinkLength {
            medium: "SMF",
            meters,
        })
        .into_iter()
        .collect();
    out.extend(
        [
            (133, "OM5", 2.0),
            (134, "OM4", 2.0),
            (135, "OM3 50/125um", 2.0),
            (136, "OM2 50/125um", 1.0),
        ]
        .into_iter()
        .filter(|&(at, _, _)| p01.byte(at) != 0)
        .map(|(at, medium, unit)| LinkLength {
            medium,
            meters: f64::from(p01.byte(at)) * unit,
        }),
    );
    out
}

/// The monitors: module level from the lower page, thresholds from page 02h, lanes from
/// page 11h of each bank, only the quantities page 01h says are monitored.
fn monitors(
    lo: &Bytes<'_>,
    p01: &Bytes<'_>,
    p02: &Bytes<'_>,
    lane_pages: &[[u8; 128]],
) -> Monitors {
    let adv = p01.byte(MONITORS_ADVERTISED);
    let (has_bias, has_tx, has_rx) = (adv & 0x01 != 0, adv & 0x02 != 0, adv & 0x04 != 0);
    // The bias word counts 2 µA times this multiplier.
    let bias_mult = match (adv >> 3) & 0x03 {
        1 => 2.0,
        2 => 4.0,
        _ => 1.0,
    };
    let bias = |raw: u16| bias_ma(raw) * bias_mult;

    let mut lanes = Vec::with_capacity(lane_pages.len().saturating_mul(LANES_PER_BANK));
    let mut lane_flags = Vec::with_capacity(lanes.capacity());
    for page in lane_pages {
        let p11 = Bytes::upper(page);
        for (i, bit) in (0..LANES_PER_BANK).zip(0u8..) {
            lanes.push(Lane {
                tx_bias_ma: has_bias.then(|| bias(p11.be16(TX_BIAS + 2 * i))),
                tx_power_mw: has_tx.then(|| power_mw(p11.be16(TX_POWER + 2 * i))),
                rx_power_mw: has_rx.then(|| power_mw(p11.be16(RX_POWER + 2 * i))),
            });
            // Four consecutive bytes per quantity (high alarm, low alarm, high warning,
            // low warning), bit i for lane i of the bank.
            let set = |base: usize| FlagSet {
                high_alarm: p11.bit(base, bit),
                low_alarm: p11.bit(base + 1, bit),
                high_warning: p11.bit(base + 2, bit),
                low_warning: p11.bit(base + 3, bit),
            };
            lane_flags.push(LaneFlags {
                tx_bias: set(FLAGS_TX_BIAS),
                tx_power: set(FLAGS_TX_POWER),
                rx_power: set(FLAGS_RX_POWER),
            });
        }
    }
    Monitors {
        temperature_c: temperature_c(lo.be16(TEMPERATURE)),
        vcc_v: vcc_v(lo.be16(VCC)),
        lanes,
        rx_power_kind: if p01.bit(DIAG_TYPE, 4) {
            RxPowerKind::Average
        } else {
            RxPowerKind::Oma
        },
        calibration: None,
        thresholds: Some(Thresholds {
            temperature_c: p02.limits(TH_TEMP, temperature_c),
            vcc_v: p02.limits(TH_VCC, vcc_v),
            tx_bias_ma: p02.limits(TH_TX_BIAS, bias),
            tx_power_mw: p02.limits(TH_TX_POWER, power_mw),
            rx_power_mw: p02.limits(TH_RX_POWER, power_mw),
        }),
        flags: Some(Flags {
            temperature: lo.flags(MODULE_FLAGS, FlagBits::ascending(0)),
            vcc: lo.flags(MODULE_FLAGS, FlagBits::ascending(4)),
            lanes: lane_flags,
        }),
    }
}
