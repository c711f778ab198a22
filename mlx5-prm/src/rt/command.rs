//! Commands typed by opcode: each command of the spec becomes a type implementing
//! [`Command`], which ties its opcode, input layout, output layout and op_mod values together,
//! so one command's input cannot be built in another's buffer nor its output read as the wrong
//! layout.
//!
//! ```
//! use mlx5_prm::cmd::CreateCq;
//! use mlx5_prm::rt::Command;
//!
//! let mut buf = [0u8; 0x110];
//! let mut input = CreateCq::input(&mut buf[..], 0).unwrap(); // a `CreateCqIn`
//! input.cq_context_mut().set_log_cq_size(6);
//! assert_eq!(input.opcode(), CreateCq::OPCODE);
//! ```
//!
//! Another command's input type does not fit:
//!
//! ```compile_fail
//! use mlx5_prm::cmd::{CreateCq, DestroyCq};
//! use mlx5_prm::rt::Command;
//!
//! let mut buf = [0u8; 0x110];
//! let input: <DestroyCq as Command>::Input<&mut [u8]> = CreateCq::input(&mut buf[..], 0).unwrap();
//! ```
//!
//! Nor is one command's output read as another's:
//!
//! ```compile_fail
//! use mlx5_prm::cmd::CreateCq;
//! use mlx5_prm::rt::Command;
//! use mlx5_prm::DestroyCqOut;
//!
//! let buf = [0u8; 0x10];
//! let out: DestroyCqOut<&[u8]> = CreateCq::output(&buf[..]).unwrap();
//! ```

use super::{Bytes, BytesMut, LayoutError, View};

/// A command's op_mod: named values where the spec gives them, any 16-bit number otherwise.
pub trait OpMod: Copy {
    /// The value written to the input's `op_mod` field.
    fn raw(self) -> u16;
}

impl OpMod for u16 {
    fn raw(self) -> u16 {
        self
    }
}

/// One command of the PRM's command interface.
pub trait Command {
    /// The command's name as the spec writes it.
    const NAME: &'static str;
    /// The opcode.
    const OPCODE: u16;
    /// Its op_mod values.
    type OpMod: OpMod;
    /// The input mailbox layout.
    type Input<B: Bytes>: View<B>;
    /// The output mailbox layout.
    type Output<B: Bytes>: View<B>;

    /// Wraps `buf` as this command's input and writes the common header: the opcode at
    /// `0x00[31:16]` and op_mod at `0x04[15:0]` (the spec compiler checks every input layout
    /// has them there). The rest of `buf` is left as it is.
    fn input<B: BytesMut>(mut buf: B, op_mod: Self::OpMod) -> Result<Self::Input<B>, LayoutError> {
        super::check_len(
            <Self::Input<B> as View<B>>::NAME,
            <Self::Input<B> as View<B>>::SIZE,
            &buf,
        )?;
        super::set32(&mut buf, 0, 16, 0xffff, u32::from(Self::OPCODE));
        super::set32(&mut buf, 4, 0, 0xffff, u32::from(op_mod.raw()));
        Ok(<Self::Input<B> as View<B>>::new_unchecked(buf))
    }

    /// Wraps `buf` as this command's output, checking its length.
    fn output<B: Bytes>(buf: B) -> Result<Self::Output<B>, LayoutError> {
        <Self::Output<B> as View<B>>::new_checked(buf)
    }
}

/// The status byte of any command output (`0x00[31:24]`).
pub fn output_status<B: Bytes + ?Sized>(out: &B) -> u8 {
    super::get32(out, 0, 24, 0xff) as u8
}

/// The syndrome of any command output (`0x04[31:0]`).
pub fn output_syndrome<B: Bytes + ?Sized>(out: &B) -> u32 {
    out.read_be32(4)
}
