//! ACCESS_REGISTER: the port registers a NIC driver touches at bring-up (PAOS port status,
//! PTYS link modes, PMTU port MTU), the ones behind ethtool (PFCC, PMLP, PDDR, PPCNT in
//! `port_reg.rs`; MCIA, the module EEPROM, in `module.rs`), the host endianness register
//! Linux writes first, and the read-only registers that describe the device (PCAM, MCAM,
//! QCAM, DTOR; see `cam.rs`). The
//! register image travels after the 16-byte header in both directions; its indexing fields
//! (local_port, feature and register groups) are read from the input of reads too.

use super::{cam, module, out, port_reg, ppcnt, Ctx, Req};
use crate::config::Timeouts;
use crate::events;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::{Port, ETH_PROTO_CAPABILITY, ETH_PROTO_OPER, PORT_MAX_MTU};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt::View;
use mlx5_prm::{
    AccessRegisterId, AccessRegisterIn, DtorReg, HostEndiannessReg, McamReg, MciaReg,
    PaosPortStatus, PaosReg, PcamReg, PddrReg, PfccReg, PmlpReg, PmtuReg, PpcntReg, PtysAnStatus,
    PtysConnectorType, PtysReg, QcamReg,
};

/// Register ids, from the spec's enum.
pub(crate) mod id {
    use mlx5_prm::AccessRegisterId as R;
    pub const QCAM: u16 = R::Qcam.raw();
    pub const PMLP: u16 = R::Pmlp.raw();
    pub const PFCC: u16 = R::Pfcc.raw();
    pub const PPLM: u16 = R::Pplm.raw();
    pub const PPCNT: u16 = R::Ppcnt.raw();
    pub const PDDR: u16 = R::Pddr.raw();
    pub const MCIA: u16 = R::Mcia.raw();
    pub const PMTU: u16 = R::Pmtu.raw();
    pub const PTYS: u16 = R::Ptys.raw();
    pub const PAOS: u16 = R::Paos.raw();
    pub const PCAM: u16 = R::Pcam.raw();
    pub const HOST_ENDIANNESS: u16 = R::HostEndianness.raw();
    pub const MCAM: u16 = R::Mcam.raw();
    pub const DTOR: u16 = R::Dtor.raw();
    pub const MNVDA: u16 = R::Mnvda.raw();
    pub const MNVQC: u16 = R::Mnvqc.raw();
    pub const MTUTC: u16 = R::Mtutc.raw();
    pub const MTPPS: u16 = R::Mtpps.raw();
    pub const MTPPSE: u16 = R::Mtppse.raw();
}

/// What the registers themselves hold beyond the port (which has its own state).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RegisterState {
    /// The host endianness register's first byte as last written (0x80: big-endian host).
    pub host_endianness: [u8; 16],
    /// The timeouts DTOR reports; `None`: no DTOR register.
    pub timeouts: Option<Timeouts>,
    /// The non-volatile configuration (MNVDA, MNVQC; `nv_reg.rs`), which the device's resets
    /// carry over.
    pub nv: super::nv_reg::NvStore,
}

/// Offset of the register image in the input and output.
const DATA: usize = 0x10;
/// PTYS proto_mask bit for Ethernet.
const PROTO_ETH: u8 = 0x4;
/// Smallest admin MTU PMTU accepts.
const MIN_MTU: u16 = 64;

/// Size of a register's layout, generated from the spec.
const fn size<V: View<&'static [u8]>>() -> usize {
    V::SIZE
}

/// The size of register `reg` and whether it may be written; `None` for registers the model
/// does not have.
fn describe(reg: u16) -> Option<(usize, bool)> {
    Some(match AccessRegisterId::from_raw(reg.into())? {
        AccessRegisterId::Paos => (size::<PaosReg<&[u8]>>(), true),
        AccessRegisterId::Ptys => (size::<PtysReg<&[u8]>>(), true),
        AccessRegisterId::Pmtu => (size::<PmtuReg<&[u8]>>(), true),
        AccessRegisterId::Pfcc => (size::<PfccReg<&[u8]>>(), true),
        AccessRegisterId::Pplm => (size::<mlx5_prm::PplmReg<&[u8]>>(), true),
        AccessRegisterId::Pmlp => (size::<PmlpReg<&[u8]>>(), false),
        AccessRegisterId::Ppcnt => (size::<PpcntReg<&[u8]>>(), false),
        AccessRegisterId::Pddr => (size::<PddrReg<&[u8]>>(), false),
        AccessRegisterId::Mcia => (size::<MciaReg<&[u8]>>(), false),
        AccessRegisterId::HostEndianness => (size::<HostEndiannessReg<&[u8]>>(), true),
        AccessRegisterId::Pcam => (size::<PcamReg<&[u8]>>(), false),
        AccessRegisterId::Mcam => (size::<McamReg<&[u8]>>(), false),
        AccessRegisterId::Qcam => (size::<QcamReg<&[u8]>>(), false),
        AccessRegisterId::Dtor => (size::<DtorReg<&[u8]>>(), false),
        AccessRegisterId::Mnvda => (size::<mlx5_prm::MnvdaReg<&[u8]>>(), true),
        AccessRegisterId::Mnvqc => (size::<mlx5_prm::MnvqcReg<&[u8]>>(), false),
        AccessRegisterId::Mtutc => (size::<mlx5_prm::MtutcReg<&[u8]>>(), true),
        AccessRegisterId::Mtpps => (size::<mlx5_prm::MtppsReg<&[u8]>>(), true),
        AccessRegisterId::Mtppse => (size::<mlx5_prm::MtppseReg<&[u8]>>(), true),
        _ => return None,
    })
}

/// ACCESS_REGISTER: op_mod 0 writes, 1 reads.
pub(super) fn access(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let reg_id = AccessRegisterIn::new_unchecked(req.input).register_id();
    let (size, writable) = describe(reg_id).ok_or(Fail::bad_param(s::REG_UNKNOWN))?;
    let data = req
        .input
        .get(DATA..DATA + size)
        .ok_or(Fail::inp_len(s::REG_INPUT_SHORT))?;
    let write = req.op_mod == 0;
    ensure(!write || writable, Fail::bad_param(s::REG_READ_ONLY))?;
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
        id::PFCC => port_reg::pfcc(&mut cx.m.port, &mut image, write)?,
        id::PPLM => port_reg::pplm(&mut cx.m.port, &mut image, write)?,
        id::PMLP => port_reg::pmlp(&mut image)?,
        id::PPCNT => ppcnt::ppcnt(&mut cx.m.port, &mut image)?,
        id::PDDR => port_reg::pddr(&cx.m.port, &mut image)?,
        id::MCIA => module::mcia(&cx.m.port, &mut image)?,
        id::HOST_ENDIANNESS => host_endianness(&mut cx.m.registers, &mut image, write),
        id::PCAM => cam::pcam(&mut image)?,
        id::MCAM => cam::mcam(&mut image, &cx.m.cur)?,
        id::QCAM => cam::qcam(&mut image)?,
        id::DTOR => cam::dtor(&mut image, cx.m.registers.timeouts.as_ref())?,
        id::MNVDA => super::nv_reg::mnvda(&mut cx.m.registers.nv, &mut image, write)?,
        id::MNVQC => super::nv_reg::mnvqc(&mut image)?,
        id::MTUTC => super::clock_reg::mtutc(cx.m, &mut image, write)?,
        id::MTPPS => super::clock_reg::mtpps(cx.m, &mut image, write)?,
        id::MTPPSE => super::clock_reg::mtppse(cx.m, &mut image, write)?,
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

/// The host endianness register: a write keeps the image, a read returns it.
fn host_endianness(r: &mut RegisterState, image: &mut [u8], write: bool) {
    let n = image.len().min(r.host_endianness.len());
    if write {
        r.host_endianness[..n].copy_from_slice(&image[..n]);
    } else {
        image[..n].copy_from_slice(&r.host_endianness[..n]);
    }
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
    // An optical module in the cage (module_eeprom.rs).
    r.set_connector_type(PtysConnectorType::Fibre);
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
