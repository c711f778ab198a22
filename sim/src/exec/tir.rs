//! Transport objects of the Ethernet path: CREATE/DESTROY_TIS, _TIR and _RQT, with their
//! references (transport domain, PD, RQs, RQT) checked and counted.

use super::{out, Ctx, Req};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{
    CreateRqtIn, CreateRqtOut, CreateTirIn, CreateTirOut, CreateTisIn, CreateTisOut, DestroyRqtIn,
    DestroyTirIn, DestroyTisIn, Rqtc, TircDispType,
};

/// Byte offset of the RQT context in CREATE_RQT's input.
const RQTC: usize = CreateRqtIn::RQT_CONTEXT.bit_offset / 8;

/// One TIS.
#[derive(Debug, Clone)]
pub(crate) struct Tis {
    pub td: u32,
    pub pd: Option<u32>,
}

/// One TIR: where it sends packets.
#[derive(Debug, Clone)]
pub(crate) struct Tir {
    pub td: u32,
    pub target: TirTarget,
}

/// A TIR's destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TirTarget {
    Rq(u32),
    Rqt(u32),
}

/// One RQ table.
#[derive(Debug, Clone)]
pub(crate) struct Rqt {
    pub rqs: Vec<u32>,
}

/// CREATE_TIS: names a transport domain (and optionally a PD).
pub(super) fn create_tis(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateTisIn::new_unchecked(req.input);
    let ctx = input.ctx();
    let td = ctx.transport_domain();
    cx.m.tds.check(td, s::TIS_TD_UNKNOWN)?;
    let pd = (ctx.pd() != 0).then(|| ctx.pd());
    if let Some(pd) = pd {
        cx.m.pds.check(pd, s::TIS_PD_UNKNOWN)?;
    }
    let limit = Model::limit(cx.m.gen().log_max_tis());
    let tisn = cx.m.tises.insert(Tis { td, pd }, limit)?;
    cx.m.tds.hold(td);
    if let Some(pd) = pd {
        cx.m.pds.hold(pd);
    }
    let mut o = out::<cmd::CreateTis>(0);
    CreateTisOut::new_unchecked(&mut o[..]).set_tisn(tisn);
    Ok(o)
}

/// DESTROY_TIS: fails while an SQ sends through it.
pub(super) fn destroy_tis(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let tis =
        cx.m.tises
            .remove(DestroyTisIn::new_unchecked(req.input).tisn())?;
    cx.m.tds.release(tis.td);
    if let Some(pd) = tis.pd {
        cx.m.pds.release(pd);
    }
    Ok(out::<cmd::DestroyTis>(0))
}

/// CREATE_TIR: direct to one RQ or indirect through an RQT.
pub(super) fn create_tir(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateTirIn::new_unchecked(req.input);
    let ctx = input.ctx();
    let td = ctx.transport_domain();
    cx.m.tds.check(td, s::TIR_TD_UNKNOWN)?;
    ensure(
        ctx.rx_hash_fn().is_ok(),
        Fail::bad_param(s::TIR_BAD_DISPATCH),
    )?;
    let target = match ctx.disp_type() {
        Ok(TircDispType::Direct) => TirTarget::Rq(ctx.inline_rqn()),
        Ok(TircDispType::Indirect) => TirTarget::Rqt(ctx.indirect_table()),
        Err(_) => return Err(Fail::bad_param(s::TIR_BAD_DISPATCH)),
    };
    match target {
        TirTarget::Rq(rqn) => cx.m.rqs.check(rqn, s::TIR_RQ_UNKNOWN)?,
        TirTarget::Rqt(rqtn) => cx.m.rqts.check(rqtn, s::TIR_RQT_UNKNOWN)?,
    }
    let limit = Model::limit(cx.m.gen().log_max_tir());
    let tirn = cx.m.tirs.insert(Tir { td, target }, limit)?;
    cx.m.tds.hold(td);
    match target {
        TirTarget::Rq(rqn) => cx.m.rqs.hold(rqn),
        TirTarget::Rqt(rqtn) => cx.m.rqts.hold(rqtn),
    }
    let mut o = out::<cmd::CreateTir>(0);
    CreateTirOut::new_unchecked(&mut o[..]).set_tirn(tirn);
    Ok(o)
}

/// DESTROY_TIR: fails while a flow table entry forwards to it.
pub(super) fn destroy_tir(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let tir =
        cx.m.tirs
            .remove(DestroyTirIn::new_unchecked(req.input).tirn())?;
    cx.m.tds.release(tir.td);
    match tir.target {
        TirTarget::Rq(rqn) => cx.m.rqs.release(rqn),
        TirTarget::Rqt(rqtn) => cx.m.rqts.release(rqtn),
    }
    Ok(out::<cmd::DestroyTir>(0))
}

/// CREATE_RQT: rqt_actual_size existing RQs (repeats allowed), at most rqt_max_size, which is
/// at most 2^log_max_rqt_size.
pub(super) fn create_rqt(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    // The RQ list trails the context, past the fixed part the input view's `rqt_context`
    // covers, so the context is viewed over the rest of the input.
    let ctx = Rqtc::new_unchecked(&req.input[RQTC..]);
    let (max, actual) = (ctx.rqt_max_size(), ctx.rqt_actual_size());
    let cap = Model::limit(cx.m.gen().log_max_rqt_size());
    ensure(
        actual > 0 && actual <= max && u64::from(max) <= cap,
        Fail::bad_param(s::RQT_BAD_SIZE),
    )?;
    ensure(
        ctx.rq_num_len() >= actual.into(),
        Fail::inp_len(s::RQT_LIST_SHORT),
    )?;
    let rqs: Vec<u32> = (0..usize::from(actual))
        .filter_map(|i| ctx.rq_num(i).map(|e| e.rq_num()))
        .collect();
    for &rqn in &rqs {
        cx.m.rqs.check(rqn, s::RQT_RQ_UNKNOWN)?;
    }
    let limit = Model::limit(cx.m.gen().log_max_rqt());
    let rqtn = cx.m.rqts.insert(Rqt { rqs: rqs.clone() }, limit)?;
    for rqn in rqs {
        cx.m.rqs.hold(rqn);
    }
    let mut o = out::<cmd::CreateRqt>(0);
    CreateRqtOut::new_unchecked(&mut o[..]).set_rqtn(rqtn);
    Ok(o)
}

/// DESTROY_RQT: fails while a TIR spreads over it.
pub(super) fn destroy_rqt(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let rqt =
        cx.m.rqts
            .remove(DestroyRqtIn::new_unchecked(req.input).rqtn())?;
    for rqn in rqt.rqs {
        cx.m.rqs.release(rqn);
    }
    Ok(out::<cmd::DestroyRqt>(0))
}
