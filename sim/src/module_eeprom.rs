//! The transceiver module in the port's cage: a 100GBASE-SR4 QSFP28 whose EEPROM follows
//! SFF-8636 (identifier 0x11, paged memory: the lower page, upper page 00h with the vendor
//! data, upper page 03h with the alarm and warning thresholds). MCIA reads it; `ethtool -m`
//! decodes it. The monitors (temperature, supply voltage, per-channel bias and optical
//! power) hold fixed, plausible readings inside their warning thresholds.

/// The vendor name the module reports (bytes 148..164 of page 00h, space padded).
pub const MODULE_VENDOR: &str = "MLX5-PRM MODEL";
/// The vendor part number (bytes 168..184).
pub const MODULE_PN: &str = "PRM-QSFP28-SR4";
/// The vendor serial number (bytes 196..212).
pub const MODULE_SN: &str = "MDL0000000001";
/// Module temperature in 1/256 °C (bytes 22..24): 41.5 °C.
const TEMPERATURE: u16 = 41 * 256 + 128;
/// Supply voltage in 100 µV (bytes 26..28): 3.3 V.
const VCC: u16 = 33_000;
/// Received optical power per channel in 0.1 µW (bytes 34..42): 0.80 mW, about -1 dBm.
const RX_POWER: u16 = 8_000;
/// Laser bias per channel in 2 µA (bytes 42..50): 7.5 mA.
const TX_BIAS: u16 = 3_750;
/// Transmitted optical power per channel in 0.1 µW (bytes 50..58): 0.90 mW.
const TX_POWER: u16 = 9_000;

/// Bytes of one I2C window: the lower page and one upper page.
pub(crate) const WINDOW: usize = 256;
/// The module's I2C address (SFF-8636 has no second address).
pub(crate) const I2C_ADDRESS: u8 = 0x50;

/// The EEPROM of a module in the port's cage: the lower page and the upper pages it has
/// (SFF-8636 or CMIS numbering; MCIA reads it at I2C address 0x50). The model's default is
/// [`ModuleEeprom::qsfp28_sr4`]; [`ModuleEeprom::from_pages`] makes any other image, and
/// `Device::plug_module` / `Device::unplug_module` change what is in the cage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleEeprom {
    lower: [u8; 128],
    /// Upper pages by number, each 128 bytes seen at offsets 128..=255.
    pages: Vec<(u8, [u8; 128])>,
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn ascii(b: &mut [u8], at: usize, len: usize, s: &str) {
    let field = &mut b[at..at + len];
    field.fill(b' ');
    let n = s.len().min(len);
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// The low byte of the sum of `b`: SFF-8636's check codes.
fn check_code(b: &[u8]) -> u8 {
    b.iter().fold(0u8, |a, &x| a.wrapping_add(x))
}

impl ModuleEeprom {
    /// A module whose EEPROM has lower page `lower` and the upper `pages` (page number,
    /// bytes); a page listed twice keeps its first bytes.
    pub fn from_pages(
        lower: [u8; 128],
        pages: impl IntoIterator<Item = (u8, [u8; 128])>,
    ) -> ModuleEeprom {
        let mut out: Vec<(u8, [u8; 128])> = Vec::new();
        for (n, bytes) in pages {
            if !out.iter().any(|(m, _)| *m == n) {
                out.push((n, bytes));
            }
        }
        ModuleEeprom { lower, pages: out }
    }

    /// The model's default module: a 100GBASE-SR4 QSFP28 (SFF-8636, pages 00h and 03h) with
    /// fixed, plausible monitor readings inside its warning thresholds.
    pub fn qsfp28_sr4() -> ModuleEeprom {
        let mut lower = [0u8; 128];
        lower[0] = 0x11; // identifier: QSFP28
        lower[1] = 0x07; // revision compliance: SFF-8636 rev 2.5 to 2.7
        lower[2] = 0x00; // status: paged memory, data ready
        put16(&mut lower, 22, TEMPERATURE);
        put16(&mut lower, 26, VCC);
        for ch in 0..4 {
            put16(&mut lower, 34 + 2 * ch, RX_POWER);
            put16(&mut lower, 42 + 2 * ch, TX_BIAS);
            put16(&mut lower, 50 + 2 * ch, TX_POWER);
        }
        // Upper page 00h, indexed from 128.
        let mut p = [0u8; 128];
        p[0] = 0x11; // identifier again
        p[1] = 0x00; // extended identifier: power class 1
        p[2] = 0x0c; // connector: MPO 1x12
        p[3] = 0x80; // compliance: see the extended compliance byte (192)
        p[11] = 0x07; // encoding: 256B/257B (the RS-FEC coding of 100GBASE-SR4)
        p[12] = 0xff; // nominal rate above 25.4 Gb/s: see byte 222
        p[15] = 35; // OM3 length in 2 m units: 70 m
        p[18] = 50; // OM4 length in 2 m units: 100 m
        p[19] = 0x00; // transmitter: 850 nm VCSEL
        ascii(&mut p, 148 - 128, 16, MODULE_VENDOR);
        p[165 - 128..168 - 128].copy_from_slice(&[0x02, 0x4d, 0x4c]); // OUI
        ascii(&mut p, 168 - 128, 16, MODULE_PN);
        ascii(&mut p, 184 - 128, 2, "A0");
        put16(&mut p, 186 - 128, 850 * 20); // wavelength in 1/20 nm
        put16(&mut p, 188 - 128, 10 * 20); // tolerance in 1/20 nm: 10 nm
        p[190 - 128] = 70; // maximum case temperature, °C
        p[191 - 128] = check_code(&p[..191 - 128]);
        p[192 - 128] = 0x02; // extended compliance: 100GBASE-SR4
        ascii(&mut p, 196 - 128, 16, MODULE_SN);
        ascii(&mut p, 212 - 128, 8, "26120100"); // date code YYMMDDLL
        p[220 - 128] = 0x0c; // monitors: average Rx power, Tx power
        p[222 - 128] = 103; // nominal rate in 250 Mb/s: 25.78 Gb/s a lane
        p[223 - 128] = check_code(&p[192 - 128..223 - 128]);
        // Upper page 03h: thresholds (high alarm, low alarm, high warning, low warning).
        let mut t = [0u8; 128];
        let mut four = |at: usize, v: [u16; 4]| {
            for (k, x) in v.into_iter().enumerate() {
                put16(&mut t, at - 128 + 2 * k, x);
            }
        };
        four(128, [75 * 256, (-5i16 * 256) as u16, 70 * 256, 0]);
        four(144, [36_300, 29_700, 34_650, 31_350]);
        four(176, [34_673, 390, 17_378, 1_230]);
        four(184, [6_000, 1_500, 5_500, 2_000]);
        four(192, [34_673, 1_230, 17_378, 2_455]);
        ModuleEeprom::from_pages(lower, [(0x00, p), (0x03, t)])
    }

    /// `len` bytes of `page` from `offset` in the 256-byte window (offsets below 128 are the
    /// lower page whatever the page), or `None` when the window has no such page or the
    /// range leaves it.
    pub(crate) fn read(&self, page: u8, offset: usize, len: usize) -> Option<Vec<u8>> {
        let len = len.min(WINDOW);
        if offset + len > WINDOW {
            return None;
        }
        let upper = match self.pages.iter().find(|(n, _)| *n == page) {
            Some((_, bytes)) => bytes,
            // Bytes of the lower page only: any page number reads them.
            None if offset + len <= 128 => &self.lower,
            None => return None,
        };
        Some(
            (offset..offset + len)
                .map(|i| {
                    if i < 128 {
                        self.lower[i]
                    } else {
                        upper[i - 128]
                    }
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_codes_and_fields_are_where_sff_8636_puts_them() {
        let m = ModuleEeprom::qsfp28_sr4();
        let w = m.read(0, 0, 256).unwrap();
        assert_eq!((w[0], w[128]), (0x11, 0x11));
        assert_eq!(w[191], check_code(&w[128..191]));
        assert_eq!(w[223], check_code(&w[192..223]));
        assert_eq!(&w[148..148 + MODULE_VENDOR.len()], MODULE_VENDOR.as_bytes());
        assert_eq!(&w[196..196 + MODULE_SN.len()], MODULE_SN.as_bytes());
        assert_eq!(u16::from_be_bytes([w[22], w[23]]), TEMPERATURE);
        let p3 = m.read(3, 128, 128).unwrap();
        assert_eq!(u16::from_be_bytes([p3[0], p3[1]]), 75 * 256);
        assert_eq!(m.read(1, 128, 16), None, "no page 01h");
        assert_eq!(
            m.read(1, 0, 16).unwrap(),
            w[..16],
            "the lower page is in every window"
        );
        assert_eq!(m.read(0, 250, 16), None);
    }
}
