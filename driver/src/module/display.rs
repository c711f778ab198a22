//! The text form of a decoded module, laid out like `ethtool -m`: one tab-indented line per
//! field, the label padded to 41 columns, values with their units, so that people used to
//! ethtool read it without effort and scripts that grep its labels keep working.

use super::report::{
    Calibration, CheckCode, Coded, FlagSet, Limits, Module, Monitors, RxPowerKind, Standard,
};
use super::units::{celsius_to_fahrenheit, mw_to_dbm};
use std::fmt::{self, Display, Formatter};

/// Writes one line: the padded label and the value.
fn line(f: &mut Formatter<'_>, label: &str, value: impl Display) -> fmt::Result {
    writeln!(f, "\t{label:<41} : {value}")
}

/// "0x11 (QSFP28)".
struct Code(Coded);

impl Display for Code {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:02x} ({})", self.0.code, self.0.name)
    }
}

/// A temperature as ethtool prints it, in both scales.
struct Temp(f64);

impl Display for Temp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.2} degrees C / {:.2} degrees F",
            self.0,
            celsius_to_fahrenheit(self.0)
        )
    }
}

/// A voltage.
struct Volts(f64);

impl Display for Volts {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{:.4} V", self.0)
    }
}

/// A current.
struct MilliAmps(f64);

impl Display for MilliAmps {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} mA", self.0)
    }
}

/// An optical power in mW and dBm ("-inf dBm" for no light).
struct Power(f64);

impl Display for Power {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{:.4} mW / {:.2} dBm", self.0, mw_to_dbm(self.0))
    }
}

/// "On" or "Off", as ethtool shows flags.
fn on_off(b: bool) -> &'static str {
    if b {
        "On"
    } else {
        "Off"
    }
}

/// A length in metres, in km when it is a whole number of kilometres.
struct Meters(f64);

impl Display for Meters {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.0 >= 1000.0 && self.0 % 1000.0 == 0.0 {
            write!(f, "{} km", self.0 / 1000.0)
        } else {
            write!(f, "{} m", self.0)
        }
    }
}

impl Display for Module {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        line(f, "Identifier", Code(self.identifier))?;
        match self.standard {
            Standard::Sff8636 { revision } => {
                line(f, "Management interface", "SFF-8636")?;
                line(f, "Revision compliance", Code(revision))?;
            }
            Standard::Sff8472 { revision } => {
                line(f, "Management interface", "SFF-8472")?;
                line(f, "SFF-8472 compliance", Code(revision))?;
            }
            Standard::Cmis { major, minor } => {
                line(f, "Management interface", "CMIS")?;
                line(
                    f,
                    "Revision compliance",
                    format_args!("Rev. {major}.{minor}"),
                )?;
            }
        }
        if let Some(ext) = self.ext_identifier {
            line(f, "Extended identifier", format_args!("0x{ext:02x}"))?;
        }
        if let Some(p) = self.power_class {
            line(f, "Power class", p.class)?;
            line(f, "Max power", format_args!("{:.2} W", p.max_power_w))?;
        }
        line(f, "Connector", Code(self.connector))?;
        if !self.compliance_codes.is_empty() {
            let codes: Vec<String> = self
                .compliance_codes
                .iter()
                .map(|c| format!("0x{c:02x}"))
                .collect();
            line(f, "Transceiver codes", codes.join(" "))?;
        }
        for name in &self.compliance {
            line(f, "Transceiver type", name)?;
        }
        if let Some(m) = self.media_type {
            line(f, "Media type", Code(m))?;
        }
        for (k, a) in self.applications.iter().enumerate() {
            line(
                f,
                &format!("Application {}", k.saturating_add(1)),
                format_args!(
                    "{} / {}, {} host lanes, {} media lanes",
                    Code(a.host_interface),
                    Code(a.media_interface),
                    a.host_lanes,
                    a.media_lanes
                ),
            )?;
        }
        if let Some(e) = self.encoding {
            line(f, "Encoding", Code(e))?;
        }
        if let Some(br) = self.nominal_bit_rate_mbps {
            line(f, "BR, Nominal", format_args!("{br} Mbps"))?;
        }
        for l in &self.lengths {
            line(f, &format!("Length ({})", l.medium), Meters(l.meters))?;
        }
        if let Some(t) = self.transmitter_technology {
            line(f, "Transmitter technology", Code(t))?;
        }
        if let Some(w) = self.wavelength_nm {
            line(f, "Laser wavelength", format_args!("{w:.3} nm"))?;
        }
        line(f, "Vendor name", &self.vendor_name)?;
        let [a, b, c] = self.vendor_oui;
        line(f, "Vendor OUI", format_args!("{a:02x}:{b:02x}:{c:02x}"))?;
        line(f, "Vendor PN", &self.vendor_pn)?;
        line(f, "Vendor rev", &self.vendor_rev)?;
        line(f, "Vendor SN", &self.vendor_sn)?;
        match &self.date_code.date {
            Some(d) => line(
                f,
                "Date code",
                format_args!("{d} lot {}", self.date_code.lot),
            )?,
            None => line(f, "Date code", &self.date_code.text)?,
        }
        if let Some(flat) = self.flat_memory {
            line(f, "Memory", if flat { "flat" } else { "paged" })?;
        }
        if let Some(s) = self.module_state {
            line(f, "Module State", Code(s))?;
        }
        match &self.monitors {
            Some(m) => monitors(f, m, self.standard)?,
            None => line(f, "Optical diagnostics support", "No")?,
        }
        for c in &self.checksums {
            check_code(f, c)?;
        }
        Ok(())
    }
}

/// The monitors, flags and thresholds.
fn monitors(f: &mut Formatter<'_>, m: &Monitors, standard: Standard) -> fmt::Result {
    line(f, "Optical diagnostics support", "Yes")?;
    if let Some(c) = m.calibration {
        let how = match c {
            Calibration::Internal => "internal",
            Calibration::External => "external",
        };
        line(f, "Calibration", how)?;
    }
    line(f, "Module temperature", Temp(m.temperature_c))?;
    line(f, "Module voltage", Volts(m.vcc_v))?;
    // SFF-8472 modules have one lane, which ethtool labels without a channel number.
    let single = matches!(standard, Standard::Sff8472 { .. });
    let label = |what: &str, i: usize| {
        if single {
            what.to_string()
        } else {
            format!("{what} (Channel {})", i.saturating_add(1))
        }
    };
    let rx = match m.rx_power_kind {
        RxPowerKind::Average => "Receiver signal average optical power",
        RxPowerKind::Oma => "Receiver signal OMA",
    };
    let tx = if single {
        "Laser output power"
    } else {
        "Transmit avg optical power"
    };
    let bias = if single {
        "Laser bias current"
    } else {
        "Laser tx bias current"
    };
    for (i, l) in m.lanes.iter().enumerate() {
        if let Some(v) = l.tx_bias_ma {
            line(f, &label(bias, i), MilliAmps(v))?;
        }
    }
    for (i, l) in m.lanes.iter().enumerate() {
        if let Some(v) = l.tx_power_mw {
            line(f, &label(tx, i), Power(v))?;
        }
    }
    for (i, l) in m.lanes.iter().enumerate() {
        if let Some(v) = l.rx_power_mw {
            line(f, &label(rx, i), Power(v))?;
        }
    }
    line(
        f,
        "Alarm/warning flags implemented",
        if m.flags.is_some() { "Yes" } else { "No" },
    )?;
    if let Some(flags) = &m.flags {
        flag_lines(f, "Module temperature", &flags.temperature)?;
        flag_lines(f, "Module voltage", &flags.vcc)?;
        for (i, l) in flags.lanes.iter().enumerate() {
            flag_lines(f, &label("Laser bias current", i), &l.tx_bias)?;
            flag_lines(f, &label("Laser tx power", i), &l.tx_power)?;
            flag_lines(f, &label("Laser rx power", i), &l.rx_power)?;
        }
    }
    if let Some(t) = &m.thresholds {
        limits(f, "Laser bias current", &t.tx_bias_ma, |v| {
            MilliAmps(v).to_string()
        })?;
        limits(f, "Laser output power", &t.tx_power_mw, |v| {
            Power(v).to_string()
        })?;
        limits(f, "Module temperature", &t.temperature_c, |v| {
            Temp(v).to_string()
        })?;
        limits(f, "Module voltage", &t.vcc_v, |v| Volts(v).to_string())?;
        limits(f, "Laser rx power", &t.rx_power_mw, |v| {
            Power(v).to_string()
        })?;
    }
    Ok(())
}

/// The four flags of one quantity. `what` may end in "(Channel n)", which goes last, as
/// ethtool writes it.
fn flag_lines(f: &mut Formatter<'_>, what: &str, s: &FlagSet) -> fmt::Result {
    let (name, channel) = match what.find(" (") {
        Some(i) => what.split_at(i),
        None => (what, ""),
    };
    for (kind, on) in [
        ("high alarm", s.high_alarm),
        ("low alarm", s.low_alarm),
        ("high warning", s.high_warning),
        ("low warning", s.low_warning),
    ] {
        line(f, &format!("{name} {kind}{channel}"), on_off(on))?;
    }
    Ok(())
}

/// The four thresholds of one quantity.
fn limits(
    f: &mut Formatter<'_>,
    what: &str,
    l: &Limits,
    show: impl Fn(f64) -> String,
) -> fmt::Result {
    for (kind, v) in [
        ("high alarm", l.high_alarm),
        ("low alarm", l.low_alarm),
        ("high warning", l.high_warning),
        ("low warning", l.low_warning),
    ] {
        line(f, &format!("{what} {kind} threshold"), show(v))?;
    }
    Ok(())
}

/// One check code and whether it matched.
fn check_code(f: &mut Formatter<'_>, c: &CheckCode) -> fmt::Result {
    let verdict = if c.matched {
        "ok".to_string()
    } else {
        format!("MISMATCH (computed 0x{:02x})", c.computed)
    };
    line(
        f,
        &format!("Check code {}", c.name),
        format_args!(
            "0x{:02x} over I2C 0x{:02x} page 0x{:02x} bytes {}-{}: {verdict}",
            c.stored, c.i2c_address, c.page, c.range.0, c.range.1
        ),
    )
}
