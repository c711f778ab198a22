//! QUERY_HCA_CAP and SET_HCA_CAP over the capability pages of the profile (general, Ethernet
//! offloads, atomic, RoCE).
//!
//! op_mod carries the capability type in bits 15:1; for a query, bit 0 picks the current (1)
//! or maximum (0) values; for a set it must be 0. SET_HCA_CAP takes a whole page, applies the
//! fields the profile lists as settable (each checked against its maximum) and ignores the
//! rest, as firmware ignores read-only capability bits: Linux sends the current page with its
//! changes for the general and RoCE types, and a page that is zero but for its one change for
//! the atomic type.

use super::{out, Ctx, Req};
use crate::caps::Settable;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Hca;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt::View;
use mlx5_prm::{CmdHcaCap, HcaCapType, QueryHcaCapIn, QueryHcaCapOut, SetHcaCapIn};

/// Offset of the capability page in the query output and the set input.
const PAGE: usize = 0x10;

/// The capability type an op_mod names.
fn cap_type(op_mod: u16) -> Option<HcaCapType> {
    HcaCapType::from_raw((op_mod >> 1).into())
}

/// QUERY_HCA_CAP: one page, maximum or current.
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = QueryHcaCapIn::new_unchecked(req.input);
    ensure(!input.other_function(), Fail::bad_param(s::OTHER_FUNCTION))?;
    let ty = cap_type(req.op_mod).ok_or(Fail::bad_param(s::CAP_TYPE_UNSUPPORTED))?;
    let current = req.op_mod & 1 == 1;
    let page = if current {
        cx.m.cur.pages(ty).map(|(_, cur)| cur)
    } else {
        cx.m.profile.pages(ty).map(|(max, _)| max)
    }
    .ok_or(Fail::bad_param(s::CAP_TYPE_UNSUPPORTED))?;
    let mut o = out::<cmd::QueryHcaCap>(0);
    o[PAGE..PAGE + page.len()].copy_from_slice(page);
    debug_assert_eq!(o.len(), <QueryHcaCapOut<&[u8]> as View<&[u8]>>::SIZE);
    Ok(o)
}

/// Checks every settable field of `new` against `max`, then copies them into `cur`.
fn apply(settable: &[Settable], new: &[u8], max: &[u8], cur: &mut [u8]) -> Outcome<()> {
    for f in settable {
        ensure(
            f.allows(f.get(new), max),
            Fail::bad_param(s::SET_CAP_ABOVE_MAX),
        )?;
    }
    for f in settable {
        f.set(cur, f.get(new));
    }
    Ok(())
}

/// SET_HCA_CAP: the general, atomic or RoCE page, before INIT_HCA.
pub(super) fn set(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = SetHcaCapIn::new_unchecked(req.input);
    ensure(!input.other_function(), Fail::bad_param(s::OTHER_FUNCTION))?;
    ensure(req.op_mod & 1 == 0, Fail::bad_param(s::SET_CAP_CURRENT_BIT))?;
    ensure(
        cx.m.hca != Hca::Initialized,
        Fail::bad_sys_state(s::SET_CAP_AFTER_INIT),
    )?;
    let new = &req.input[PAGE..PAGE + CmdHcaCap::SIZE];
    let (settable, max, cur) = cap_type(req.op_mod)
        .and_then(|ty| cx.m.cur.settable(ty))
        .ok_or(Fail::bad_param(s::SET_CAP_TYPE_UNSUPPORTED))?;
    apply(settable, new, max, cur)?;
    Ok(out::<cmd::SetHcaCap>(0))
}
