//! MCIA: reads of the EEPROM of the module in the cage (see `module_eeprom.rs`; an empty
//! cage answers "no module"). Linux reads at most 48 bytes an
//! access (the model does not report MCAM mcia_32dwords) and keeps each inside the 256-byte
//! window of one page. A read of the wrong module, I2C address or page completes with a
//! non-zero register status, as firmware reports module faults, rather than a command error;
//! an access larger than one read carries is a driver bug and fails the command.

use crate::fail::{ensure, Fail, Outcome};
use crate::model::Port;
use crate::module_eeprom::I2C_ADDRESS;
use crate::syndrome as s;
use mlx5_prm::MciaReg;

/// Most bytes one MCIA read carries without mcia_32dwords (12 dwords).
const MAX_BYTES: usize = 48;
/// Register status: no module answers at this module number.
const STATUS_NO_MODULE: u8 = 0x3;
/// Register status: the module has no such I2C address or page.
const STATUS_BAD_ADDRESS: u8 = 0x9;

/// MCIA read (the register is not writable).
pub(super) fn mcia(port: &Port, image: &mut [u8]) -> Outcome<()> {
    let mut r = MciaReg::new_unchecked(image);
    let size = usize::from(r.size());
    let offset = usize::from(r.device_address());
    ensure(size <= MAX_BYTES, Fail::bad_param(s::MCIA_BAD_SIZE))?;
    let module = port.module.as_deref();
    let status = if r.module() != super::port_reg::MODULE {
        STATUS_NO_MODULE
    } else if let Some(module) = module.filter(|_| r.i2c_device_address() == I2C_ADDRESS) {
        match module.read(r.page_number(), offset, size) {
            Some(bytes) => {
                let mut data = [0u8; 128];
                data[..bytes.len()].copy_from_slice(&bytes);
                r.set_dwords(&data);
                0
            }
            None => STATUS_BAD_ADDRESS,
        }
    } else if module.is_none() {
        STATUS_NO_MODULE
    } else {
        STATUS_BAD_ADDRESS
    };
    r.set_status(status);
    Ok(())
}
