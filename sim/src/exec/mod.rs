//! Command execution: the table of implemented commands (opcode, input and output layout
//! sizes from the generated types, the function state each needs, the op_mods it defines,
//! its handler) and the checks every command passes before its handler runs.
//!
//! Checks run in a fixed order, the first failure wins: injected fault, unknown opcode (BAD_OP),
//! input shorter than the input layout (BAD_INP_LEN), output shorter than the output layout
//! (BAD_OUTP_LEN), function state (BAD_SYS_STATE), op_mod (BAD_PARAM), uid (BAD_PARAM); then
//! the handler's own checks, which look at the context's own fields first, then the objects it
//! names (BAD_RES), then its page lists and doorbell record, and change nothing unless all
//! pass.
//!
//! A request the model does not implement (an unknown opcode, capability type or register) is
//! answered with the PRM's status and also counted in the model's ledger of unimplemented
//! requests (`observe.rs`), which the host can list.

pub(crate) mod cam;
pub(crate) mod caps;
pub(crate) mod clock_reg;
pub(crate) mod counters;
pub(crate) mod cq;
pub(crate) mod eq;
pub(crate) mod flow;
pub(crate) mod handles;
pub(crate) mod hca;
pub(crate) mod mkey;
pub(crate) mod module;
pub(crate) mod nv_reg;
pub(crate) mod pages;
pub(crate) mod port_reg;
pub(crate) mod ppcnt;
pub(crate) mod qp;
pub(crate) mod reg;
pub(crate) mod roce_addr;
pub(crate) mod tir;
pub(crate) mod vport;
pub(crate) mod wq;

use crate::dma::DmaSpace;
use crate::fail::{Fail, Outcome};
use crate::faults::FaultInjector;
use crate::model::{Hca, Model};
use crate::record::CommandRecord;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt::{Command, View};
use mlx5_prm::CmdOut;

/// What a handler works on.
pub(crate) struct Ctx<'a> {
    pub m: &'a mut Model,
    pub dma: &'a DmaSpace,
}

/// One command as delivered.
pub(crate) struct Req<'a> {
    /// The whole input, `input_length` bytes.
    pub input: &'a [u8],
    /// The entry's `output_length`.
    pub out_len: usize,
    /// The input's op_mod.
    pub op_mod: u16,
    /// The input's opcode (for handlers that serve several commands).
    pub opcode: u16,
}

type Handler = fn(&mut Ctx<'_>, &Req<'_>) -> Outcome;

/// The function state a command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Allowed before ENABLE_HCA.
    Any,
    /// Needs ENABLE_HCA.
    Enabled,
    /// Needs INIT_HCA.
    Initialized,
}

/// One implemented command.
struct Spec {
    opcode: u16,
    in_size: usize,
    out_size: usize,
    gate: Gate,
    /// The op_mods the command defines; `None` when the handler checks op_mod itself.
    op_mods: Option<&'static [u16]>,
    handler: Handler,
}

/// Size of command `C`'s input layout.
pub(crate) const fn in_size<C: Command>() -> usize {
    <C::Input<&'static [u8]> as View<&'static [u8]>>::SIZE
}

/// Size of command `C`'s output layout.
pub(crate) const fn out_size<C: Command>() -> usize {
    <C::Output<&'static [u8]> as View<&'static [u8]>>::SIZE
}

/// A zeroed output of command `C` with `extra` bytes after its layout (status 0 = OK).
pub(crate) fn out<C: Command>(extra: usize) -> Vec<u8> {
    vec![0; out_size::<C>() + extra]
}

const fn spec<C: Command>(gate: Gate, op_mods: Option<&'static [u16]>, handler: Handler) -> Spec {
    Spec {
        opcode: C::OPCODE,
        in_size: in_size::<C>(),
        out_size: out_size::<C>(),
        gate,
        op_mods,
        handler,
    }
}

const ZERO: Option<&[u16]> = Some(&[0]);

static COMMANDS: &[Spec] = &[
    spec::<cmd::EnableHca>(Gate::Any, ZERO, hca::enable),
    spec::<cmd::DisableHca>(Gate::Any, ZERO, hca::disable),
    spec::<cmd::QueryIssi>(Gate::Any, ZERO, hca::query_issi),
    spec::<cmd::SetIssi>(Gate::Enabled, ZERO, hca::set_issi),
    spec::<cmd::QueryPages>(Gate::Any, Some(&[1, 2, 3]), pages::query),
    spec::<cmd::ManagePages>(Gate::Any, Some(&[0, 1, 2]), pages::manage),
    spec::<cmd::QueryHcaCap>(Gate::Enabled, None, caps::query),
    spec::<cmd::SetHcaCap>(Gate::Enabled, None, caps::set),
    spec::<cmd::QueryAdapter>(Gate::Enabled, ZERO, hca::query_adapter),
    spec::<cmd::InitHca>(Gate::Enabled, ZERO, hca::init),
    spec::<cmd::TeardownHca>(Gate::Enabled, ZERO, hca::teardown),
    spec::<cmd::SetDriverVersion>(Gate::Initialized, ZERO, hca::set_driver_version),
    spec::<cmd::AccessRegister>(Gate::Enabled, Some(&[0, 1]), reg::access),
    spec::<cmd::AllocUar>(Gate::Initialized, ZERO, handles::alloc_uar),
    spec::<cmd::DeallocUar>(Gate::Initialized, ZERO, handles::dealloc_uar),
    spec::<cmd::AllocPd>(Gate::Initialized, ZERO, handles::alloc_pd),
    spec::<cmd::DeallocPd>(Gate::Initialized, ZERO, handles::dealloc_pd),
    spec::<cmd::AllocTransportDomain>(Gate::Initialized, ZERO, handles::alloc_td),
    spec::<cmd::DeallocTransportDomain>(Gate::Initialized, ZERO, handles::dealloc_td),
    spec::<cmd::QuerySpecialContexts>(Gate::Initialized, ZERO, handles::query_special_contexts),
    spec::<cmd::CreateEq>(Gate::Initialized, ZERO, eq::create),
    spec::<cmd::DestroyEq>(Gate::Initialized, ZERO, eq::destroy),
    spec::<cmd::QueryEq>(Gate::Initialized, ZERO, eq::query),
    spec::<cmd::CreateCq>(Gate::Initialized, ZERO, cq::create),
    spec::<cmd::DestroyCq>(Gate::Initialized, ZERO, cq::destroy),
    spec::<cmd::QueryCq>(Gate::Initialized, ZERO, cq::query),
    spec::<cmd::ModifyCq>(Gate::Initialized, Some(&[0, 1]), cq::modify),
    spec::<cmd::CreateMkey>(Gate::Initialized, ZERO, mkey::create),
    spec::<cmd::DestroyMkey>(Gate::Initialized, ZERO, mkey::destroy),
    spec::<cmd::QueryMkey>(Gate::Initialized, ZERO, mkey::query),
    spec::<cmd::CreateQp>(Gate::Initialized, ZERO, qp::create),
    spec::<cmd::DestroyQp>(Gate::Initialized, ZERO, qp::destroy),
    spec::<cmd::QueryQp>(Gate::Initialized, ZERO, qp::query),
    spec::<cmd::Rst2initQp>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Init2initQp>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Init2rtrQp>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Rtr2rtsQp>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Rts2rtsQp>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Sqerr2rtsQp>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Qp2err>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::Qp2rst>(Gate::Initialized, ZERO, qp::transition),
    spec::<cmd::CreateSq>(Gate::Initialized, ZERO, wq::create_sq),
    spec::<cmd::ModifySq>(Gate::Initialized, ZERO, wq::modify_sq),
    spec::<cmd::DestroySq>(Gate::Initialized, ZERO, wq::destroy_sq),
    spec::<cmd::QuerySq>(Gate::Initialized, ZERO, wq::query_sq),
    spec::<cmd::CreateRq>(Gate::Initialized, ZERO, wq::create_rq),
    spec::<cmd::ModifyRq>(Gate::Initialized, ZERO, wq::modify_rq),
    spec::<cmd::DestroyRq>(Gate::Initialized, ZERO, wq::destroy_rq),
    spec::<cmd::CreateTis>(Gate::Initialized, ZERO, tir::create_tis),
    spec::<cmd::DestroyTis>(Gate::Initialized, ZERO, tir::destroy_tis),
    spec::<cmd::CreateTir>(Gate::Initialized, ZERO, tir::create_tir),
    spec::<cmd::ModifyTir>(Gate::Initialized, ZERO, tir::modify_tir),
    spec::<cmd::DestroyTir>(Gate::Initialized, ZERO, tir::destroy_tir),
    spec::<cmd::CreateRqt>(Gate::Initialized, ZERO, tir::create_rqt),
    spec::<cmd::ModifyRqt>(Gate::Initialized, ZERO, tir::modify_rqt),
    spec::<cmd::DestroyRqt>(Gate::Initialized, ZERO, tir::destroy_rqt),
    spec::<cmd::CreateFlowTable>(Gate::Initialized, ZERO, flow::create_table),
    spec::<cmd::CreateFlowGroup>(Gate::Initialized, ZERO, flow::create_group),
    spec::<cmd::SetFte>(Gate::Initialized, Some(&[0, 1]), flow::set_entry),
    spec::<cmd::SetFlowTableRoot>(Gate::Initialized, ZERO, flow::set_root),
    spec::<cmd::DeleteFte>(Gate::Initialized, ZERO, flow::delete_entry),
    spec::<cmd::DestroyFlowGroup>(Gate::Initialized, ZERO, flow::destroy_group),
    spec::<cmd::DestroyFlowTable>(Gate::Initialized, ZERO, flow::destroy_table),
    spec::<cmd::AllocQCounter>(Gate::Initialized, ZERO, counters::alloc_q),
    spec::<cmd::DeallocQCounter>(Gate::Initialized, ZERO, counters::dealloc_q),
    spec::<cmd::QueryQCounter>(Gate::Initialized, ZERO, counters::query_q),
    spec::<cmd::QueryVportCounter>(Gate::Initialized, ZERO, counters::query_vport),
    spec::<cmd::QueryVnicEnv>(Gate::Initialized, ZERO, counters::query_vnic_env),
    spec::<cmd::QueryVportState>(Gate::Initialized, Some(&[0, 2]), vport::query_state),
    spec::<cmd::QueryNicVportContext>(Gate::Initialized, ZERO, vport::query_context),
    spec::<cmd::ModifyNicVportContext>(Gate::Initialized, ZERO, vport::modify_context),
    spec::<cmd::QueryRoceAddress>(Gate::Initialized, ZERO, roce_addr::query),
    spec::<cmd::SetRoceAddress>(Gate::Initialized, ZERO, roce_addr::set),
];

/// Opcodes the model implements, in table order.
pub fn opcodes() -> impl Iterator<Item = u16> {
    COMMANDS.iter().map(|c| c.opcode)
}

/// A command that ran: what was asked and what was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Executed {
    pub opcode: u16,
    pub op_mod: u16,
    pub status: u8,
    pub syndrome: u32,
    /// The whole input as delivered (inline bytes and mailbox data).
    pub input: Vec<u8>,
    /// The whole output (header included); the command interface writes up to output_length
    /// bytes of it.
    pub output: Vec<u8>,
}

/// The syndromes that mean "the model does not have this" rather than "the request is wrong".
const UNIMPLEMENTED: &[u32] = &[
    s::UNKNOWN_OPCODE,
    s::CAP_TYPE_UNSUPPORTED,
    s::SET_CAP_TYPE_UNSUPPORTED,
    s::REG_UNKNOWN,
];

/// Runs the command whose first 16 input bytes are `inline` and whose whole input is `input`,
/// records it, and returns its output.
pub(crate) fn execute(
    m: &mut Model,
    dma: &DmaSpace,
    faults: &FaultInjector,
    inline: &[u8; 16],
    input: &[u8],
    out_len: usize,
) -> Executed {
    // Whatever the command does, the data path's memos of command-made state are stale.
    m.generation = m.generation.wrapping_add(1);
    let opcode = u16::from_be_bytes([inline[0], inline[1]]);
    let uid = u16::from_be_bytes([inline[2], inline[3]]);
    let op_mod = u16::from_be_bytes([inline[6], inline[7]]);
    let result = match faults.failure(opcode) {
        Some((status, syndrome)) => Err(Fail { status, syndrome }),
        None => run(m, dma, opcode, uid, op_mod, input, out_len),
    };
    if let Err(fail) = &result {
        if UNIMPLEMENTED.contains(&fail.syndrome) {
            let register = (opcode == cmd::AccessRegister::OPCODE && input.len() >= 12)
                .then(|| u16::from_be_bytes([input[10], input[11]]));
            m.unimplemented
                .record(opcode, op_mod, register, (fail.status, fail.syndrome));
        }
    }
    let (output, status, syndrome) = match result {
        Ok(output) => (output, 0, 0),
        Err(fail) => {
            let mut output = vec![0u8; 16];
            let mut header = CmdOut::new_unchecked(&mut output[..]);
            header.set_status_raw(fail.status);
            header.set_syndrome(fail.syndrome);
            (output, fail.status, fail.syndrome)
        }
    };
    m.records.push(CommandRecord {
        opcode,
        op_mod,
        status,
        syndrome,
    });
    Executed {
        opcode,
        op_mod,
        status,
        syndrome,
        input: input.to_vec(),
        output,
    }
}

fn run(
    m: &mut Model,
    dma: &DmaSpace,
    opcode: u16,
    uid: u16,
    op_mod: u16,
    input: &[u8],
    out_len: usize,
) -> Outcome {
    let spec = COMMANDS
        .iter()
        .find(|c| c.opcode == opcode)
        .ok_or(Fail::bad_op(s::UNKNOWN_OPCODE))?;
    if input.len() < spec.in_size {
        return Err(Fail::inp_len(s::INPUT_TOO_SHORT));
    }
    if out_len < spec.out_size {
        return Err(Fail::outp_len(s::OUTPUT_TOO_SHORT));
    }
    match (spec.gate, m.hca) {
        (Gate::Enabled | Gate::Initialized, Hca::Disabled) => {
            return Err(Fail::bad_sys_state(s::NOT_ENABLED))
        }
        (Gate::Initialized, Hca::Enabled) => return Err(Fail::bad_sys_state(s::NOT_INITIALIZED)),
        _ => {}
    }
    if spec.op_mods.is_some_and(|ok| !ok.contains(&op_mod)) {
        return Err(Fail::bad_param(s::BAD_OP_MOD));
    }
    if uid != 0 {
        return Err(Fail::bad_param(s::UID_NOT_SUPPORTED));
    }
    let mut cx = Ctx { m, dma };
    let req = Req {
        input,
        out_len,
        op_mod,
        opcode,
    };
    (spec.handler)(&mut cx, &req)
}
