//! Command names and layouts by opcode, from the generated command types: what the trace
//! needs to name a command and find its input and output layouts' reflection tables.

use mlx5_prm::cmd;
use mlx5_prm::rt::reflect::LayoutAccess;
use mlx5_prm::rt::{Command, View};

/// One command of the spec.
#[derive(Debug, Clone, Copy)]
pub struct CommandInfo {
    /// The spec's name (`enable_hca`).
    pub name: &'static str,
    /// Opcode.
    pub opcode: u16,
    /// Name of the input layout.
    pub input: &'static str,
    /// Name of the output layout.
    pub output: &'static str,
}

const fn info<C: Command>() -> CommandInfo {
    CommandInfo {
        name: C::NAME,
        opcode: C::OPCODE,
        input: <C::Input<&'static [u8]> as View<&'static [u8]>>::NAME,
        output: <C::Output<&'static [u8]> as View<&'static [u8]>>::NAME,
    }
}

macro_rules! table {
    ($($c:ident),* $(,)?) => { &[$(info::<cmd::$c>()),*] };
}

/// Every command the spec defines (a test checks none is missing).
pub static COMMANDS: &[CommandInfo] = table![
    QueryHcaCap,
    SetHcaCap,
    CreateCq,
    DestroyCq,
    QueryCq,
    ModifyCq,
    CreateEq,
    DestroyEq,
    QueryEq,
    CreateFlowTable,
    CreateFlowGroup,
    SetFte,
    SetFlowTableRoot,
    DestroyFlowTable,
    DestroyFlowGroup,
    DeleteFte,
    EnableHca,
    DisableHca,
    QueryIssi,
    SetIssi,
    QueryPages,
    ManagePages,
    QueryAdapter,
    InitHca,
    TeardownHca,
    SetDriverVersion,
    AccessRegister,
    AllocUar,
    DeallocUar,
    AllocPd,
    DeallocPd,
    AllocTransportDomain,
    DeallocTransportDomain,
    QuerySpecialContexts,
    CreateMkey,
    DestroyMkey,
    QueryMkey,
    CreateQp,
    DestroyQp,
    QueryQp,
    Rst2initQp,
    Init2initQp,
    Init2rtrQp,
    Rtr2rtsQp,
    Rts2rtsQp,
    Sqerr2rtsQp,
    Qp2err,
    Qp2rst,
    CreateTis,
    DestroyTis,
    CreateTir,
    DestroyTir,
    CreateRqt,
    DestroyRqt,
    QueryVportState,
    QueryNicVportContext,
    ModifyNicVportContext,
    CreateSq,
    ModifySq,
    DestroySq,
    CreateRq,
    ModifyRq,
    DestroyRq,
];

/// The command with `opcode`, if the spec has it.
pub fn by_opcode(opcode: u16) -> Option<&'static CommandInfo> {
    COMMANDS.iter().find(|c| c.opcode == opcode)
}

/// The reflection table of the layout called `name`.
pub fn layout(name: &str) -> Option<&'static LayoutAccess> {
    mlx5_prm::ALL_LAYOUTS.iter().find(|l| l.name == name)
}
