//! Conversions from the raw monitor words of the module management interfaces to physical
//! units. SFF-8636, SFF-8472 and CMIS agree on the units: temperature in signed 1/256 °C,
//! supply voltage in 100 µV, laser bias current in 2 µA and optical power in 0.1 µW, each a
//! big-endian 16-bit word.

/// Degrees Celsius from a temperature word (two's complement, 1/256 °C a step).
pub fn temperature_c(raw: u16) -> f64 {
    f64::from(i16::from_ne_bytes(raw.to_ne_bytes())) / 256.0
}

/// Volts from a supply-voltage word (100 µV a step).
pub fn vcc_v(raw: u16) -> f64 {
    f64::from(raw) / 10_000.0
}

/// Milliamperes from a laser bias word (2 µA a step).
pub fn bias_ma(raw: u16) -> f64 {
    f64::from(raw) / 500.0
}

/// Milliwatts from an optical power word (0.1 µW a step).
pub fn power_mw(raw: u16) -> f64 {
    f64::from(raw) / 10_000.0
}

/// Degrees Fahrenheit, for the second temperature column ethtool prints.
pub fn celsius_to_fahrenheit(c: f64) -> f64 {
    c * 1.8 + 32.0
}

/// Decibel-milliwatts from milliwatts: 10·log10(mW).
///
/// A module that sees no light reports 0, which has no logarithm: that is negative infinity
/// (printed "-inf dBm", as ethtool does) rather than an error. Externally calibrated SFPs can
/// compute slightly negative powers; those are treated as no light too. NaN stays NaN.
pub fn mw_to_dbm(mw: f64) -> f64 {
    if mw.is_nan() {
        f64::NAN
    } else if mw <= 0.0 {
        f64::NEG_INFINITY
    } else {
        10.0 * mw.log10()
    }
}

/// An SFF-8472 calibration slope: an unsigned fixed-point number with 8 integer and 8
/// fraction bits (so 0x0180 is 1.5).
pub fn slope(raw: u16) -> f64 {
    f64::from(raw) / 256.0
}

/// An SFF-8472 calibration offset: a signed 16-bit number in the units of the value it
/// corrects.
pub fn offset(raw: u16) -> f64 {
    f64::from(i16::from_ne_bytes(raw.to_ne_bytes()))
}

/// An SFF-8472 receive-power polynomial coefficient: an IEEE-754 single, most significant
/// byte first.
pub fn be_f32(bytes: [u8; 4]) -> f64 {
    f64::from(f32::from_bits(u32::from_be_bytes(bytes)))
}
