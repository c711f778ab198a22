//! The plain handles every later object refers to: UAR pages, protection domains and
//! transport domains, plus QUERY_SPECIAL_CONTEXTS.

use super::{out, Ctx, Req};
use crate::fail::Outcome;
use crate::model::Model;
use mlx5_prm::cmd;
use mlx5_prm::{
    AllocPdOut, AllocTransportDomainOut, AllocUarOut, DeallocPdIn, DeallocTransportDomainIn,
    DeallocUarIn, QuerySpecialContextsOut,
};

/// The reserved local key QUERY_SPECIAL_CONTEXTS reports. Any fixed value does; this one is
/// outside the mkey indices CREATE_MKEY hands out.
pub const RESD_LKEY: u32 = 0x0000_0700;

/// ALLOC_UAR: the lowest free UAR index from 8 up (page n of BAR 0).
pub(super) fn alloc_uar(cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let uar = cx.m.uars.insert_charged((), u64::MAX, &mut cx.m.storage)?;
    let mut o = out::<cmd::AllocUar>(0);
    AllocUarOut::new_unchecked(&mut o[..]).set_uar(uar);
    Ok(o)
}

/// DEALLOC_UAR: fails while an EQ, CQ, QP or WQ rings through it.
pub(super) fn dealloc_uar(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let uar = DeallocUarIn::new_unchecked(req.input).uar();
    cx.m.uars.remove_charged(uar, &mut cx.m.storage)?;
    cx.m.uar_state.remove(uar);
    Ok(out::<cmd::DeallocUar>(0))
}

/// ALLOC_PD, up to 2^log_max_pd.
pub(super) fn alloc_pd(cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let limit = Model::limit(cx.m.gen().log_max_pd());
    let pd = cx.m.pds.insert_charged((), limit, &mut cx.m.storage)?;
    let mut o = out::<cmd::AllocPd>(0);
    AllocPdOut::new_unchecked(&mut o[..]).set_pd(pd);
    Ok(o)
}

/// DEALLOC_PD: fails while an mkey, QP, WQ or TIS uses it.
pub(super) fn dealloc_pd(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    cx.m.pds.remove_charged(
        DeallocPdIn::new_unchecked(req.input).pd(),
        &mut cx.m.storage,
    )?;
    Ok(out::<cmd::DeallocPd>(0))
}

/// ALLOC_TRANSPORT_DOMAIN, up to 2^log_max_transport_domain.
pub(super) fn alloc_td(cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let limit = Model::limit(cx.m.gen().log_max_transport_domain());
    let td = cx.m.tds.insert_charged((), limit, &mut cx.m.storage)?;
    let mut o = out::<cmd::AllocTransportDomain>(0);
    AllocTransportDomainOut::new_unchecked(&mut o[..]).set_transport_domain(td);
    Ok(o)
}

/// DEALLOC_TRANSPORT_DOMAIN: fails while a TIS or TIR uses it.
pub(super) fn dealloc_td(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let td = DeallocTransportDomainIn::new_unchecked(req.input).transport_domain();
    cx.m.tds.remove_charged(td, &mut cx.m.storage)?;
    Ok(out::<cmd::DeallocTransportDomain>(0))
}

/// QUERY_SPECIAL_CONTEXTS: the reserved lkey (the dump-fill and null keys are not offered).
pub(super) fn query_special_contexts(_cx: &mut Ctx<'_>, _req: &Req<'_>) -> Outcome {
    let mut o = out::<cmd::QuerySpecialContexts>(0);
    QuerySpecialContextsOut::new_unchecked(&mut o[..]).set_resd_lkey(RESD_LKEY);
    Ok(o)
}
