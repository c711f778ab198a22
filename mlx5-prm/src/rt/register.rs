//! Access registers typed by register id: each register of the spec's `access_registers`
//! section becomes a type implementing [`AccessReg`], which ties its id to the layout of its
//! image, and [`Readable`] / [`Writable`] as the spec allows, so that a driver's
//! `read_reg::<R>` / `write_reg::<R>` cannot send one register's id with another's image, nor
//! write a register the PRM makes read-only. [`RegisterInfo`] describes the same facts by
//! value (the generated `reg::ALL`), for tools that take a register's name from a user.
//!
//! ```
//! use mlx5_prm::reg::Paos;
//! use mlx5_prm::rt::{AccessReg, RegAccess};
//!
//! let mut image = [0u8; 16];
//! let mut paos = Paos::image(&mut image[..]).unwrap(); // a `PaosReg`
//! paos.set_local_port(1);
//! assert_eq!((Paos::ID, Paos::ACCESS), (0x5006, RegAccess::ReadWrite));
//! ```
//!
//! A read-only register is not [`Writable`]:
//!
//! ```compile_fail
//! fn write<R: mlx5_prm::rt::Writable>() {}
//! write::<mlx5_prm::reg::Pcam>();
//! ```

use super::{Bytes, LayoutError, View};

/// The directions the PRM lets a register be accessed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegAccess {
    /// Read only (ACCESS_REGISTER op_mod 1).
    Read,
    /// Write only (op_mod 0).
    Write,
    /// Both.
    ReadWrite,
}

impl RegAccess {
    /// True when the register may be read.
    pub const fn readable(self) -> bool {
        !matches!(self, RegAccess::Write)
    }

    /// True when the register may be written.
    pub const fn writable(self) -> bool {
        !matches!(self, RegAccess::Read)
    }

    /// The spec's spelling: `read`, `write` or `read_write`.
    pub const fn name(self) -> &'static str {
        match self {
            RegAccess::Read => "read",
            RegAccess::Write => "write",
            RegAccess::ReadWrite => "read_write",
        }
    }
}

/// An access register of the spec.
pub trait AccessReg {
    /// The register's name as the spec writes it (`paos`).
    const NAME: &'static str;
    /// Its register id (access_register_in.register_id).
    const ID: u16;
    /// The directions it may be accessed in.
    const ACCESS: RegAccess;
    /// The fields that select one instance (a port, a counter group, a page).
    const INDEX: &'static [&'static str];
    /// The layout of its image.
    type Image<B: Bytes>: View<B>;

    /// Wraps `buf` as this register's image, checking its length.
    fn image<B: Bytes>(buf: B) -> Result<Self::Image<B>, LayoutError> {
        <Self::Image<B> as View<B>>::new_checked(buf)
    }
}

/// A register the PRM lets software read.
pub trait Readable: AccessReg {}

/// A register the PRM lets software write.
pub trait Writable: AccessReg {}

/// One access register of the spec, described by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterInfo {
    /// The spec's name (`paos`).
    pub name: &'static str,
    /// Register id.
    pub id: u16,
    /// Name of the image layout (`paos_reg`).
    pub layout: &'static str,
    /// Bytes of the image.
    pub size: usize,
    /// The directions it may be accessed in.
    pub access: RegAccess,
    /// The fields that select one instance.
    pub index: &'static [&'static str],
    /// The first line of its doc.
    pub summary: &'static str,
}
