//! Transceiver module EEPROM decoding: hand-built images of the three standards decoded to
//! exact values, bad input turned into typed errors, reads kept inside the window and few,
//! and arbitrary bytes never panicking.

use mlx5_driver::module::{
    mw_to_dbm, read_module, DecodeOptions, EepromAddr, EepromImage, EepromReader, Lane, Limits,
    Module, ModuleError, Monitors, Standard,
};
use proptest::prelude::*;

const A0: u8 = 0x50;
const A2: u8 = 0x51;
const STRICT: DecodeOptions = opts(true);
const LAX: DecodeOptions = opts(false);

const fn opts(verify_checksums: bool) -> DecodeOptions {
    DecodeOptions { verify_checksums }
}

/// One 128-byte half, written at the window offsets the standards use (`base` is 0 for a
/// lower half, 128 for an upper page).
struct Half {
    base: usize,
    b: [u8; 128],
}

fn half(base: usize) -> Half {
    Half { base, b: [0; 128] }
}

impl Half {
    fn set(&mut self, at: usize, v: &[u8]) -> &mut Half {
        self.b[at - self.base..at - self.base + v.len()].copy_from_slice(v);
        self
    }
    /// Big-endian words from `at` on.
    fn words(&mut self, at: usize, v: &[u16]) -> &mut Half {
        for (k, w) in v.iter().enumerate() {
            self.set(at + 2 * k, &w.to_be_bytes());
        }
        self
    }
    /// An ASCII field of `len` bytes, space padded.
    fn text(&mut self, at: usize, len: usize, s: &str) -> &mut Half {
        let mut field = vec![b' '; len];
        field[..s.len()].copy_from_slice(s.as_bytes());
        self.set(at, &field)
    }
    /// Stores at `at` the low byte of the sum of `first..=last`.
    fn seal(&mut self, at: usize, first: usize, last: usize) -> &mut Half {
        let sum = (first..=last).fold(0u8, |a, i| a.wrapping_add(self.b[i - self.base]));
        self.set(at, &[sum])
    }
}

/// Celsius in the 1/256 °C two's-complement word.
fn c(deg: f64) -> u16 {
    ((deg * 256.0) as i16) as u16
}

/// A value as `{:?}` prints it: the shortest text that reads back as the same f64, so
/// comparing these strings compares the values exactly. "-" for a value not monitored.
fn v(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:?}"))
}

/// dBm rounded to 0.01, as printed.
fn dbm(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.2}", mw_to_dbm(x)))
}

/// The identity fields, one line per group.
fn identity(m: &Module) -> String {
    let standard = match m.standard {
        Standard::Sff8636 { revision } => format!("SFF-8636 0x{:02x}", revision.code),
        Standard::Sff8472 { revision } => format!("SFF-8472 0x{:02x}", revision.code),
        Standard::Cmis { major, minor } => format!("CMIS {major}.{minor}"),
    };
    let (id, code, flat) = (m.identifier.name, m.identifier.code, m.flat_memory);
    let state = m.module_state.map(|s| s.name);
    let power = m.power_class.map(|p| (p.class, p.max_power_w));
    let (conn, enc) = (m.connector.name, m.encoding.map(|e| e.name));
    let (rate, nm) = (m.nominal_bit_rate_mbps, m.wavelength_nm);
    let lengths: Vec<_> = m.lengths.iter().map(|l| (l.medium, l.meters)).collect();
    let (name, pn, rev) = (&m.vendor_name, &m.vendor_pn, &m.vendor_rev);
    let (sn, oui) = (&m.vendor_sn, m.vendor_oui);
    let (date, lot, text) = (&m.date_code.date, &m.date_code.lot, &m.date_code.text);
    let checks = m.checksums.iter().map(|c| (c.name, c.range, c.matched));
    let mut out = vec![
        format!("{id} 0x{code:02x}, {standard}, flat {flat:?}, {state:?}"),
        format!("{power:?}, {conn}, {enc:?}"),
        format!("{rate:?} Mb/s, {nm:?} nm, {lengths:?}"),
        format!("{name}|{pn}|{rev}|{sn}|{oui:02x?}"),
        format!("{date:?} lot {lot} ({text})"),
        format!("{:?}", checks.collect::<Vec<_>>()),
    ];
    out.extend(m.compliance.iter().map(|c| c.to_string()));
    out.extend(m.media_type.map(|t| t.name.to_string()));
    for a in &m.applications {
        let (h, md) = (a.host_interface.name, a.media_interface.name);
        let (hl, ml) = (a.host_lanes, a.media_lanes);
        out.push(format!("{h} / {md}, {hl}/{ml} lanes"));
    }
    out.join("\n")
}

/// The monitors, thresholds and raised flags, one line per group, values exact.
fn monitors(m: &Monitors) -> String {
    let lanes = |f: fn(&Lane) -> Option<f64>, show: fn(Option<f64>) -> String| {
        let v: Vec<_> = m.lanes.iter().map(|l| show(f(l))).collect();
        v.join(" ")
    };
    let (t, vcc, kind, cal) = (m.temperature_c, m.vcc_v, m.rx_power_kind, m.calibration);
    let bias = lanes(|l| l.tx_bias_ma, v);
    let (tx, tx_db) = (lanes(|l| l.tx_power_mw, v), lanes(|l| l.tx_power_mw, dbm));
    let (rx, rx_db) = (lanes(|l| l.rx_power_mw, v), lanes(|l| l.rx_power_mw, dbm));
    let mut out = vec![
        format!("{t:?} C, {vcc:?} V, {kind:?}, {cal:?}"),
        format!("bias mA {bias}"),
        format!("tx mW {tx} | dBm {tx_db}"),
        format!("rx mW {rx} | dBm {rx_db}"),
    ];
    if let Some(t) = &m.thresholds {
        // High alarm, low alarm, high warning, low warning.
        let l = |l: &Limits| [l.high_alarm, l.low_alarm, l.high_warning, l.low_warning];
        let (c, v, ma) = (l(&t.temperature_c), l(&t.vcc_v), l(&t.tx_bias_ma));
        let (tx, rx) = (l(&t.tx_power_mw), l(&t.rx_power_mw));
        out.push(format!("limits C {c:?} V {v:?} mA {ma:?}"));
        out.push(format!("limits tx {tx:?} rx {rx:?}"));
    }
    let Some(f) = &m.flags else {
        return out.join("\n");
    };
    let mut sets = vec![("temperature".to_string(), f.temperature)];
    sets.push(("vcc".into(), f.vcc));
    for (n, l) in (1..).zip(&f.lanes) {
        let names = ["bias", "tx power", "rx power"].map(|q| format!("lane {n} {q}"));
        sets.extend(names.into_iter().zip([l.tx_bias, l.tx_power, l.rx_power]));
    }
    let kinds = ["high alarm", "low alarm", "high warning", "low warning"];
    for (what, s) in sets {
        let on = [s.high_alarm, s.low_alarm, s.high_warning, s.low_warning];
        let raised = kinds.iter().zip(on).filter(|k| k.1);
        out.extend(raised.map(|(k, _)| format!("{what} {k}")));
    }
    out.join("\n")
}

/// (1) A QSFP28 100GBASE-SR4, SFF-8636 rev 2.8+, paged, with page 03h thresholds.
fn qsfp28() -> EepromImage {
    let mut lo = half(0);
    lo.set(0, &[0x11, 0x08, 0x00]);
    // Flags: 6 temperature high warning; 9 lane 2 (low nibble) rx power low warning; 11
    // lane 1 bias high alarm; 14 lane 4 (low nibble) tx power low alarm.
    lo.set(6, &[0x20, 0, 0, 0x01, 0, 0x80, 0, 0, 0x04]);
    lo.words(22, &[c(35.75), 0, 32_950]);
    lo.words(34, &[8000, 6310, 0, 12_589]); // rx power, 0.1 µW
    lo.words(42, &[3750, 3800, 4000, 3250]); // bias, 2 µA
    lo.words(50, &[9000, 10_000, 7943, 5012]); // tx power
    let mut p0 = half(128);
    p0.set(128, &[0x11, 0x4c, 0x0c, 0x80]); // id, class 2 + CDRs, MPO 1x12, extended
    p0.set(139, &[0x07, 0xff, 0, 0, 35]); // 256B/257B; rate in byte 222; OM3 70 m
    p0.text(148, 16, "ACME OPTICS");
    p0.set(165, &[0x00, 0x02, 0xc9]);
    p0.text(168, 16, "QSFP-100G-SR4");
    p0.text(184, 2, "A0");
    p0.words(186, &[850 * 20, 10 * 20]);
    p0.seal(191, 128, 190);
    p0.set(192, &[0x02]); // 100GBASE-SR4
    p0.text(196, 16, "SN0123456789");
    p0.text(212, 8, "23052901");
    p0.set(220, &[0x0c, 0, 103]); // average rx power, tx power monitored; 25.75 Gb/s
    p0.seal(223, 192, 222);
    let mut p3 = half(128);
    p3.words(128, &[c(75.0), c(-5.0), c(70.0), c(0.0)]);
    p3.words(144, &[36_300, 29_700, 34_650, 31_350]);
    p3.words(176, &[34_673, 390, 17_378, 1230]); // rx power
    p3.words(184, &[6000, 1500, 5500, 2000]); // bias
    p3.words(192, &[34_673, 1230, 17_378, 2455]); // tx power
    let mut img = EepromImage::new();
    img.set_lower(A0, lo.b).set_page(A0, 0, 0, p0.b);
    img.set_page(A0, 0, 3, p3.b);
    img
}

/// The A0h half of an SFP+ 10GBASE-SR; `diag` is byte 92.
fn sfp_a0(diag: u8) -> Half {
    let mut a0 = half(0);
    a0.set(0, &[0x03, 0x04, 0x07, 0x10]); // SFP, ext id, LC, 10G Base-SR
    a0.set(11, &[0x06, 103]); // 64B/66B, 10.3 Gb/s
    a0.set(16, &[8, 3, 0, 30]); // OM2 80 m, OM1 30 m, OM3 300 m
    a0.text(20, 16, "ACME OPTICS");
    a0.set(37, &[0x00, 0x90, 0x65]);
    a0.text(40, 16, "SFP-10G-SR");
    a0.text(56, 4, "1.0");
    a0.words(60, &[850]);
    a0.seal(63, 0, 62);
    a0.text(68, 16, "SFPSN000042");
    a0.text(84, 8, "19123100");
    a0.set(92, &[diag, 0xf0, 0x08]); // alarm flags implemented; SFF-8472 12.0+
    a0.seal(95, 64, 94);
    a0
}

/// (2) SFP+ 10GBASE-SR, internal calibration, average rx power.
fn sfp_internal() -> EepromImage {
    let mut a2 = half(0);
    a2.words(0, &[c(80.0), c(-10.0), c(75.0), c(-5.0)]);
    a2.words(8, &[36_000, 30_000, 35_000, 31_000]);
    a2.words(16, &[6000, 500, 5000, 1000]);
    a2.words(24, &[15_849, 1259, 12_589, 1585]);
    a2.words(32, &[12_589, 100, 10_000, 158]);
    a2.seal(95, 0, 94);
    a2.words(96, &[c(30.5), 33_100, 3000, 5012, 3981]);
    a2.set(116, &[0x80, 0x40]); // warnings: temperature high, rx power low
    let mut img = EepromImage::new();
    img.set_lower(A0, sfp_a0(0x68).b).set_lower(A2, a2.b);
    img
}

/// (3) An SFP with external calibration.
fn sfp_external() -> EepromImage {
    let mut a2 = half(0);
    a2.words(0, &[c(75.0)]); // high alarm counts of temperature, bias and rx power
    a2.words(16, &[4000]);
    a2.words(32, &[8000]);
    // Rx power polynomial, coefficient 4 first: 0, 0, 2^-13, 1.25, 10.
    for (k, v) in [0.0f32, 0.0, 1.0 / 8192.0, 1.25, 10.0].iter().enumerate() {
        a2.set(56 + 4 * k, &v.to_bits().to_be_bytes());
    }
    // Slope (8.8 fixed) and offset each: bias 1.5 and -100, tx power 0.5 and +50,
    // temperature 1.0 and +512 (2 °C), vcc 1.25 and -1000.
    let (m100, m1000) = ((-100i16) as u16, (-1000i16) as u16);
    a2.words(76, &[0x0180, m100, 0x0080, 50, 0x0100, 512, 0x0140, m1000]);
    a2.seal(95, 0, 94);
    a2.words(96, &[6400, 26_000, 2000, 10_000, 4000]);
    let mut img = EepromImage::new();
    img.set_lower(A0, sfp_a0(0x58).b).set_lower(A2, a2.b);
    img
}

/// (4) A CMIS 5.0 QSFP-DD 400GBASE-SR8, paged, with `banks` (1, 2 or 4) banks of page 11h.
fn qsfp_dd(banks: u8) -> EepromImage {
    let mut lo = half(0);
    lo.set(0, &[0x18, 0x50, 0x00, 0x06]); // QSFP-DD, CMIS 5.0, paged, ModuleReady
    lo.set(9, &[0x24]); // temperature high warning, vcc low alarm
    lo.words(14, &[c(40.25), 32_800]);
    lo.set(85, &[0x01]); // MMF
    lo.set(86, &[0x11, 0x10, 0x88, 0x01, 0x0d, 0x09, 0x24, 0x55, 0xff]);
    let mut p0 = half(128);
    p0.set(128, &[0x18]);
    p0.text(129, 16, "ACME OPTICS");
    p0.set(145, &[0x00, 0x02, 0xc9]);
    p0.text(148, 16, "QDD-400G-SR8");
    p0.text(164, 2, "B1");
    p0.text(166, 16, "QDDSN0001");
    p0.text(182, 8, "24011500");
    p0.set(200, &[0x80, 40, 0, 0x0c]); // class 5, 10 W, MPO 1x12
    p0.seal(222, 128, 221);
    let mut p1 = half(128);
    p1.set(134, &[50, 35]); // OM4 100 m, OM3 70 m
    p1.words(138, &[850 * 20]);
    p1.set(142, &[banks / 2]); // banks advertised: 0 → 1, 1 → 2, 2 → 4
    p1.set(151, &[0x10]); // average rx power
    p1.set(160, &[0x0f]); // bias, tx and rx power monitored; bias ×2
    let mut p2 = half(128);
    p2.words(128, &[c(75.0), c(-5.0), c(70.0), c(0.0)]);
    p2.words(136, &[34_650, 31_350, 34_320, 31_680]);
    p2.words(176, &[31_623, 501, 25_119, 1000]);
    p2.words(184, &[3000, 500, 2750, 750]);
    p2.words(192, &[31_623, 316, 25_119, 501]);
    let mut img = EepromImage::new();
    img.set_lower(A0, lo.b).set_page(A0, 0, 0, p0.b);
    img.set_page(A0, 0, 1, p1.b).set_page(A0, 0, 2, p2.b);
    for bank in 0..banks {
        let mut p11 = half(128);
        // Flags: lane 3 tx power high alarm, lane 8 bias low warning, lane 1 rx power low
        // alarm (bytes 139-142 tx power, 143-146 bias, 149-152 rx power; bit n-1: lane n).
        p11.set(139, &[0x04, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0x01]);
        p11.words(154, &[8000, 8250, 8500, 8750, 9000, 9250, 9500, 9750]); // tx power
        p11.words(170, &[1800, 1850, 1900, 1950, 2000, 2050, 2100, 2150]); // bias
        p11.words(186, &[7000, 7100, 7200, 7300, 7400, 0, 7600, 7700]); // rx power
        img.set_page(A0, bank, 0x11, p11.b);
    }
    img
}

/// (5) A flat-memory CMIS 4.0 passive copper cable.
fn cmis_dac() -> EepromImage {
    let mut lo = half(0);
    lo.set(0, &[0x18, 0x40, 0x80, 0x06]); // flat memory
    lo.set(85, &[0x03, 0x1e, 0x01, 0x88, 0x01, 0xff]); // copper; 400G CR8 over copper
    let mut p0 = half(128);
    p0.set(128, &[0x18]);
    p0.text(129, 16, "ACME CABLES");
    p0.text(148, 16, "QDD-400G-DAC1M");
    p0.text(166, 16, "DAC77");
    p0.text(182, 8, "22XX0700");
    p0.set(200, &[0x00, 1, 0x41, 0x23]); // class 1, 0.25 W, 1 m, no separable connector
    p0.set(212, &[0x0a]); // copper cable, unequalized
    p0.seal(222, 128, 221);
    let mut img = EepromImage::new();
    img.set_lower(A0, lo.b).set_page(A0, 0, 0, p0.b);
    img
}

/// A reader that checks the window contract on every read and counts reads.
struct Strict<R> {
    r: R,
    reads: usize,
}

impl<R: EepromReader> EepromReader for Strict<R> {
    fn read(&mut self, at: EepromAddr, buf: &mut [u8]) -> Result<(), ModuleError> {
        let end = usize::from(at.offset) + buf.len();
        assert!(buf.len() <= 128 && end <= 256, "{at}: {end}");
        self.reads += 1;
        self.r.read(at, buf)
    }
}

/// Decodes strictly, returning the module and the number of reads.
fn decode(img: EepromImage) -> (Module, usize) {
    let mut r = Strict { r: img, reads: 0 };
    let m = read_module(&mut r, &STRICT).unwrap();
    (m, r.reads)
}

/// Decodes `img` strictly and compares the read count and both summaries with `want`.
fn expect(img: EepromImage, want: (usize, &str, Option<&str>)) -> Module {
    let (m, reads) = decode(img);
    assert_eq!(reads, want.0);
    assert_eq!(identity(&m), want.1);
    assert_eq!(m.monitors.as_ref().map(monitors).as_deref(), want.2);
    m
}

#[test]
fn qsfp28_sr4_decodes_exactly() {
    let id = "\
QSFP28 0x11, SFF-8636 0x08, flat Some(false), None
Some((2, 2.0)), MPO 1x12, Some(\"256B/257B (transcoded FEC-enabled data)\")
Some(25750) Mb/s, Some(850.0) nm, [(\"OM3 50um\", 70.0)]
ACME OPTICS|QSFP-100G-SR4|A0|SN0123456789|[00, 02, c9]
Some(\"2023-05-29\") lot 01 (23052901)
[(\"CC_BASE\", (128, 190), true), (\"CC_EXT\", (192, 222), true)]
100G Ethernet: 100G Base-SR4 or 25GBase-SR";
    let mon = "\
35.75 C, 3.295 V, Average, None
bias mA 7.5 7.6 8.0 6.5
tx mW 0.9 1.0 0.7943 0.5012 | dBm -0.46 0.00 -1.00 -3.00
rx mW 0.8 0.631 0.0 1.2589 | dBm -0.97 -2.00 -inf 1.00
limits C [75.0, -5.0, 70.0, 0.0] V [3.63, 2.97, 3.465, 3.135] mA [12.0, 3.0, 11.0, 4.0]
limits tx [3.4673, 0.123, 1.7378, 0.2455] rx [3.4673, 0.039, 1.7378, 0.123]
temperature high warning
lane 1 bias high alarm
lane 2 rx power low warning
lane 4 tx power low alarm";
    let m = expect(qsfp28(), (4, id, Some(mon))); // identifier, lower page, 00h, 03h
    let text = m.to_string();
    // No light is minus infinity dBm.
    let want = "\tReceiver signal average optical power (Channel 3) : 0.0000 mW / -inf dBm\n";
    assert!(text.contains(want), "{text}");
    insta::assert_snapshot!("qsfp28_sr4", text);
}

#[test]
fn sfp_internal_calibration_decodes_exactly() {
    let id = "\
SFP 0x03, SFF-8472 0x08, flat None, None
None, LC, Some(\"64B/66B\")
Some(10300) Mb/s, Some(850.0) nm, [(\"OM2 50um\", 80.0), (\"OM1 62.5um\", 30.0), (\"OM3 50um\", 300.0)]
ACME OPTICS|SFP-10G-SR|1.0|SFPSN000042|[00, 90, 65]
Some(\"2019-12-31\") lot 00 (19123100)
[(\"CC_BASE\", (0, 62), true), (\"CC_EXT\", (64, 94), true), (\"CC_DMI\", (0, 94), true)]
10G Ethernet: 10G Base-SR";
    let mon = "\
30.5 C, 3.31 V, Average, Some(Internal)
bias mA 6.0
tx mW 0.5012 | dBm -3.00
rx mW 0.3981 | dBm -4.00
limits C [80.0, -10.0, 75.0, -5.0] V [3.6, 3.0, 3.5, 3.1] mA [12.0, 1.0, 10.0, 2.0]
limits tx [1.5849, 0.1259, 1.2589, 0.1585] rx [1.2589, 0.01, 1.0, 0.0158]
temperature high warning
lane 1 rx power low warning";
    let m = expect(sfp_internal(), (3, id, Some(mon))); // identifier, A0h, A2h
    insta::assert_snapshot!("sfp_10g_sr", m.to_string());
    #[cfg(feature = "serde")]
    insta::assert_json_snapshot!("sfp_10g_sr_json", m);
}

#[test]
fn sfp_external_calibration_applies_the_constants() {
    let (m, _) = decode(sfp_external());
    // Temperature: 6400 · 1.0 + 512 = 6912 → 6912 / 256 = 27.0 °C.
    // Vcc: 26000 · 1.25 - 1000 = 31500 → 3.15 V.
    // Bias: 2000 · 1.5 - 100 = 2900 → 2900 · 2 µA = 5.8 mA.
    // Tx power: 10000 · 0.5 + 50 = 5050 → 0.505 mW → 10·log10(0.505) = -2.967 dBm.
    // Rx power: 2^-13 · 4000² + 1.25 · 4000 + 10 = 1953.125 + 5000 + 10 = 6963.125
    //   → 0.6963125 mW → 10·log10(0.6963125) = -1.572 dBm.
    // Thresholds are counts too: temperature high alarm 19200 + 512 = 19712 → 77 °C, bias
    // 4000 · 1.5 - 100 = 5900 → 11.8 mA, rx 2^-13 · 8000² + 1.25 · 8000 + 10 = 17822.5 →
    // 1.78225 mW; zero counts give the offsets: 2 °C, -0.1 V, -0.2 mA, 0.005 mW, 0.001 mW.
    let want = "\
27.0 C, 3.15 V, Average, Some(External)
bias mA 5.8
tx mW 0.505 | dBm -2.97
rx mW 0.6963125 | dBm -1.57
limits C [77.0, 2.0, 2.0, 2.0] V [-0.1, -0.1, -0.1, -0.1] mA [11.8, -0.2, -0.2, -0.2]
limits tx [0.005, 0.005, 0.005, 0.005] rx [1.78225, 0.001, 0.001, 0.001]";
    assert_eq!(monitors(m.monitors.as_ref().unwrap()), want);
}

#[test]
fn qsfp_dd_paged_decodes_eight_lanes() {
    let id = "\
QSFP-DD Double Density 8X Pluggable Transceiver 0x18, CMIS 5.0, flat Some(false), Some(\"ModuleReady\")
Some((5, 10.0)), MPO 1x12, None
None Mb/s, Some(850.0) nm, [(\"OM4\", 100.0), (\"OM3 50/125um\", 70.0)]
ACME OPTICS|QDD-400G-SR8|B1|QDDSN0001|[00, 02, c9]
Some(\"2024-01-15\") lot 00 (24011500)
[(\"CC\", (128, 221), true)]
optical interfaces: MMF
400GAUI-8 C2M / 400GBASE-SR8, 8/8 lanes
100GAUI-2 C2M / 100GBASE-SR4, 2/4 lanes";
    // Bias words count 2 µA times the ×2 multiplier of page 01h byte 160, thresholds too.
    let mon = "\
40.25 C, 3.28 V, Average, None
bias mA 7.2 7.4 7.6 7.8 8.0 8.2 8.4 8.6
tx mW 0.8 0.825 0.85 0.875 0.9 0.925 0.95 0.975 | dBm -0.97 -0.84 -0.71 -0.58 -0.46 -0.34 -0.22 -0.11
rx mW 0.7 0.71 0.72 0.73 0.74 0.0 0.76 0.77 | dBm -1.55 -1.49 -1.43 -1.37 -1.31 -inf -1.19 -1.14
limits C [75.0, -5.0, 70.0, 0.0] V [3.465, 3.135, 3.432, 3.168] mA [12.0, 2.0, 11.0, 3.0]
limits tx [3.1623, 0.0501, 2.5119, 0.1] rx [3.1623, 0.0316, 2.5119, 0.0501]
temperature high warning
vcc low alarm
lane 1 rx power low alarm
lane 3 tx power high alarm
lane 8 bias low warning";
    expect(qsfp_dd(1), (6, id, Some(mon))); // identifier, lower, 00h, 01h, 02h, 11h bank 0

    // Four banks of page 11h: 32 lanes, one read of each bank.
    let (m, reads) = decode(qsfp_dd(4));
    let mon = m.monitors.unwrap();
    assert_eq!(
        (
            reads,
            mon.lanes.len(),
            mon.flags.as_ref().unwrap().lanes.len()
        ),
        (9, 32, 32)
    );
    assert!(monitors(&mon).ends_with("lane 32 bias low warning"));
}

#[test]
fn flat_cmis_cable_has_no_monitors() {
    let id = "\
QSFP-DD Double Density 8X Pluggable Transceiver 0x18, CMIS 4.0, flat Some(true), Some(\"ModuleReady\")
Some((1, 0.25)), No separable connector, None
None Mb/s, None nm, [(\"Cable assembly\", 1.0)]
ACME CABLES|QDD-400G-DAC1M||DAC77|[00, 00, 00]
None lot 00 (22XX0700)
[(\"CC\", (128, 221), true)]
passive copper cables
400G CR8 / Copper cable, 8/8 lanes";
    let text = expect(cmis_dac(), (3, id, None)).to_string(); // identifier, lower, 00h
    assert!(text.contains("\tOptical diagnostics support               : No\n"));
}

/// The message of the check code error that decoding `img` strictly fails with.
fn checksum_error(img: &mut EepromImage) -> String {
    match read_module(img, &STRICT) {
        Err(e @ ModuleError::Checksum { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn checksum_mismatch_names_page_and_range() {
    let mut img = qsfp28();
    // 'M' of the vendor name becomes 'L', one less: the sum is one less than the check code.
    img.page_mut(A0, 0, 0).unwrap()[150 - 128] ^= 0x01;
    let want =
        "check code mismatch at I2C 0x50 page 0x00 bytes 128..=190: stored 0x0d, computed 0x0c";
    assert_eq!(checksum_error(&mut img.clone()), want);
    let m = read_module(&mut img, &LAX).unwrap();
    let ok: Vec<_> = m.checksums.iter().map(|c| (c.name, c.matched)).collect();
    assert_eq!(ok, [("CC_BASE", false), ("CC_EXT", true)]);
    assert_eq!(m.vendor_name, "ACLE OPTICS");

    let mut sfp = sfp_internal();
    sfp.lower_mut(A2).unwrap()[10] ^= 0x10; // a supply voltage threshold
    assert!(checksum_error(&mut sfp).contains("at I2C 0x51 page 0x00 bytes 0..=94: stored 0x71"));
}

/// Where a read was refused, as the error prints it.
fn refused(img: &mut EepromImage) -> String {
    match read_module(img, &STRICT) {
        Err(ModuleError::Refused { at, status: 0x9 }) => at.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_page_is_refused() {
    let mut img = qsfp28();
    img.remove_page(A0, 0, 3);
    assert_eq!(refused(&mut img), "I2C 0x50 bank 0 page 0x03 offset 128");
    // A flat module has no page 03h and is not asked for one.
    img.lower_mut(A0).unwrap()[2] = 0x04;
    let m = read_module(&mut img, &STRICT).unwrap();
    assert!(m.monitors.unwrap().thresholds.is_none());

    let mut dd = qsfp_dd(1);
    dd.remove_page(A0, 0, 0x11);
    assert_eq!(refused(&mut dd), "I2C 0x50 bank 0 page 0x11 offset 128");
    let mut a0_only = EepromImage::new();
    a0_only.set_lower(A0, sfp_a0(0x68).b);
    assert_eq!(refused(&mut a0_only), "I2C 0x51 bank 0 page 0x00 offset 0");
    // Without diagnostics (byte 92 bit 6 clear) A2h is not read at all.
    a0_only.set_lower(A0, sfp_a0(0x00).b);
    let (m, reads) = decode(a0_only);
    assert_eq!((reads, m.monitors.is_none()), (2, true));
}

#[test]
fn an_empty_cage_or_unknown_module_fails_typed() {
    struct Empty;
    impl EepromReader for Empty {
        fn read(&mut self, _: EepromAddr, _: &mut [u8]) -> Result<(), ModuleError> {
            Err(ModuleError::NotPresent)
        }
    }
    let err = read_module(&mut Empty, &STRICT).unwrap_err();
    assert!(matches!(err, ModuleError::NotPresent), "{err}");

    let mut img = EepromImage::new();
    img.set_lower(A0, half(0).set(0, &[0x06]).b);
    let mut r = Strict { r: img, reads: 0 };
    let err = read_module(&mut r, &STRICT).unwrap_err();
    assert!(matches!(err, ModuleError::UnknownIdentifier(0x06)), "{err}");
    let want = "module identifier 0x06 (XFP) has no decoder";
    assert_eq!(err.to_string(), want);
    assert_eq!(r.reads, 1); // the identifier byte only
}

/// Arbitrary bytes (or, one time in four, nothing) for every half the decoders may ask
/// for: the lower halves of A0h and A2h, upper pages 00h-03h, page 11h of banks 0-3. The
/// identifier is one of each family's, or any byte.
fn arbitrary_image() -> impl Strategy<Value = EepromImage> {
    let known = prop::sample::select(vec![0x03u8, 0x0c, 0x0d, 0x11, 0x18, 0x19, 0x1e]);
    let half = prop::option::weighted(0.75, prop::array::uniform::<_, 128>(any::<u8>()));
    let halves = prop::collection::vec(half, 10);
    (prop_oneof![known, any::<u8>()], halves).prop_map(|(id, mut halves)| {
        let mut img = EepromImage::new();
        if let Some(Some(lower)) = halves.first_mut() {
            lower[0] = id;
        }
        let present = halves
            .into_iter()
            .enumerate()
            .filter_map(|(k, b)| Some((k, b?)));
        for (k, b) in present {
            let k = k as u8;
            match k {
                0 => img.set_lower(A0, b),
                1 => img.set_lower(A2, b),
                2..=5 => img.set_page(A0, 0, k - 2, b),
                _ => img.set_page(A0, k - 6, 0x11, b),
            };
        }
        img
    })
}

proptest! {
    #[test]
    fn arbitrary_images_decode_or_fail_typed(img in arbitrary_image()) {
        for opts in [LAX, STRICT] {
            let mut r = Strict { r: img.clone(), reads: 0 };
            match read_module(&mut r, &opts) {
                Ok(m) => prop_assert!(m.to_string().starts_with("\tIdentifier")),
                Err(ModuleError::Refused { status: 0x9, .. }) => {}
                Err(ModuleError::UnknownIdentifier(_)) => {}
                Err(ModuleError::Checksum { .. }) if opts.verify_checksums => {}
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
            prop_assert!(r.reads <= 16);
        }
    }

    #[test]
    fn mw_to_dbm_is_monotonic(a in 1e-12f64..1e6, b in 1e-12f64..1e6) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(mw_to_dbm(lo) <= mw_to_dbm(hi));
        prop_assert!(mw_to_dbm(lo) > f64::NEG_INFINITY);
        prop_assert_eq!((mw_to_dbm(0.0), mw_to_dbm(1.0)), (f64::NEG_INFINITY, 0.0));
    }
}
