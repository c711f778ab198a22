//! Access registers (port, module, management) through ACCESS_REGISTER, typed by the spec's
//! `access_registers`: `read_reg::<reg::Paos>` sends PAOS's id with a PAOS image and reads the
//! answer back as one, and only registers the PRM lets software write take `write_reg`. A
//! failure names the register as well as the command's status and syndrome.

use super::Hca;
use crate::backend::Backend;
use crate::error::{Error, Result};
use mlx5_prm::cmd::{AccessRegister, AccessRegisterOpMod};
use mlx5_prm::rt::{AccessReg, Readable, RegisterInfo, View, Writable};

/// Where the image starts in ACCESS_REGISTER's input and output (after the 16-byte header).
const IMAGE: usize = 0x10;

impl<B: Backend> Hca<B> {
    /// Reads register `R`: `index` sets the fields that select the instance (`local_port`,
    /// a counter group, a module page; see `R::INDEX`), and the device's image comes back.
    pub fn read_reg<R: Readable>(
        &self,
        index: impl FnOnce(&mut R::Image<&mut [u8]>),
    ) -> Result<R::Image<Vec<u8>>> {
        self.access_reg::<R>(AccessRegisterOpMod::Read, index)
    }

    /// Writes register `R` with the image `fill` writes (index fields included), and returns
    /// the image the device answers with.
    pub fn write_reg<R: Writable>(
        &self,
        fill: impl FnOnce(&mut R::Image<&mut [u8]>),
    ) -> Result<R::Image<Vec<u8>>> {
        self.access_reg::<R>(AccessRegisterOpMod::Write, fill)
    }

    /// Reads (`write` false) or writes register `reg`, described by value (from
    /// `mlx5_prm::reg::ALL`), with the raw `image`: for tools that take a register's name at
    /// run time. The image must be the register's size, and the direction one the spec allows.
    pub fn access_reg_raw(
        &self,
        reg: &'static RegisterInfo,
        write: bool,
        image: &[u8],
    ) -> Result<Vec<u8>> {
        if image.len() != reg.size {
            return Err(Error::InvalidArgument {
                what: "register image",
                why: format!(
                    "{} bytes for register {}, whose image is {} bytes",
                    image.len(),
                    reg.name,
                    reg.size
                ),
            });
        }
        let allowed = if write {
            reg.access.writable()
        } else {
            reg.access.readable()
        };
        if !allowed {
            return Err(Error::InvalidArgument {
                what: "register access",
                why: format!(
                    "register {} is {} in the spec",
                    reg.name,
                    if write { "read-only" } else { "write-only" }
                ),
            });
        }
        let op_mod = if write {
            AccessRegisterOpMod::Write
        } else {
            AccessRegisterOpMod::Read
        };
        self.access(reg.name, reg.id, op_mod, image)
    }

    fn access_reg<R: AccessReg>(
        &self,
        op_mod: AccessRegisterOpMod,
        fill: impl FnOnce(&mut R::Image<&mut [u8]>),
    ) -> Result<R::Image<Vec<u8>>> {
        let size = <R::Image<&[u8]> as View<&[u8]>>::SIZE;
        let mut image = vec![0u8; size];
        fill(&mut R::image(&mut image[..])?);
        let bytes = self.access(R::NAME, R::ID, op_mod, &image)?;
        Ok(R::image(bytes)?)
    }

    /// One ACCESS_REGISTER: the image out, the device's image back (same size).
    fn access(
        &self,
        name: &'static str,
        id: u16,
        op_mod: AccessRegisterOpMod,
        image: &[u8],
    ) -> Result<Vec<u8>> {
        let size = image.len();
        let direction = match op_mod {
            AccessRegisterOpMod::Read => "read",
            AccessRegisterOpMod::Write => "write",
        };
        let named = |e: Error| Error::Register {
            register: name,
            id,
            direction,
            source: Box::new(e),
        };
        // `AccessReg` is a public trait and `RegisterInfo` a plain struct: the id, size and
        // direction are checked against the spec's own list, whoever described the register.
        let spec = mlx5_prm::reg::by_id(id);
        let allowed = spec.is_some_and(|r| {
            r.size == size
                && match op_mod {
                    AccessRegisterOpMod::Read => r.access.readable(),
                    AccessRegisterOpMod::Write => r.access.writable(),
                }
        });
        if !allowed {
            return Err(named(Error::InvalidArgument {
                what: "register access",
                why: format!(
                    "id {id:#x} with a {size}-byte image, to {direction}: the spec has no \
                     such register, or not of that size, or not for that direction"
                ),
            }));
        }
        // SAFETY: ACCESS_REGISTER carries a register image, by value; the id, size and
        // direction are one of the spec's registers (checked above), and no image of those
        // holds a host address.
        let out = unsafe {
            self.run_extra::<AccessRegister>(op_mod, size, size, |input| {
                input.set_register_id(id);
                input.storage_mut()[IMAGE..].copy_from_slice(image);
                Ok(())
            })
        }
        .map_err(named)?;
        let mut bytes = out.into_inner();
        // The output is the header plus exactly `size` bytes (`run_extra` sized it).
        bytes.drain(..IMAGE);
        Ok(bytes)
    }
}
