//! The bring-up sequence, step by step (the order is in the parent module's doc).

use super::{Control, Hca, HcaConfig, UAR_PAGE};
use crate::backend::{Backend, Mmio};
use crate::eq::EventQueue;
use crate::error::{Error, Result};
use mlx5_prm::cmd::*;
use mlx5_prm::rt::Command;
use mlx5_prm::*;

impl<B: Backend> Hca<B> {
    /// Runs every bring-up step, recording in `done` what [`Hca::down`] must undo.
    pub(super) fn up(&mut self, config: &HcaConfig) -> Result<()> {
        let be = &self.be;
        let ctl = self.ctl.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: this and every bring-up command below (but CREATE_EQ and the pages', whose
        // callers keep their memory) name no host memory; what they make (UAR, PD, transport
        // domain) is recorded in `done` and released by `down`, after everything using it.
        unsafe { ctl.typed::<EnableHca, B>(be, 0, |_| Ok(())) }?;
        ctl.done.enabled = true;

        // SAFETY: as above.
        let issi_out = unsafe { ctl.typed::<QueryIssi, B>(be, 0, |_| Ok(())) }?;
        // ISSI 1 (the current interface) when offered; bit 1 of the supported mask.
        let issi = if issi_out.supported_issi_dw0() & 0x2 != 0 {
            1
        } else {
            0
        };
        if issi != 0 {
            // SAFETY: as above.
            unsafe {
                ctl.typed::<SetIssi, B>(be, 0, |i| {
                    i.set_current_issi(issi);
                    Ok(())
                })
            }?;
        }
        self.info.issi = issi;

        ctl.satisfy(be, QueryPagesOpMod::Boot)?;

        let query = |ctl: &mut Control, op_mod| -> Result<Vec<u8>> {
            // SAFETY: as above.
            let out = unsafe { ctl.typed::<QueryHcaCap, B>(be, op_mod, |_| Ok(())) }?;
            Ok(out.capability().cmd_hca_cap().storage().to_vec())
        };
        let max = query(ctl, QueryHcaCapOpMod::GeneralMax)?;
        let cur = query(ctl, QueryHcaCapOpMod::GeneralCur)?;
        // Adopt the maximum where the driver needs it: the largest CQE compression and
        // command-interface checksum are left as they are; the driver turns checksums off
        // (it does not compute mailbox signatures).
        let mut set = cur.clone();
        {
            let mut caps = CmdHcaCap::new_checked(&mut set[..])?;
            caps.set_cmdif_checksum_raw(0);
            let max = CmdHcaCap::new_checked(&max[..])?;
            caps.set_log_max_qp(max.log_max_qp());
        }
        // SAFETY: as above.
        unsafe {
            ctl.typed::<SetHcaCap, B>(be, SetHcaCapOpMod::General, |i| {
                let mut u = i.capability_mut();
                u.cmd_hca_cap_mut().storage_mut().copy_from_slice(&set);
                Ok(())
            })
        }?;
        self.info.max_caps = max;
        self.info.caps = query(ctl, QueryHcaCapOpMod::GeneralCur)?;

        ctl.satisfy(be, QueryPagesOpMod::Init)?;
        // SAFETY: as above.
        unsafe { ctl.typed::<InitHca, B>(be, 0, |_| Ok(())) }?;
        ctl.done.initialized = true;
        ctl.satisfy(be, QueryPagesOpMod::Regular)?;

        let version = config.driver_version.clone();
        // SAFETY: as above.
        unsafe {
            ctl.typed::<SetDriverVersion, B>(be, 0, |i| {
                let mut bytes = [0u8; 64];
                let v = version.as_bytes();
                bytes[..v.len().min(63)].copy_from_slice(&v[..v.len().min(63)]);
                i.set_driver_version(&bytes);
                Ok(())
            })
        }?;

        // SAFETY: as above.
        self.info.uar = unsafe { ctl.typed::<AllocUar, B>(be, 0, |_| Ok(())) }?.uar();
        ctl.done.uar = true;
        // Every doorbell goes to this page: past the BAR's end they would vanish (a master
        // abort) and every queue would wait for work never started.
        let bar = be.mmio().len();
        if (self.info.uar as usize + 1) * UAR_PAGE > bar {
            return Err(Error::BadDeviceValue {
                command: AllocUar::NAME,
                what: format!(
                    "UAR page {} lies past the end of BAR0 ({bar} bytes)",
                    self.info.uar
                ),
            });
        }

        let cmdq = ctl.cmdq(CreateEq::NAME, CreateEq::OPCODE)?;
        let mut events = vec![
            EventType::PageRequest,
            EventType::PortChange,
            EventType::CqError,
            EventType::Cmd,
        ];
        // PPS events when the device has PPS pins, as Linux subscribes to them.
        if self.info.caps().pps() {
            events.push(EventType::PpsEvent);
        }
        let eq = EventQueue::create(be, cmdq, self.info.uar, config.eq_log_size, &events)?;
        self.info.eqn = eq.eqn();
        ctl.eq = Some(eq);

        // SAFETY: as above.
        self.info.pd = unsafe { ctl.typed::<AllocPd, B>(be, 0, |_| Ok(())) }?.pd();
        ctl.done.pd = true;
        // SAFETY: as above.
        self.info.transport_domain =
            unsafe { ctl.typed::<AllocTransportDomain, B>(be, 0, |_| Ok(())) }?.transport_domain();
        ctl.done.td = true;
        // SAFETY: as above.
        self.info.resd_lkey =
            unsafe { ctl.typed::<QuerySpecialContexts, B>(be, 0, |_| Ok(())) }?.resd_lkey();
        Ok(())
    }
}
