//! Transport objects of the Ethernet path: CREATE/DESTROY_TIS, CREATE/MODIFY/DESTROY_TIR and
//! _RQT, with their references (transport domain, PD, RQs, RQT) checked and counted.

use super::{out, Ctx, Req};
use crate::budget::Charged;
use crate::datapath::rss::{self, HashConfig};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{
    CreateRqtIn, CreateRqtOut, CreateTirIn, CreateTirOut, CreateTisIn, CreateTisOut, DestroyRqtIn,
    DestroyTirIn, DestroyTisIn, ModifyRqtIn, ModifyTirIn, Rqtc, Tirc, TircDispType, TircRxHashFn,
};

/// Byte offset of the RQT context in CREATE_RQT's and MODIFY_RQT's inputs.
const RQTC: usize = CreateRqtIn::RQT_CONTEXT.bit_offset / 8;
const MODIFY_RQTC: usize = ModifyRqtIn::CTX.bit_offset / 8;

/// One TIS.
#[derive(Debug, Clone)]
pub(crate) struct Tis {
    pub td: u32,
    pub pd: Option<u32>,
}

/// One TIR: where it sends packets, and the context fields MODIFY_TIR may change.
#[derive(Debug, Clone)]
pub(crate) struct Tir {
    pub td: u32,
    pub target: TirTarget,
    /// self_lb_block: bit 0 drops unicast, bit 1 multicast sent from the same domain.
    pub self_lb_block: u8,
    /// The receive hash (rx_hash_fn, symmetric, key, outer field selector): what
    /// [`rss`](crate::datapath::rss) computes for the frames steered here.
    pub hash: HashConfig,
}

/// The hash settings of a TIR context (whose rx_hash_fn the caller checked).
fn hash_config(ctx: &Tirc<&[u8]>) -> HashConfig {
    let mut key = [0u8; rss::KEY_LEN];
    for (k, word) in key.chunks_mut(4).zip(ctx.rx_hash_toeplitz_key_iter()) {
        k.copy_from_slice(&word.to_be_bytes());
    }
    let select = ctx.rx_hash_field_selector_outer();
    HashConfig {
        func: ctx.rx_hash_fn().unwrap_or(TircRxHashFn::None),
        symmetric: ctx.rx_hash_symmetric(),
        key,
        ipv6: select.l3_prot_type(),
        udp: select.l4_prot_type(),
        fields: select.selected_fields(),
    }
}

/// The model has no LRO (lro_cap 0): a context asking for packet merging is refused.
fn check_no_lro(ctx: &Tirc<&[u8]>) -> Outcome<()> {
    ensure(ctx.packet_merge_mask() == 0, Fail::bad_param(s::TIR_NO_LRO))
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
    /// rqt_max_size at creation: MODIFY_RQT's lists may not be longer.
    pub max: u16,
}

/// TISs and TIRs are of fixed size.
impl Charged for Tis {}
impl Charged for Tir {}

impl Charged for Rqt {
    /// The entries: up to 2^log_max_rqt_size of them, the guest's choice.
    fn charged(&self) -> u64 {
        list_bytes(&self.rqs)
    }
}

/// Bytes of an RQT's entry list.
fn list_bytes(rqs: &[u32]) -> u64 {
    std::mem::size_of_val(rqs) as u64
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
    let tisn =
        cx.m.tises
            .insert_charged(Tis { td, pd }, limit, &mut cx.m.storage)?;
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
    let tis = cx.m.tises.remove_charged(
        DestroyTisIn::new_unchecked(req.input).tisn(),
        &mut cx.m.storage,
    )?;
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
    check_no_lro(&ctx)?;
    let tir = Tir {
        td,
        target,
        self_lb_block: ctx.self_lb_block(),
        hash: hash_config(&ctx),
    };
    let limit = Model::limit(cx.m.gen().log_max_tir());
    let tirn = cx.m.tirs.insert_charged(tir, limit, &mut cx.m.storage)?;
    cx.m.tds.hold(td);
    match target {
        TirTarget::Rq(rqn) => cx.m.rqs.hold(rqn),
        TirTarget::Rqt(rqtn) => cx.m.rqts.hold(rqtn),
    }
    let mut o = out::<cmd::CreateTir>(0);
    CreateTirOut::new_unchecked(&mut o[..]).set_tirn(tirn);
    Ok(o)
}

/// MODIFY_TIR: the fields bitmask selects (loopback filter, hash); the dispatch, its RQ or
/// RQT and the transport domain stay as created.
pub(super) fn modify_tir(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ModifyTirIn::new_unchecked(req.input);
    let (bits, ctx) = (input.bitmask(), input.ctx());
    ensure(
        !bits.hash() || ctx.rx_hash_fn().is_ok(),
        Fail::bad_param(s::TIR_BAD_DISPATCH),
    )?;
    if bits.packet_merge() {
        check_no_lro(&ctx)?;
    }
    let tir = cx.m.tirs.get_mut(input.tirn())?;
    if bits.self_lb_en() {
        tir.self_lb_block = ctx.self_lb_block();
    }
    if bits.hash() {
        tir.hash = hash_config(&ctx);
    }
    Ok(out::<cmd::ModifyTir>(0))
}

/// DESTROY_TIR: fails while a flow table entry forwards to it.
pub(super) fn destroy_tir(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let tir = cx.m.tirs.remove_charged(
        DestroyTirIn::new_unchecked(req.input).tirn(),
        &mut cx.m.storage,
    )?;
    cx.m.tds.release(tir.td);
    match tir.target {
        TirTarget::Rq(rqn) => cx.m.rqs.release(rqn),
        TirTarget::Rqt(rqtn) => cx.m.rqts.release(rqtn),
    }
    Ok(out::<cmd::DestroyTir>(0))
}

/// The RQ list of an RQT context at `at` in `input` (the list trails the context, past the
/// fixed part the input view covers, so the context is viewed over the rest of the input):
/// rqt_actual_size existing RQs (repeats allowed), at most `max`. Each RQ must be able to
/// take a reference per entry (as if every entry named it) without its count saturating.
fn rq_list(cx: &Ctx<'_>, input: &[u8], at: usize, max: u16) -> Outcome<Vec<u32>> {
    let ctx = Rqtc::new_unchecked(input.get(at..).unwrap_or(&[]));
    let actual = ctx.rqt_actual_size();
    ensure(
        actual > 0 && actual <= max,
        Fail::bad_param(s::RQT_BAD_SIZE),
    )?;
    ensure(
        ctx.rq_num_len() >= actual.into(),
        Fail::inp_len(s::RQT_LIST_SHORT),
    )?;
    // Exactly `actual` slots: the list takes what the budget is charged for.
    let mut rqs = Vec::with_capacity(usize::from(actual));
    rqs.extend((0..usize::from(actual)).filter_map(|i| ctx.rq_num(i).map(|e| e.rq_num())));
    for &rqn in &rqs {
        cx.m.rqs.check(rqn, s::RQT_RQ_UNKNOWN)?;
        ensure(
            cx.m.rqs.can_hold(rqn, actual.into()),
            Fail::lim(s::RQT_RQ_REFS),
        )?;
    }
    Ok(rqs)
}

/// CREATE_RQT: rqt_max_size at most 2^log_max_rqt_size, and the list of [`rq_list`].
pub(super) fn create_rqt(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let max = Rqtc::new_unchecked(&req.input[RQTC..]).rqt_max_size();
    let cap = Model::limit(cx.m.gen().log_max_rqt_size());
    ensure(u64::from(max) <= cap, Fail::bad_param(s::RQT_BAD_SIZE))?;
    let rqs = rq_list(cx, req.input, RQTC, max)?;
    let limit = Model::limit(cx.m.gen().log_max_rqt());
    let rqt = Rqt { rqs, max };
    let rqtn = cx.m.rqts.insert_charged(rqt, limit, &mut cx.m.storage)?;
    for &rqn in &cx.m.rqts.get(rqtn)?.rqs {
        cx.m.rqs.hold(rqn);
    }
    let mut o = out::<cmd::CreateRqt>(0);
    CreateRqtOut::new_unchecked(&mut o[..]).set_rqtn(rqtn);
    Ok(o)
}

/// MODIFY_RQT with bitmask rqn_list: a new list (as [`rq_list`], at most the table's
/// rqt_max_size); the RQs of the old list are released, those of the new held.
pub(super) fn modify_rqt(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ModifyRqtIn::new_unchecked(req.input);
    let rqtn = input.rqtn();
    let max = cx.m.rqts.get(rqtn)?.max;
    if input.bitmask().rqn_list() {
        let rqs = rq_list(cx, req.input, MODIFY_RQTC, max)?;
        let old = list_bytes(&cx.m.rqts.get(rqtn)?.rqs);
        cx.m.storage.replace(old, list_bytes(&rqs))?;
        for &rqn in &rqs {
            cx.m.rqs.hold(rqn);
        }
        let old = std::mem::replace(&mut cx.m.rqts.get_mut(rqtn)?.rqs, rqs);
        for rqn in old {
            cx.m.rqs.release(rqn);
        }
    }
    Ok(out::<cmd::ModifyRqt>(0))
}

/// DESTROY_RQT: fails while a TIR spreads over it.
pub(super) fn destroy_rqt(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let rqtn = DestroyRqtIn::new_unchecked(req.input).rqtn();
    let rqt = cx.m.rqts.remove_charged(rqtn, &mut cx.m.storage)?;
    for rqn in rqt.rqs {
        cx.m.rqs.release(rqn);
    }
    Ok(out::<cmd::DestroyRqt>(0))
}
