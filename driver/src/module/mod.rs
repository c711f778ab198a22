//! Transceiver module EEPROM decoding, as `ethtool -m` and `mlxlink -m` show it: SFF-8636
//! (QSFP, QSFP+, QSFP28), SFF-8472 (SFP, SFP+, SFP28) and CMIS (QSFP-DD, OSFP, QSFP with
//! CMIS).
//!
//! The bytes come through an [`EepromReader`] (the adapter's MCIA register on hardware, an
//! [`EepromImage`] in tests and dumps). [`read_module`] reads the identifier byte first and
//! then only the pages that identifier's standard defines, at most nine reads of at most 128
//! bytes each, every one inside the 256-byte window.
//!
//! **Banks.** CMIS modules with more than eight lanes keep the lane pages (11h) of lanes 9
//! and up in banks 1 to 3. MCIA cannot address them: the register has no bank field (neither
//! the PRM layout in the spec nor the kernel's `mlx5_ifc_mcia_reg_bits` has one), so the MCIA
//! reader ([`McIaReader`](crate::port::McIaReader)) refuses any bank but 0 with
//! [`ModuleError::BankUnsupported`] rather than return bank 0's bytes as another bank's.
//! (Linux's `ethtool -m` path hands the bank it is asked for to
//! `mlx5_query_module_eeprom_by_page`, which never puts it in the register: it reads bank 0
//! whatever the bank.) The CMIS decoder then reports the lanes of bank 0 only (lanes 1 to 8)
//! and logs a warning; an [`EepromImage`] holds every bank, so a dump decodes them all.
//!
//! The EEPROM belongs to a device the driver does not trust: the decoders never index
//! without a bounds check, do no arithmetic that can overflow, allocate nothing sized by a
//! device value, and turn any byte pattern into either a [`Module`] or a [`ModuleError`].
//!
//! ```
//! use mlx5_driver::module::{read_module, DecodeOptions, EepromImage};
//!
//! let mut lower = [0u8; 128];
//! lower[0] = 0x03; // SFP
//! let mut image = EepromImage::new();
//! image.set_lower(0x50, lower);
//! let opts = DecodeOptions { verify_checksums: false };
//! let module = read_module(&mut image, &opts).unwrap();
//! assert_eq!(module.identifier.name, "SFP");
//! assert!(module.monitors.is_none()); // byte 92 says there are no diagnostics
//! ```

mod cmis;
pub mod codes;
mod compliance;
mod display;
mod fields;
mod image;
mod report;
mod sff8472;
mod sff8636;
pub mod units;

pub use codes::Family;
pub use compliance::extended_name as extended_compliance_name;
pub use image::{EepromImage, STATUS_NO_PAGE};
pub use report::{
    Application, Calibration, CheckCode, Coded, DateCode, FlagSet, Flags, Lane, LaneFlags, Limits,
    LinkLength, Module, Monitors, PowerClass, RxPowerKind, Standard, Thresholds,
};
pub use units::mw_to_dbm;

use std::fmt;

/// The I2C address of the main memory map (A0h in 8-bit notation).
pub const I2C_A0: u8 = 0x50;
/// The I2C address of the SFF-8472 diagnostics (A2h).
pub const I2C_A2: u8 = 0x51;
/// The most bytes one read may ask for.
pub const MAX_READ: usize = 128;
/// The size of the window a page appears in (lower 128 bytes plus one upper page).
pub const WINDOW: usize = 256;

/// Where one EEPROM read goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct EepromAddr {
    /// I2C address: 0x50 (A0h), or 0x51 (A2h, SFF-8472 diagnostics).
    pub i2c_address: u8,
    /// Page; upper pages appear at offsets 128..=255 of the 256-byte window.
    pub page: u8,
    /// CMIS bank (0 elsewhere).
    pub bank: u8,
    /// First byte within the 256-byte window.
    pub offset: u8,
}

impl fmt::Display for EepromAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "I2C 0x{:02x} bank {} page 0x{:02x} offset {}",
            self.i2c_address, self.bank, self.page, self.offset
        )
    }
}

/// Reads module EEPROM bytes. `buf.len()` is at most 128 and `offset + len <= 256` (the
/// decoders guarantee it; the reader may also check).
pub trait EepromReader {
    /// Fills `buf` with the bytes at `at`.
    fn read(&mut self, at: EepromAddr, buf: &mut [u8]) -> Result<(), ModuleError>;
}

impl<R: EepromReader + ?Sized> EepromReader for &mut R {
    fn read(&mut self, at: EepromAddr, buf: &mut [u8]) -> Result<(), ModuleError> {
        (**self).read(at, buf)
    }
}

/// What went wrong reading or decoding a module EEPROM.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// No module in the cage.
    #[error("no module in the cage")]
    NotPresent,
    /// The adapter or the module refused the read (non-zero register status).
    #[error("module EEPROM read at {at} refused: status 0x{status:02x}")]
    Refused {
        /// The read.
        at: EepromAddr,
        /// The register status.
        status: u8,
    },
    /// The transport failed (the access register command failed).
    #[error("module EEPROM read at {at} failed: {source}")]
    Read {
        /// The read.
        at: EepromAddr,
        /// The command error.
        #[source]
        source: Box<crate::Error>,
    },
    /// A read leaving the 256-byte window or longer than 128 bytes.
    #[error(
        "module EEPROM read of {len} bytes at {at} leaves the 256-byte window or exceeds 128 bytes"
    )]
    OutOfWindow {
        /// The read.
        at: EepromAddr,
        /// Its length.
        len: usize,
    },
    /// A check code does not match the bytes it covers.
    #[error(
        "check code mismatch at I2C 0x{i2c_address:02x} page 0x{page:02x} bytes {}..={}: \
         stored 0x{stored:02x}, computed 0x{computed:02x}",
        range.0, range.1
    )]
    Checksum {
        /// The I2C address of the bytes.
        i2c_address: u8,
        /// The page of the bytes.
        page: u8,
        /// The first and last byte covered (window offsets).
        range: (u8, u8),
        /// The check code the module stores.
        stored: u8,
        /// The low byte of the sum of the covered bytes.
        computed: u8,
    },
    /// The read names a CMIS bank other than 0, which the reader cannot address: MCIA (as
    /// the PRM and the kernel's `mlx5_ifc.h` lay it out) has I2C address, page and offset
    /// fields but no bank field, so asking it for bank 1 would return bank 0's bytes.
    #[error(
        "module EEPROM read at {at}: bank {bank} cannot be addressed (MCIA has no bank field; \
         only bank 0 can be read)",
        bank = at.bank
    )]
    BankUnsupported {
        /// The read.
        at: EepromAddr,
    },
    /// The identifier byte names a module type this decoder does not handle.
    #[error("module identifier 0x{0:02x} ({name}) has no decoder", name = codes::identifier_name(*.0))]
    UnknownIdentifier(u8),
}

/// How strict decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Fail on a check code mismatch (otherwise the mismatch is only recorded in
    /// [`Module::checksums`]). Modules with wrong check codes exist; a dump tool may want to
    /// show them anyway.
    pub verify_checksums: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            verify_checksums: true,
        }
    }
}

/// Reads what it needs (identifier byte first, then only the pages that identifier defines)
/// and decodes it.
pub fn read_module(r: &mut impl EepromReader, opts: &DecodeOptions) -> Result<Module, ModuleError> {
    let r: &mut dyn EepromReader = r;
    let mut id = [0u8; 1];
    read_checked(r, addr(I2C_A0, 0, 0, 0), &mut id)?;
    let [id] = id;
    match Family::of(id) {
        Some(Family::Sff8636) => sff8636::read(r, id, opts),
        Some(Family::Sff8472) => sff8472::read(r, id, opts),
        Some(Family::Cmis) => cmis::read(r, id, opts),
        None => Err(ModuleError::UnknownIdentifier(id)),
    }
}

/// An [`EepromAddr`].
pub(crate) const fn addr(i2c_address: u8, bank: u8, page: u8, offset: u8) -> EepromAddr {
    EepromAddr {
        i2c_address,
        page,
        bank,
        offset,
    }
}

/// One read, refused here if it would break the reader's contract.
fn read_checked(
    r: &mut dyn EepromReader,
    at: EepromAddr,
    buf: &mut [u8],
) -> Result<(), ModuleError> {
    if buf.len() > MAX_READ || usize::from(at.offset) + buf.len() > WINDOW {
        return Err(ModuleError::OutOfWindow { at, len: buf.len() });
    }
    r.read(at, buf)
}

/// Which half of the window a read covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    /// Offsets 0..128 (the same lower page whatever the page number).
    Lower,
    /// Offsets 128..256 (the selected upper page).
    Upper,
}

/// Reads one 128-byte half of the window of `(i2c, bank, page)`.
pub(crate) fn read_half(
    r: &mut dyn EepromReader,
    i2c: u8,
    bank: u8,
    page: u8,
    half: Half,
) -> Result<[u8; 128], ModuleError> {
    let offset = match half {
        Half::Lower => 0,
        Half::Upper => 128,
    };
    let mut buf = [0u8; 128];
    read_checked(r, addr(i2c, bank, page, offset), &mut buf)?;
    Ok(buf)
}
