//! Commands safe code may run as they are: queries, which only read the device's state. Every
//! other command can give the device memory or take an object from under its owner, so it
//! runs through the `unsafe` [`Hca::run`] / [`Hca::run_extra`] or the driver's own resources.

use super::Hca;
use crate::backend::Backend;
use crate::error::{Error, Result};
use mlx5_prm::cmd::{
    QueryAdapter, QueryCq, QueryEq, QueryHcaCap, QueryIssi, QueryMkey, QueryNicVportContext,
    QueryPages, QueryQCounter, QueryQp, QueryRoceAddress, QuerySpecialContexts, QuerySq,
    QueryVnicEnv, QueryVportCounter, QueryVportState,
};
use mlx5_prm::rt::{Command, OpMod, View};

mod sealed {
    pub trait Sealed {}
}

/// A command that only reads the device's state: its input selects what to read (an object
/// number, a counter set, a capability page) and holds no host address, and it creates,
/// changes and destroys nothing, so it cannot hand the device memory. Sealed: the list below
/// is the driver's, each input checked against the spec (a `clear` bit resets counters, which
/// is no memory).
pub trait Query: Command + sealed::Sealed {}

macro_rules! queries {
    ($($c:ident),* $(,)?) => {$(
        impl sealed::Sealed for $c {}
        impl Query for $c {}
    )*};
}

queries!(
    QueryAdapter,
    QueryCq,
    QueryEq,
    QueryHcaCap,
    QueryIssi,
    QueryMkey,
    QueryNicVportContext,
    QueryPages,
    QueryQCounter,
    QueryQp,
    QueryRoceAddress,
    QuerySpecialContexts,
    QuerySq,
    QueryVnicEnv,
    QueryVportCounter,
    QueryVportState,
);

/// Where every command input keeps its opcode (`0x00[31:16]`) and op_mod (`0x04[15:0]`).
const OPCODE: std::ops::Range<usize> = 0..2;
const OP_MOD: std::ops::Range<usize> = 6..8;

impl<B: Backend> Hca<B> {
    /// Runs query `C` with no trailing data and returns its typed output, as [`Hca::run`]
    /// does, from safe code. `fill` writes the input's selectors; should it rewrite the
    /// opcode or op_mod through the raw storage (which would make it another command), the
    /// query is refused before it is sent.
    pub fn query<C: Query>(
        &self,
        op_mod: C::OpMod,
        fill: impl FnOnce(&mut C::Input<&mut [u8]>),
    ) -> Result<C::Output<Vec<u8>>> {
        let checked = |i: &mut C::Input<&mut [u8]>| {
            fill(i);
            check_header::<C>(i.storage(), op_mod.raw())
        };
        // SAFETY: `C` is a `Query` (it reads state and hands the device no memory), and the
        // input still carries `C`'s opcode, so the device runs that query and nothing else.
        unsafe { self.run_extra::<C>(op_mod, 0, 0, checked) }
    }
}

/// The input's opcode and op_mod are still `C`'s.
fn check_header<C: Command>(input: &[u8], op_mod: u16) -> Result<()> {
    let intact = input.get(OPCODE) == Some(&C::OPCODE.to_be_bytes()[..])
        && input.get(OP_MOD) == Some(&op_mod.to_be_bytes()[..]);
    if intact {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: C::NAME,
        why: "the input's opcode or op_mod was rewritten: only the query itself may run".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_opcode_or_op_mod_is_refused() {
        let mut input = [0u8; 16];
        input[..2].copy_from_slice(&QueryAdapter::OPCODE.to_be_bytes());
        assert!(check_header::<QueryAdapter>(&input, 0).is_ok());
        assert!(check_header::<QueryAdapter>(&input, 1).is_err());
        input[1] ^= 1;
        assert!(check_header::<QueryAdapter>(&input, 0).is_err());
    }
}
