//! The port registers behind `ethtool`: PFCC (pause settings), PPLM (forward error
//! correction), PMLP (the module cage of the port, for MCIA) and PDDR (why the link is down). PPCNT, the counters behind `ethtool -S`,
//! is in `ppcnt.rs`.

use crate::fail::{ensure, Fail, Outcome};
use crate::model::Port;
use crate::syndrome as s;
use mlx5_prm::{PddrPageSelect, PddrReg, PfccReg, PmlpReg, PplmReg};

/// The module (cage) number of the port's lanes: MCIA's module field.
pub(crate) const MODULE: u8 = 0;
/// Lanes of the port (a QSFP28 cage: four).
const LANES: u8 = 4;

/// PFCC: global pause in each direction may be written; priority flow control stays off
/// (the model's port has one priority).
pub(super) fn pfcc(port: &mut Port, image: &mut [u8], write: bool) -> Outcome<()> {
    let r = PfccReg::new_unchecked(&*image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    if write {
        if !r.pptx_mask_n() {
            port.pause.0 = r.pptx();
        }
        if !r.pprx_mask_n() {
            port.pause.1 = r.pprx();
        }
    }
    let local_port = r.local_port();
    image.fill(0);
    let mut r = PfccReg::new_unchecked(image);
    r.set_local_port(local_port);
    r.set_pptx(port.pause.0);
    r.set_pprx(port.pause.1);
    Ok(())
}

/// PMLP: the port uses all four lanes of module [`MODULE`], lane i on the module's lane i.
pub(super) fn pmlp(image: &mut [u8]) -> Outcome<()> {
    let mut r = PmlpReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    r.set_rxtx(false);
    r.set_width(LANES);
    for lane in 0..LANES {
        let mut m = match lane {
            0 => r.lane0_module_mapping_mut(),
            1 => r.lane1_module_mapping_mut(),
            2 => r.lane2_module_mapping_mut(),
            _ => r.lane3_module_mapping_mut(),
        };
        m.set_module(MODULE);
        m.set_rx_lane(lane);
        m.set_tx_lane(lane);
    }
    Ok(())
}

/// PDDR's status opcode for "no cable": the link is down because nothing is connected.
const NO_CABLE: u16 = 1024;

/// PDDR: the troubleshooting page of the link monitor group. A port the driver took down has
/// no fault to report (status opcode 0); a link that went down with the port up (the cable or
/// peer gone: `Device::raise_port_change`, link faults) reports no cable.
pub(super) fn pddr(port: &Port, image: &mut [u8]) -> Outcome<()> {
    let mut r = PddrReg::new_unchecked(image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    ensure(
        r.page_select() == Ok(PddrPageSelect::TroubleshootingInfo),
        Fail::bad_param(s::PDDR_BAD_PAGE),
    )?;
    let mut data = r.page_data_mut();
    let mut page = data.pddr_troubleshooting_page_mut();
    ensure(page.group_opcode() == 0, Fail::bad_param(s::PDDR_BAD_PAGE))?;
    // Group 0 asked (checked above): an opcode and an empty message.
    page.storage_mut().fill(0);
    if port.admin_up && !port.link_up {
        page.status_opcode_mut()
            .pddr_monitor_opcode_mut()
            .set_monitor_opcode(NO_CABLE);
    }
    Ok(())
}

/// FEC mode bits of PPLM's masks (the spec's pplm_fec_mode: bit n is mode n).
const NO_FEC: u16 = 1 << 0;
const FIRECODE: u16 = 1 << 1;
const RS_528_514: u16 = 1 << 2;

/// The FEC modes the port can use per speed group of PPLM: 10/40 Gb/s (none or FireCode,
/// Clause 74), 25 and 50 Gb/s (none, FireCode or RS(528,514)), 100 Gb/s over four lanes
/// (none or RS(528,514), Clause 91).
const FEC_CAPS: [u16; 4] = [
    NO_FEC | FIRECODE,
    NO_FEC | FIRECODE | RS_528_514,
    NO_FEC | FIRECODE | RS_528_514,
    NO_FEC | RS_528_514,
];

/// The speed group (index into [`FEC_CAPS`]) the link runs in, from its PTYS mode bit.
fn fec_group(port: &Port) -> Option<usize> {
    let mode = crate::exec::ppcnt::oper_mode(port)?;
    Some(match mode {
        6 | 12 | 13 => 0,
        27 | 29 => 1,
        18 | 30 => 2,
        _ => 3,
    })
}

/// PPLM: the FEC capability and choice per speed group, and the FEC active. A choice must be
/// 0 (the firmware picks: RS-FEC where the group has it, else none) or one mode of the
/// group's capability. The active mode is the choice of the group the link runs in; none
/// while the link is down.
pub(super) fn pplm(port: &mut Port, image: &mut [u8], write: bool) -> Outcome<()> {
    let r = PplmReg::new_unchecked(&*image);
    ensure(r.local_port() == 1, Fail::bad_param(s::REG_BAD_PORT))?;
    if write {
        let admin = [
            u16::from(r.fec_override_admin_10g_40g()),
            u16::from(r.fec_override_admin_25g()),
            u16::from(r.fec_override_admin_50g()),
            u16::from(r.fec_override_admin_100g()),
        ];
        for (a, cap) in admin.iter().zip(FEC_CAPS) {
            ensure(
                *a == 0 || (a.count_ones() == 1 && a & !cap == 0),
                Fail::bad_param(s::PPLM_BAD_FEC),
            )?;
        }
        port.fec_admin = admin;
    }
    let local_port = r.local_port();
    image.fill(0);
    let mut r = PplmReg::new_unchecked(image);
    r.set_local_port(local_port);
    // Four bits per group in the register; the model's masks all fit them.
    r.set_fec_override_cap_10g_40g(FEC_CAPS[0] as u8);
    r.set_fec_override_cap_25g(FEC_CAPS[1] as u8);
    r.set_fec_override_cap_50g(FEC_CAPS[2] as u8);
    r.set_fec_override_cap_100g(FEC_CAPS[3] as u8);
    r.set_fec_override_admin_10g_40g(port.fec_admin[0] as u8);
    r.set_fec_override_admin_25g(port.fec_admin[1] as u8);
    r.set_fec_override_admin_50g(port.fec_admin[2] as u8);
    r.set_fec_override_admin_100g(port.fec_admin[3] as u8);
    let active = fec_group(port).map_or(0, |g| match port.fec_admin[g] {
        0 if FEC_CAPS[g] & RS_528_514 != 0 => RS_528_514,
        0 => NO_FEC,
        chosen => chosen,
    });
    r.set_fec_mode_active(u32::from(active));
    Ok(())
}
