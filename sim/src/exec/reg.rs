//! ACCESS_REGISTER: the port registers a NIC driver touches at bring-up (PAOS port status,
//! PTYS link modes, PMTU port MTU) and the host endianness register Linux writes. The register
//! image travels after the 16-byte header in both directions; its indexing fields (local_port)
//! are read from the input of reads too.

use super::{out, Ctx, Req};
use crate::events;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::{Port, ETH_PROTO_CAPABILITY, ETH_PROTO_OPER, PORT_MAX_MTU};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt::View;
use mlx5_prm::{
    AccessRegisterIn, PaosPortStatus, PaosReg, PmtuReg, PtysAnStatus, PtysConnectorType, PtysReg,
};

/// Register ids.
pub(crate) mod id {
    pub const PMTU: u16 = 0x5003;
    pub const PTYS: u16 = 0x5004;
    pub const PAOS: u16 = 0x5006;
    pub const HOST_ENDIANNESS: u16 = 0x7004;
}

/// Offset of the register image in the input and output.
const DATA: usize = 0x10;
/// Size of the host endianness register.
const HOST_ENDIANNESS_SIZE: usize = 0x10;
/// PTYS proto_mask bit for Ethernet.
const PROTO_ETH: u8 = 0x4;
/// Smallest admin MTU PMTU accepts.
const MIN_MTU: u16 = 64;

fn size_of(reg: u16) -> Option<usize> {
    Some(match reg {
        id::PAOS => <PaosReg<&[u8]> as View<&[u8]>>::SIZE,
        id::PTYS => <PtysReg<&[u8]> as View<&[u8]>>::SIZE,
        id::PMTU => <PmtuReg<&[u8]> as View<&[u8]>>::SIZE,
        id::HOST_ENDIANNESS => HOST_ENDIANNESS_SIZE,
        _ => return None,
    })
}

/// ACCESS_REGISTER: op_mod 0 writes, 1 reads.
pub(super) fn access(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let reg_id = AccessRegisterIn::new_unchecked(req.input).register_id();
    let size = size_of(reg_id).ok_or(Fail::bad_param(s::REG_UNKNOWN))?;
    let data = req
        .input
        .get(DATA..DATA + size)
        .ok_or(Fail::inp_len(s::REG_INPUT_SHORT))?;
    let write = req.op_mod == 0;
    ensure(
        write || req.out_len >= DATA + size,
        Fail::outp_len(s::REG_OUTPUT_SHORT),
    )?;
    let mut image = data.to_vec();
    let was_up = cx.m.port.oper_up();
    match reg_id {
        id::PAOS => paos(&mut cx.m.port, &mut image, write)?,
        id::PTYS => ptys(&mut cx.m.port, &mut image, write)?,
        id::PMTU => pmtu(&mut cx.m.port, &mut image, write)?,
        _ => {}
    }
    if cx.m.port.oper_up() != was_up {
        let up = cx.m.port.oper_up();
        events::port_change(cx.m, cx.dma, 1, up);
    }
    let mut o = out::<cmd::AccessRegister>(size);
    o[DATA..].copy_from_slice(&image);
    Ok(o)
}

fn status(up: bool) -> PaosPortStatus {
    if up {
        PaosPortStatus::Up
    } else {
        PaosPortStatus::Down
    }
}

/// PAOS: admin_status is applied when ase is set; oper_status follows admin and link.
fn paos(port: &mut Port, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = PaosReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    if write {
        if r.ase() {
            port.admin_up = match r.admin_status() {
                Ok(PaosPortStatus::Up) => true,
                Ok(PaosPortStatus::Down) => false,
                Err(_) => return Err(Fail::bad_param(s::PAOS_BAD_ADMIN)),
            };
        }
        if r.ee() {
            port.paos_events = r.e();
        }
    }
    r.set_admin_status(status(port.admin_up));
    r.set_oper_status(status(port.oper_up()));
    r.set_e(port.paos_events);
    r.set_ase(false);
    r.set_ee(false);
    Ok(())
}

/// PTYS: Ethernet only; the admin mask must be a non-empty subset of the capability.
fn ptys(port: &mut Port, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = PtysReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    ensure(
        r.proto_mask() & PROTO_ETH != 0,
        Fail::bad_param(s::PTYS_BAD_PROTO),
    )?;
    if write {
        let admin = r.eth_proto_admin();
        ensure(
            admin != 0 && admin & !ETH_PROTO_CAPABILITY == 0,
            Fail::bad_param(s::PTYS_BAD_PROTO),
        )?;
        port.eth_proto_admin = admin;
    }
    let oper = match (port.oper_up(), port.eth_proto_admin & ETH_PROTO_OPER != 0) {
        (false, _) => 0,
        (true, true) => ETH_PROTO_OPER,
        (true, false) => 1 << (31 - port.eth_proto_admin.leading_zeros()),
    };
    r.set_proto_mask(PROTO_ETH);
    r.set_eth_proto_capability(ETH_PROTO_CAPABILITY);
    r.set_eth_proto_admin(port.eth_proto_admin);
    r.set_eth_proto_oper(oper);
    r.set_an_status(if port.oper_up() {
        PtysAnStatus::LinkUp
    } else {
        PtysAnStatus::LinkDown
    });
    r.set_connector_type(PtysConnectorType::Da);
    Ok(())
}

/// PMTU: admin_mtu between 64 and max_mtu; oper_mtu follows it.
fn pmtu(port: &mut Port, image: &mut [u8], write: bool) -> Outcome<()> {
    let mut r = PmtuReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    if write {
        let mtu = r.admin_mtu();
        ensure(
            (MIN_MTU..=PORT_MAX_MTU).contains(&mtu),
            Fail::bad_param(s::PMTU_BAD_MTU),
        )?;
        port.admin_mtu = mtu;
    }
    r.set_max_mtu(PORT_MAX_MTU);
    r.set_admin_mtu(port.admin_mtu);
    r.set_oper_mtu(port.admin_mtu);
    Ok(())
}
