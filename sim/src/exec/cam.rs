//! The read-only registers a driver reads to learn what the device offers: the capability
//! masks PCAM (port registers), MCAM (management registers) and QCAM (QoS registers), and
//! DTOR (the firmware's timeouts).
//!
//! The masks are the model's truth, not a real adapter's: a register's bit is set only if
//! ACCESS_REGISTER serves that register here, and a feature's bit only if the model behaves so.
//! Bit n of a mask group stands for the register at the group's base id + n. Linux reads PCAM
//! group 0, MCAM groups 0, 2 and 3 and QCAM group 0 (feature group 0 each) after INIT_HCA, and
//! decides from them what else to start (firmware tracer, hwmon, firmware reset, PTP clock
//! adjustments): with the model's masks it starts only the clock's adjustments and PPS pins
//! (MTUTC, MTPPS; `clock_reg.rs` sets their bits), and those only with a profile that has
//! the clock, which the Linux guest profiles do not.

use super::reg::id;
use crate::config::Timeouts;
use crate::fail::{ensure, Fail, Outcome};
use crate::syndrome as s;
use mlx5_prm::{DefaultTimeout, DtorReg, McamReg, PcamReg, QcamReg};

/// Base register id of PCAM access register group 0.
const PCAM_BASE: u16 = 0x5000;
/// Base register id of QCAM access register group 0.
const QCAM_BASE: u16 = 0x4000;
/// MCAM access register groups: 0x9000 + 0x80 * group onward, groups 0..=3.
const MCAM_GROUPS: u8 = 4;

/// The port registers the model serves, all in PCAM group 0.
/// (PDDR, 0x5031, is served too but left out: its bit lies in a range field of the layout and
/// Linux reads PDDR without looking at PCAM.)
const PORT_REGISTERS: &[u16] = &[
    id::PMLP,
    id::PMTU,
    id::PTYS,
    id::PAOS,
    id::PFCC,
    id::PPCNT,
    id::PPLM,
    id::PCAM,
];

/// PCAM: feature group 0 and access register group 0 only.
pub(super) fn pcam(image: &mut [u8]) -> Outcome<()> {
    let mut r = PcamReg::new_unchecked(image);
    ensure(
        r.feature_group() == 0 && r.access_reg_group() == 0,
        Fail::bad_param(s::REG_BAD_GROUP),
    )?;
    let bit = |id: u16| u32::from(id - PCAM_BASE);
    let mut mask = r.port_access_reg_cap_mask_mut();
    let mut regs = mask.regs_5000_to_507f_mut();
    let (mut low, mut top) = (0u8, 0u32);
    for &reg in PORT_REGISTERS {
        match bit(reg) {
            b @ 0..=7 => low |= 1 << b,
            8 => regs.set_ppcnt(true),
            35 => regs.set_pplm(true),
            b @ 96..=127 => top |= 1 << (b - 96),
            // Every register of the list has a bit above (a test checks it).
            _ => {}
        }
    }
    regs.set_port_access_reg_cap_mask_07_to_00(low);
    regs.set_port_access_reg_cap_mask_127_to_96(top);
    let mut features = r.feature_cap_mask_mut();
    // PTYS answers with the connector type.
    features
        .enhanced_features_mut()
        .set_ptys_connector_type(true);
    // PPCNT serves the physical layer statistical group (ppcnt.rs).
    features
        .enhanced_features_mut()
        .set_ppcnt_statistical_group(true);
    Ok(())
}

/// MCAM: feature group 0 and access register groups 0..=3. Of the management registers of
/// these ranges that Linux tests for, the model serves the clock's (MTUTC and MTPPS, with the
/// features Linux asks for before it uses them, when the profile has the clock:
/// `clock_reg::mcam`); the rest read 0 (MCAM's
/// own id, 0x907f, falls in bits the layout leaves reserved).
pub(super) fn mcam(image: &mut [u8], caps: &crate::caps::Caps) -> Outcome<()> {
    let mut r = McamReg::new_unchecked(image);
    ensure(
        r.feature_group() == 0 && r.access_reg_group() < MCAM_GROUPS,
        Fail::bad_param(s::REG_BAD_GROUP),
    )?;
    super::clock_reg::mcam(&mut r, caps);
    Ok(())
}

/// QCAM: feature group 0 and access register group 0; of the QoS registers the model serves
/// QCAM itself.
pub(super) fn qcam(image: &mut [u8]) -> Outcome<()> {
    let mut r = QcamReg::new_unchecked(image);
    ensure(
        r.feature_group() == 0 && r.access_reg_group() == 0,
        Fail::bad_param(s::REG_BAD_GROUP),
    )?;
    // Element 0 of the range field is bit 127 of the group.
    let element = 127 - usize::from(id::QCAM - QCAM_BASE);
    let mut mask = r.qos_access_reg_cap_mask_mut();
    let _ = mask
        .reg_cap_mut()
        .set_qcam_access_reg_cap_mask_127_to_20(element, 1);
    Ok(())
}

/// DTOR: the timeouts of the profile, if it has any (otherwise the register does not exist).
pub(super) fn dtor(image: &mut [u8], timeouts: Option<&Timeouts>) -> Outcome<()> {
    let t = timeouts.ok_or(Fail::bad_param(s::REG_UNKNOWN))?;
    let mut r = DtorReg::new_unchecked(image);
    fn set<B: mlx5_prm::rt::BytesMut>(mut f: DefaultTimeout<B>, t: crate::config::Timeout) {
        f.set_to_multiplier(t.unit);
        f.set_to_value(t.value & 0xf_ffff);
    }
    set(r.pcie_toggle_to_mut(), t.pcie_toggle);
    set(r.health_poll_to_mut(), t.health_poll);
    set(r.full_crdump_to_mut(), t.full_crdump);
    set(r.fw_reset_to_mut(), t.fw_reset);
    set(r.flush_on_err_to_mut(), t.flush_on_err);
    set(r.pci_sync_update_to_mut(), t.pci_sync_update);
    set(r.tear_down_to_mut(), t.tear_down);
    set(r.fsm_reactivate_to_mut(), t.fsm_reactivate);
    set(r.reclaim_pages_to_mut(), t.reclaim_pages);
    set(r.reclaim_vfs_pages_to_mut(), t.reclaim_vfs_pages);
    set(r.reset_unload_to_mut(), t.reset_unload);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_registers_fit_the_mask_fields() {
        for &reg in PORT_REGISTERS {
            let b = reg - PCAM_BASE;
            assert!(b <= 8 || b == 35 || (96..=127).contains(&b), "0x{reg:x}");
        }
    }
}
