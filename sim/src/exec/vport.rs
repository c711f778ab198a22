//! The function's own NIC vport: QUERY_VPORT_STATE, QUERY_NIC_VPORT_CONTEXT and
//! MODIFY_NIC_VPORT_CONTEXT (MTU, MAC address, promiscuous modes, RoCE enable, inline mode).
//! Other vports belong to an e-switch manager, which the model is not.

use super::{out, Ctx, Req};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::PORT_MAX_MTU;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt::Bytes as _;
use mlx5_prm::{
    ModifyNicVportContextIn, ModifyNicVportFieldSelect, QueryNicVportContextIn,
    QueryNicVportContextOut, QueryVportStateIn, QueryVportStateOut, VportAdminState,
    VportOperState,
};

/// QUERY_VPORT_STATE: the vNIC vport (op_mod 0) or the uplink (2).
pub(super) fn query_state(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryVportStateIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let mut o = out::<cmd::QueryVportState>(0);
    let mut v = QueryVportStateOut::new_unchecked(&mut o[..]);
    v.set_admin_state(VportAdminState::Auto);
    v.set_state(if cx.m.port.oper_up() {
        VportOperState::Up
    } else {
        VportOperState::Down
    });
    Ok(o)
}

/// QUERY_NIC_VPORT_CONTEXT: MTU, MAC address, GUIDs, promiscuous modes, RoCE and inline mode;
/// the address lists are empty.
pub(super) fn query_context(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryNicVportContextIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let p = &cx.m.port;
    let mut o = out::<cmd::QueryNicVportContext>(0);
    let mut v = QueryNicVportContextOut::new_unchecked(&mut o[..]);
    let mut c = v.nic_vport_context_mut();
    c.set_min_wqe_inline_mode_raw(p.min_wqe_inline_mode);
    c.set_roce_en(p.roce_en);
    c.set_disable_uc_local_lb(p.disable_local_lb.0);
    c.set_disable_mc_local_lb(p.disable_local_lb.1);
    c.set_mtu(p.vport_mtu);
    c.set_system_image_guid(p.node_guid);
    c.set_port_guid(p.port_guid);
    c.set_node_guid(p.node_guid);
    c.set_promisc_uc(p.promisc.0);
    c.set_promisc_mc(p.promisc.1);
    c.set_promisc_all(p.promisc.2);
    c.set_allowed_list_type_raw(input.allowed_list_type_raw());
    let mut mac = c.permanent_address_mut();
    mac.set_mac_addr_47_32((p.mac >> 32) as u16);
    mac.set_mac_addr_31_0(p.mac as u32);
    Ok(o)
}

/// Every field_select bit the layout names.
fn known_select_bits() -> u32 {
    ModifyNicVportFieldSelect::FIELDS
        .iter()
        .fold(0, |m, f| m | 1 << (31 - f.bit_offset))
}

/// MODIFY_NIC_VPORT_CONTEXT: applies the parts field_select names.
pub(super) fn modify_context(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ModifyNicVportContextIn::new_unchecked(req.input);
    ensure(!input.other_vport(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let select = input.field_select();
    let raw = select.storage().read_be32(0);
    ensure(
        raw & !known_select_bits() == 0,
        Fail::bad_param(s::VPORT_BAD_FIELD_SELECT),
    )?;
    let c = input.nic_vport_context();
    if select.roce_en() && c.roce_en() {
        ensure(
            cx.m.gen().roce(),
            Fail::bad_param(s::VPORT_ROCE_UNSUPPORTED),
        )?;
    }
    if select.mtu() {
        ensure(
            c.mtu() <= PORT_MAX_MTU,
            Fail::bad_param(s::VPORT_MTU_TOO_LARGE),
        )?;
    }
    let p = &mut cx.m.port;
    if select.roce_en() {
        p.roce_en = c.roce_en();
    }
    if select.mtu() {
        p.vport_mtu = c.mtu();
    }
    if select.min_inline() {
        p.min_wqe_inline_mode = c.min_wqe_inline_mode_raw();
    }
    if select.promisc() {
        p.promisc = (c.promisc_uc(), c.promisc_mc(), c.promisc_all());
    }
    if select.permanent_address() {
        let mac = c.permanent_address();
        p.mac = (u64::from(mac.mac_addr_47_32()) << 32) | u64::from(mac.mac_addr_31_0());
    }
    if select.node_guid() {
        p.node_guid = c.node_guid();
    }
    if select.port_guid() {
        p.port_guid = c.port_guid();
    }
    if select.disable_uc_local_lb() {
        p.disable_local_lb.0 = c.disable_uc_local_lb();
    }
    if select.disable_mc_local_lb() {
        p.disable_local_lb.1 = c.disable_mc_local_lb();
    }
    Ok(out::<cmd::ModifyNicVportContext>(0))
}
