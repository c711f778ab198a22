//! Shared by the driver's integration tests.

use mlx5_prm::cmd::*;
use mlx5_prm::rt::Command;

/// `(opcode, op_mod)` of every command bring-up sends, in order.
pub fn bring_up_sequence() -> Vec<(u16, u16)> {
    vec![
        (EnableHca::OPCODE, 0),
        (QueryIssi::OPCODE, 0),
        (SetIssi::OPCODE, 0),
        (QueryPages::OPCODE, 1),
        (ManagePages::OPCODE, 1),
        (QueryHcaCap::OPCODE, 0),
        (QueryHcaCap::OPCODE, 1),
        (SetHcaCap::OPCODE, 0),
        (QueryHcaCap::OPCODE, 1),
        (QueryPages::OPCODE, 2),
        (ManagePages::OPCODE, 1),
        (InitHca::OPCODE, 0),
        (QueryPages::OPCODE, 3),
        (ManagePages::OPCODE, 1),
        (SetDriverVersion::OPCODE, 0),
        (AllocUar::OPCODE, 0),
        (CreateEq::OPCODE, 0),
        (AllocPd::OPCODE, 0),
        (AllocTransportDomain::OPCODE, 0),
        (QuerySpecialContexts::OPCODE, 0),
    ]
}
