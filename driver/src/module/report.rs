//! The decoded module: what `read_module` returns. Every value is in physical units (°C, V,
//! mA, mW, nm, m) so callers never need the standards' scaling; the raw codes stay next to
//! their names so nothing the EEPROM said is lost.

/// A one-byte code and the name a standard gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Coded {
    /// The byte as stored.
    pub code: u8,
    /// Its name ("reserved or unknown" when the tables do not list it).
    pub name: &'static str,
}

impl Coded {
    /// Pairs `code` with the name `name_of` gives it.
    pub(crate) fn new(code: u8, name_of: impl Fn(u8) -> &'static str) -> Coded {
        Coded {
            code,
            name: name_of(code),
        }
    }
}

/// The management interface the module follows, with the revision it claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Standard {
    /// SFF-8636 (QSFP, QSFP+, QSFP28); `revision` is lower page byte 1.
    Sff8636 {
        /// The revision compliance byte and what it says.
        revision: Coded,
    },
    /// SFF-8472 (SFP, SFP+, SFP28); `revision` is A0h byte 94.
    Sff8472 {
        /// The SFF-8472 compliance byte and what it says.
        revision: Coded,
    },
    /// CMIS (QSFP-DD, OSFP, QSFP with CMIS); the revision is lower page byte 1, one nibble
    /// each.
    Cmis {
        /// Major revision (upper nibble).
        major: u8,
        /// Minor revision (lower nibble).
        minor: u8,
    },
}

/// The module's declared power class and the most it may draw.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PowerClass {
    /// Power class, 1 and up.
    pub class: u8,
    /// Maximum power consumption in watts.
    pub max_power_w: f64,
}

/// The longest link the module supports over one kind of medium.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LinkLength {
    /// The medium ("SMF", "OM3 50um", "Copper or Active cable", ...).
    pub medium: &'static str,
    /// The length in metres.
    pub meters: f64,
}

/// One CMIS application advertisement: a host interface the module can run over a media
/// interface, with the lane counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Application {
    /// Host electrical interface (SFF-8024 table 4-5).
    pub host_interface: Coded,
    /// Media interface, from the table the media type selects.
    pub media_interface: Coded,
    /// Host lanes the application uses.
    pub host_lanes: u8,
    /// Media lanes the application uses.
    pub media_lanes: u8,
    /// Bit map of the host lanes an instance of the application may start on.
    pub host_lane_assignment: u8,
}

/// The vendor's date code (YYMMDDLL: two-digit year, month, day and a lot code).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DateCode {
    /// The eight characters as stored (non-printable bytes as '.').
    pub text: String,
    /// The date as YYYY-MM-DD, when the first six characters are digits.
    pub date: Option<String>,
    /// The vendor's lot code (the last two characters, trailing spaces removed).
    pub lot: String,
}

/// What the receive power monitor measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum RxPowerKind {
    /// Average optical power.
    Average,
    /// Optical modulation amplitude.
    Oma,
}

/// How an SFF-8472 module's monitors are calibrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Calibration {
    /// The module reports values in physical units.
    Internal,
    /// The module reports raw converter counts; the decoder applied the A2h calibration
    /// constants.
    External,
}

/// One lane's monitors; `None` where the module does not monitor the quantity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Lane {
    /// Laser bias current in mA.
    pub tx_bias_ma: Option<f64>,
    /// Transmitted optical power in mW.
    pub tx_power_mw: Option<f64>,
    /// Received optical power in mW (average or OMA, see [`Monitors::rx_power_kind`]).
    pub rx_power_mw: Option<f64>,
}

/// The four thresholds of one monitored quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Limits {
    /// Above this the module raises the high alarm.
    pub high_alarm: f64,
    /// Above this the module raises the high warning.
    pub high_warning: f64,
    /// Below this the module raises the low warning.
    pub low_warning: f64,
    /// Below this the module raises the low alarm.
    pub low_alarm: f64,
}

/// The module's alarm and warning thresholds, in the units of the monitors.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Thresholds {
    /// Temperature, °C.
    pub temperature_c: Limits,
    /// Supply voltage, V.
    pub vcc_v: Limits,
    /// Laser bias current, mA.
    pub tx_bias_ma: Limits,
    /// Transmitted power, mW.
    pub tx_power_mw: Limits,
    /// Received power, mW.
    pub rx_power_mw: Limits,
}

/// Which of the four alarm and warning flags of one quantity are raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FlagSet {
    /// High alarm raised.
    pub high_alarm: bool,
    /// Low alarm raised.
    pub low_alarm: bool,
    /// High warning raised.
    pub high_warning: bool,
    /// Low warning raised.
    pub low_warning: bool,
}

impl FlagSet {
    /// Whether any of the four is raised.
    pub fn any(&self) -> bool {
        self.high_alarm || self.low_alarm || self.high_warning || self.low_warning
    }
}

/// The flags of one lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LaneFlags {
    /// Laser bias current.
    pub tx_bias: FlagSet,
    /// Transmitted power.
    pub tx_power: FlagSet,
    /// Received power.
    pub rx_power: FlagSet,
}

/// The raised (latched) alarm and warning flags.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Flags {
    /// Module temperature.
    pub temperature: FlagSet,
    /// Supply voltage.
    pub vcc: FlagSet,
    /// One entry per lane (SFF-8472 has one lane).
    pub lanes: Vec<LaneFlags>,
}

/// The module's digital diagnostics.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Monitors {
    /// Module temperature, °C.
    pub temperature_c: f64,
    /// Supply voltage, V.
    pub vcc_v: f64,
    /// Per-lane monitors (empty when the module reports none).
    pub lanes: Vec<Lane>,
    /// Whether received power is average power or OMA.
    pub rx_power_kind: RxPowerKind,
    /// SFF-8472 only: internal or external calibration.
    pub calibration: Option<Calibration>,
    /// The thresholds, when the module has them.
    pub thresholds: Option<Thresholds>,
    /// The flags, when the module implements them.
    pub flags: Option<Flags>,
}

/// One check code the decoder computed and compared with the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CheckCode {
    /// The standard's name for it (CC_BASE, CC_EXT, CC_DMI).
    pub name: &'static str,
    /// The I2C address of the bytes.
    pub i2c_address: u8,
    /// The page of the bytes.
    pub page: u8,
    /// The first and last byte (window offsets, inclusive) summed.
    pub range: (u8, u8),
    /// The byte the module stores.
    pub stored: u8,
    /// The low byte of the sum the decoder computed.
    pub computed: u8,
    /// Whether the two agree.
    pub matched: bool,
}

/// A decoded transceiver module EEPROM.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Module {
    /// The management interface and its revision.
    pub standard: Standard,
    /// The SFF-8024 identifier (byte 0).
    pub identifier: Coded,
    /// The extended identifier byte (SFF-8636 byte 129, SFF-8472 byte 1; none in CMIS).
    pub ext_identifier: Option<u8>,
    /// The power class (SFF-8636, CMIS).
    pub power_class: Option<PowerClass>,
    /// The connector.
    pub connector: Coded,
    /// The raw compliance bytes (SFF-8636 bytes 131-138 and 192; SFF-8472 bytes 3-10 and
    /// 36; empty for CMIS, which advertises applications instead).
    pub compliance_codes: Vec<u8>,
    /// The names of the compliance codes that are set.
    pub compliance: Vec<&'static str>,
    /// CMIS media type (lower page byte 85).
    pub media_type: Option<Coded>,
    /// CMIS applications (lower page bytes 86-117), in advertisement order.
    pub applications: Vec<Application>,
    /// The encoding (SFF-8636, SFF-8472).
    pub encoding: Option<Coded>,
    /// The nominal signalling rate in Mb/s (SFF-8636, SFF-8472; `None` when unspecified).
    pub nominal_bit_rate_mbps: Option<u32>,
    /// The supported link lengths that are not zero.
    pub lengths: Vec<LinkLength>,
    /// The nominal laser wavelength in nm (optical modules only).
    pub wavelength_nm: Option<f64>,
    /// The transmitter technology (SFF-8636 byte 147, CMIS page 00h byte 212).
    pub transmitter_technology: Option<Coded>,
    /// Vendor name.
    pub vendor_name: String,
    /// Vendor IEEE company id.
    pub vendor_oui: [u8; 3],
    /// Vendor part number.
    pub vendor_pn: String,
    /// Vendor revision of the part.
    pub vendor_rev: String,
    /// Vendor serial number.
    pub vendor_sn: String,
    /// Manufacturing date and lot.
    pub date_code: DateCode,
    /// Whether the memory is flat (lower page and page 00h only). `None` for SFF-8472,
    /// which has no pages to speak of.
    pub flat_memory: Option<bool>,
    /// CMIS module state (lower page byte 3).
    pub module_state: Option<Coded>,
    /// Digital diagnostics, when the module has them.
    pub monitors: Option<Monitors>,
    /// The check codes the decoder verified, matched or not (with
    /// `DecodeOptions::verify_checksums` set a mismatch is an error instead).
    pub checksums: Vec<CheckCode>,
}
