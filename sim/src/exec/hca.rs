//! The function's life cycle: ENABLE_HCA, ISSI negotiation, QUERY_ADAPTER, INIT_HCA,
//! TEARDOWN_HCA, DISABLE_HCA and SET_DRIVER_VERSION.

use super::{out, Ctx, Req};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::{Hca, Model};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{
    DisableHcaIn, EnableHcaIn, QueryAdapterOut, QueryIssiOut, SetDriverVersionIn, SetIssiIn,
    TeardownHcaIn, TeardownHcaProfile,
};

/// ISSIs the model speaks: 0 and 1 (bit n of supported_issi_dw0 = ISSI n).
const SUPPORTED_ISSI: u32 = 0b11;
/// The IEEE OUI QUERY_ADAPTER reports (Mellanox).
const IEEE_VENDOR_ID: u32 = 0x00_02c9;
/// The vendor id of the vendor-specific data (the PCI vendor id).
const VSD_VENDOR_ID: u16 = 0x15b3;
/// The board's PSID, which names this model rather than a real board.
pub const PSID: &[u8; 16] = b"MLX5SIM_CX5_0001";

/// ENABLE_HCA: function 0 (or the embedded CPU's) only, once.
pub(super) fn enable(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = EnableHcaIn::new_unchecked(req.input);
    ensure(
        input.function_id() == 0,
        Fail::bad_param(s::HCA_BAD_FUNCTION),
    )?;
    ensure(
        cx.m.hca == Hca::Disabled,
        Fail::bad_sys_state(s::ENABLE_ALREADY_ENABLED),
    )?;
    cx.m.hca = Hca::Enabled;
    cx.m.pages.reset_demand();
    Ok(out::<cmd::EnableHca>(0))
}

/// DISABLE_HCA: only an enabled function that is not initialized (TEARDOWN_HCA first).
pub(super) fn disable(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = DisableHcaIn::new_unchecked(req.input);
    ensure(
        input.function_id() == 0,
        Fail::bad_param(s::HCA_BAD_FUNCTION),
    )?;
    match cx.m.hca {
        Hca::Disabled => Err(Fail::bad_sys_state(s::DISABLE_NOT_ENABLED)),
        Hca::Initialized => Err(Fail::bad_sys_state(s::DISABLE_WHILE_INITIALIZED)),
        Hca::Enabled => {
            cx.m.reset_function();
            Ok(out::<cmd::DisableHca>(0))
        }
    }
}

/// QUERY_ISSI: the ISSI in force and the supported set.
pub(super) fn query_issi(cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let mut o = out::<cmd::QueryIssi>(0);
    let mut v = QueryIssiOut::new_unchecked(&mut o[..]);
    v.set_current_issi(cx.m.issi);
    v.set_supported_issi_dw0(SUPPORTED_ISSI);
    Ok(o)
}

/// SET_ISSI: 0 or 1, before INIT_HCA.
pub(super) fn set_issi(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let issi = SetIssiIn::new_unchecked(req.input).current_issi();
    ensure(
        cx.m.hca != Hca::Initialized,
        Fail::bad_sys_state(s::ISSI_AFTER_INIT),
    )?;
    ensure(
        issi < 32 && SUPPORTED_ISSI >> issi & 1 == 1,
        Fail::bad_param(s::ISSI_UNSUPPORTED),
    )?;
    cx.m.issi = issi;
    Ok(out::<cmd::SetIssi>(0))
}

/// QUERY_ADAPTER: vendor ids and the PSID.
pub(super) fn query_adapter(_cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let mut o = out::<cmd::QueryAdapter>(0);
    let mut v = QueryAdapterOut::new_unchecked(&mut o[..]);
    let mut block = v.query_adapter_struct_mut();
    block.set_ieee_vendor_id(IEEE_VENDOR_ID);
    block.set_vsd_vendor_id(VSD_VENDOR_ID);
    block.set_vsd_contd_psid(PSID);
    Ok(o)
}

/// INIT_HCA: once, after the boot and init pages were given.
pub(super) fn init(cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    ensure(
        cx.m.hca == Hca::Enabled,
        Fail::bad_sys_state(s::INIT_ALREADY_INITIALIZED),
    )?;
    ensure(
        cx.m.pages.ready_for_init(),
        Fail::bad_sys_state(s::INIT_PAGES_MISSING),
    )?;
    cx.m.hca = Hca::Initialized;
    Ok(out::<cmd::InitHca>(0))
}

/// TEARDOWN_HCA: graceful, or force / prepare-fast when the capability allows. Graceful and
/// force drop every object still alive (as firmware cleans up after a driver that did not),
/// so a forced teardown, which Linux polls for with the EQs still in place, raises no event;
/// held pages stay held until the driver takes them back. Prepare-fast only arms the fast
/// path: the command completes as usual (by event, in Linux's case), and the function is torn
/// down when the driver then sets the NIC interface to disabled ([`nic_interface_disabled`]).
/// A graceful or forced teardown after it ends the function the other way, so the prepared
/// fast teardown is forgotten: the interface set to disabled later, once the driver has
/// started the function again, must not drop that function's objects.
pub(super) fn teardown(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let profile = TeardownHcaIn::new_unchecked(req.input).profile();
    ensure(
        cx.m.hca == Hca::Initialized,
        Fail::bad_sys_state(s::TEARDOWN_NOT_INITIALIZED),
    )?;
    let gen = cx.m.gen();
    match profile {
        Ok(TeardownHcaProfile::GracefulClose) => {}
        Ok(TeardownHcaProfile::ForceClose) => ensure(
            gen.force_teardown(),
            Fail::bad_param(s::TEARDOWN_PROFILE_UNSUPPORTED),
        )?,
        Ok(TeardownHcaProfile::PrepareFastTeardown) => {
            ensure(
                gen.fast_teardown(),
                Fail::bad_param(s::TEARDOWN_PROFILE_UNSUPPORTED),
            )?;
            cx.m.fast_teardown_prepared = true;
            return Ok(out::<cmd::TeardownHca>(0));
        }
        Err(_) => return Err(Fail::bad_param(s::TEARDOWN_BAD_PROFILE)),
    }
    cx.m.drop_objects();
    cx.m.fast_teardown_prepared = false;
    cx.m.hca = Hca::Enabled;
    Ok(out::<cmd::TeardownHca>(0))
}

/// The driver set the NIC interface to disabled: after a prepare-fast TEARDOWN_HCA, the
/// function is torn down at once (objects dropped, back to disabled; held pages stay held
/// until a reset). Otherwise nothing changes beyond the register.
pub(crate) fn nic_interface_disabled(m: &mut Model) {
    if std::mem::take(&mut m.fast_teardown_prepared) {
        m.drop_objects();
        m.hca = Hca::Disabled;
    }
}

/// SET_DRIVER_VERSION: kept for inspection, when the capability allows it.
pub(super) fn set_driver_version(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    ensure(
        cx.m.gen().driver_version(),
        Fail::bad_op(s::DRIVER_VERSION_UNSUPPORTED),
    )?;
    cx.m.driver_version = Some(SetDriverVersionIn::new_unchecked(req.input).driver_version());
    Ok(out::<cmd::SetDriverVersion>(0))
}
