//! A module EEPROM held in memory: for tests, for decoding dumps, and for replaying what a
//! real module returned.

use super::{EepromAddr, EepromReader, ModuleError, MAX_READ, WINDOW};
use std::collections::BTreeMap;

/// The register status an [`EepromImage`] refuses a read of a missing page with (the MCIA
/// status for an I2C address or page the module does not answer).
pub const STATUS_NO_PAGE: u8 = 0x9;

/// A full module EEPROM image: for each I2C address a lower half (window offsets 0..128),
/// and upper pages (offsets 128..256) per (I2C address, bank, page).
///
/// As a reader it serves any read inside the halves it holds and refuses the rest with
/// [`ModuleError::Refused`] and status [`STATUS_NO_PAGE`], as the adapter does for a page
/// the module lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EepromImage {
    lower: BTreeMap<u8, [u8; 128]>,
    upper: BTreeMap<(u8, u8, u8), [u8; 128]>,
}

impl EepromImage {
    /// An image without any page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the lower half of I2C address `i2c`.
    pub fn set_lower(&mut self, i2c: u8, bytes: [u8; 128]) -> &mut Self {
        self.lower.insert(i2c, bytes);
        self
    }

    /// Sets upper page `page` of bank `bank` at I2C address `i2c`.
    pub fn set_page(&mut self, i2c: u8, bank: u8, page: u8, bytes: [u8; 128]) -> &mut Self {
        self.upper.insert((i2c, bank, page), bytes);
        self
    }

    /// Removes an upper page (to model a module that lacks it).
    pub fn remove_page(&mut self, i2c: u8, bank: u8, page: u8) -> Option<[u8; 128]> {
        self.upper.remove(&(i2c, bank, page))
    }

    /// The lower half of `i2c`.
    pub fn lower(&self, i2c: u8) -> Option<&[u8; 128]> {
        self.lower.get(&i2c)
    }

    /// The lower half of `i2c`, to change.
    pub fn lower_mut(&mut self, i2c: u8) -> Option<&mut [u8; 128]> {
        self.lower.get_mut(&i2c)
    }

    /// Upper page `page` of bank `bank` at `i2c`.
    pub fn page(&self, i2c: u8, bank: u8, page: u8) -> Option<&[u8; 128]> {
        self.upper.get(&(i2c, bank, page))
    }

    /// Upper page `page` of bank `bank` at `i2c`, to change.
    pub fn page_mut(&mut self, i2c: u8, bank: u8, page: u8) -> Option<&mut [u8; 128]> {
        self.upper.get_mut(&(i2c, bank, page))
    }

    /// The byte at window offset `offset` of `(i2c, bank, page)`, if the image holds it.
    fn byte(&self, at: EepromAddr, offset: usize) -> Option<u8> {
        if offset < 128 {
            self.lower.get(&at.i2c_address)?.get(offset).copied()
        } else {
            let page = self.upper.get(&(at.i2c_address, at.bank, at.page))?;
            page.get(offset.checked_sub(128)?).copied()
        }
    }
}

impl EepromReader for EepromImage {
    fn read(&mut self, at: EepromAddr, buf: &mut [u8]) -> Result<(), ModuleError> {
        let start = usize::from(at.offset);
        if buf.len() > MAX_READ || start + buf.len() > WINDOW {
            return Err(ModuleError::OutOfWindow { at, len: buf.len() });
        }
        for (k, out) in buf.iter_mut().enumerate() {
            *out = self.byte(at, start + k).ok_or(ModuleError::Refused {
                at,
                status: STATUS_NO_PAGE,
            })?;
        }
        Ok(())
    }
}
