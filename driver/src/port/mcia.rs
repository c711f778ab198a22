//! MCIA: the module EEPROM of a cage, read in pieces of at most [`MCIA_MAX_BYTES`] inside one
//! 256-byte page window, as the [`EepromReader`] the module decoders take. Bank 0 only: the
//! register has no bank field, so a read of another CMIS bank is refused with
//! [`ModuleError::BankUnsupported`] (see [`crate::module`], "Banks").

use crate::backend::Backend;
use crate::module::{EepromAddr, EepromReader, ModuleError};
use crate::Hca;
use mlx5_prm::reg::Mcia;

/// Most bytes one MCIA read carries (12 dwords; 32 only where MCAM reports mcia_32dwords,
/// which this reader does not rely on).
pub const MCIA_MAX_BYTES: usize = 48;

/// MCIA's register status for "no module in the cage" (what firmware answers for an empty
/// cage; Linux logs it as a failed MCIA query).
const STATUS_NOT_PRESENT: u8 = 0x3;

/// Bytes of one page window (the lower page and one upper page).
const WINDOW: usize = 256;

/// Reads one module's EEPROM through MCIA.
pub struct McIaReader<'h, B: Backend> {
    hca: &'h Hca<B>,
    module: u8,
    reads: usize,
}

impl<'h, B: Backend> McIaReader<'h, B> {
    /// A reader of module (cage) `module`, the number PMLP reports for a port.
    pub fn new(hca: &'h Hca<B>, module: u8) -> McIaReader<'h, B> {
        McIaReader {
            hca,
            module,
            reads: 0,
        }
    }

    /// MCIA accesses made so far.
    pub fn reads(&self) -> usize {
        self.reads
    }
}

impl<B: Backend> EepromReader for McIaReader<'_, B> {
    fn read(&mut self, at: EepromAddr, buf: &mut [u8]) -> Result<(), ModuleError> {
        let start = usize::from(at.offset);
        if start + buf.len() > WINDOW {
            return Err(ModuleError::OutOfWindow { at, len: buf.len() });
        }
        if at.bank != 0 {
            // The spec's mcia_reg (as the kernel's) has no bank number: reading bank 0
            // instead would return another bank's bytes as if they were asked for.
            return Err(ModuleError::BankUnsupported { at });
        }
        for (i, chunk) in buf.chunks_mut(MCIA_MAX_BYTES).enumerate() {
            let offset = start + i * MCIA_MAX_BYTES;
            let piece = EepromAddr {
                offset: offset as u8,
                ..at
            };
            self.reads += 1;
            let r = self
                .hca
                .read_reg::<Mcia>(|r| {
                    r.set_module(self.module);
                    r.set_i2c_device_address(at.i2c_address);
                    r.set_page_number(at.page);
                    r.set_device_address(offset as u16);
                    r.set_size(chunk.len() as u16);
                })
                .map_err(|e| ModuleError::Read {
                    at: piece,
                    source: Box::new(e),
                })?;
            match r.status() {
                0 => {}
                STATUS_NOT_PRESENT => return Err(ModuleError::NotPresent),
                status => return Err(ModuleError::Refused { at: piece, status }),
            }
            // The data field is 128 bytes, the first `chunk.len()` of them the answer.
            let data = r.dwords();
            let n = chunk.len().min(data.len());
            chunk[..n].copy_from_slice(&data[..n]);
        }
        Ok(())
    }
}
