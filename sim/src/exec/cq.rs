//! Completion queues: CREATE_CQ, DESTROY_CQ, QUERY_CQ and MODIFY_CQ (moderation, EQ remap
//! and resize). A CQ refers to its EQ and UAR page; QPs and work queues refer to it.

use super::{eq::ring_offset, out, Ctx, Req};
use crate::budget::Charged;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::pas::{check_dbr, PageList, PasErrors};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{
    CmdHcaCap, Cqc, CreateCqIn, CreateCqOut, DestroyCqIn, ModifyCqIn, QueryCqIn, QueryCqOut,
};

const PAS_ERRORS: PasErrors = PasErrors {
    short: s::CQ_PAS_SHORT,
    unaligned: s::CQ_PAS_UNALIGNED,
    unmapped: s::CQ_PAS_UNMAPPED,
};

/// MODIFY_CQ op_mod 0 field_select bits: cq_period, cq_max_count, oi, c_eqn.
const MODIFY_PERIOD: u32 = 0x1;
const MODIFY_COUNT: u32 = 0x2;
const MODIFY_OI: u32 = 0x4;
const MODIFY_EQN: u32 = 0x8;
/// MODIFY_CQ op_mod 1 field_select bits: log_cq_size, page_offset, log_page_size.
const RESIZE_SIZE: u32 = 0x1;
const RESIZE_OFFSET: u32 = 0x2;
const RESIZE_PAGE: u32 = 0x4;

/// One completion queue.
#[derive(Debug, Clone)]
pub(crate) struct Cq {
    pub ctx: Cqc,
    pub ring: PageList,
    pub eqn: u32,
    pub uar: u32,
    /// Armed by a CQ doorbell: the next completion raises an event.
    pub armed: bool,
    /// Armed for solicited (and error) completions only (arm command 1).
    pub arm_solicited: bool,
    /// CQEs written so far (the owner bit of CQE p is (p >> log_cq_size) & 1).
    pub producer: u32,
    /// Index of the last solicited or error CQE written.
    pub last_solicited: Option<u32>,
    /// Completions since the CQ was armed that have not raised their event yet (moderation).
    pub unreported: u32,
    /// When the oldest of them was written.
    pub unreported_since: Option<std::time::Instant>,
}

impl Charged for Cq {
    fn charged(&self) -> u64 {
        self.ring.charged()
    }
}

/// Bytes per CQE for cqe_sz (64, or 128 with the CQE in the second half).
fn cqe_bytes(cqe_sz: u8) -> Outcome<u64> {
    match cqe_sz {
        0 => Ok(64),
        1 => Ok(128),
        _ => Err(Fail::bad_param(s::CQ_BAD_CQE_SIZE)),
    }
}

/// Checks a ring geometry and its page list.
fn ring(
    cx: &Ctx<'_>,
    ctx: &Cqc,
    count: usize,
    pas: impl Iterator<Item = u64>,
) -> Outcome<PageList> {
    let entry = cqe_bytes(ctx.cqe_sz_raw())?;
    ensure(
        ctx.log_cq_size() <= cx.m.gen().log_max_cq_sz(),
        Fail::bad_param(s::CQ_BAD_SIZE),
    )?;
    PageList::new(
        cx.dma,
        count,
        pas,
        ctx.log_page_size(),
        ring_offset(ctx.page_offset(), ctx.log_page_size()),
        entry << ctx.log_cq_size(),
        PAS_ERRORS,
    )
}

/// CQE compression only with the cqe_compression capability, which no profile sets: a
/// device with compression on may still write every CQE whole, as the model does, but
/// without the capability a driver that asks for it expects what the device does not offer.
/// A collapsed CQ (cc: every CQE written to entry 0) has no capability bit (mlx5_ifc.h has
/// none) and the model writes none, so it is refused (Linux's mlx5 never sets cc, and sets
/// cqe_comp_en only with the capability).
fn check_cqe_format(gen: &CmdHcaCap, ctx: &Cqc) -> Outcome<()> {
    ensure(
        !ctx.cqe_comp_en() || gen.cqe_compression(),
        Fail::bad_param(s::CQ_COMPRESSION_UNSUPPORTED),
    )?;
    ensure(!ctx.cc(), Fail::bad_param(s::CQ_COLLAPSED_UNSUPPORTED))
}

fn owned(ctx: Cqc<&[u8]>) -> Cqc {
    let mut c = Cqc::zeroed();
    c.storage_mut().copy_from_slice(ctx.storage());
    c
}

/// CREATE_CQ.
pub(super) fn create(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateCqIn::new_unchecked(req.input);
    let ctx = owned(input.cq_context());
    check_cqe_format(cx.m.gen(), &ctx)?;
    let (eqn, uar) = (ctx.c_eqn_or_apu_element(), ctx.uar_page());
    cx.m.eqs.check(eqn, s::CQ_EQ_UNKNOWN)?;
    cx.m.uars.check(uar, s::CQ_UAR_UNKNOWN)?;
    let ring = ring(cx, &ctx, input.pas_len(), input.pas_iter())?;
    check_dbr(cx.dma, ctx.dbr_addr(), 8, 8, s::CQ_DBR_BAD)?;
    let limit = Model::limit(cx.m.gen().log_max_cq());
    let cq = Cq {
        ctx,
        ring,
        eqn,
        uar,
        armed: false,
        arm_solicited: false,
        producer: 0,
        last_solicited: None,
        unreported: 0,
        unreported_since: None,
    };
    let cqn = cx.m.cqs.insert_charged(cq, limit, &mut cx.m.storage)?;
    cx.m.eqs.hold(eqn);
    cx.m.uars.hold(uar);
    let mut o = out::<cmd::CreateCq>(0);
    CreateCqOut::new_unchecked(&mut o[..]).set_cqn(cqn);
    Ok(o)
}

/// DESTROY_CQ: fails while a QP, SQ or RQ completes into it.
pub(super) fn destroy(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let cqn = DestroyCqIn::new_unchecked(req.input).cqn();
    let cq = cx.m.cqs.remove_charged(cqn, &mut cx.m.storage)?;
    cx.m.eqs.release(cq.eqn);
    cx.m.uars.release(cq.uar);
    Ok(out::<cmd::DestroyCq>(0))
}

/// QUERY_CQ: the context and as much of the page list as fits.
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let cq = cx.m.cqs.get(QueryCqIn::new_unchecked(req.input).cqn())?;
    let fixed = super::out_size::<cmd::QueryCq>();
    let pages = cq.ring.pages();
    let n = pages.len().min(req.out_len.saturating_sub(fixed) / 8);
    let mut o = out::<cmd::QueryCq>(n * 8);
    let mut v = QueryCqOut::new_unchecked(&mut o[..]);
    let mut ctx = v.cq_context_mut();
    ctx.storage_mut().copy_from_slice(cq.ctx.storage());
    ctx.set_st(if cq.armed { 0x9 } else { 0xa });
    ctx.set_producer_counter(cq.producer & 0xff_ffff);
    for (i, &p) in pages.iter().take(n).enumerate() {
        let _ = v.set_pas(i, p);
    }
    Ok(o)
}

/// MODIFY_CQ: op_mod 0 changes moderation, overrun-ignore or the EQ; op_mod 1 resizes the
/// ring onto the new page list.
pub(super) fn modify(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ModifyCqIn::new_unchecked(req.input);
    let cqn = input.cqn();
    let new = input.cq_context();
    let select = input.modify_field_select_resize_field_select();
    cx.m.cqs.get(cqn)?;
    if req.op_mod == 0 {
        let bits = select.modify_field_select().modify_field_select();
        ensure(
            bits & !(MODIFY_PERIOD | MODIFY_COUNT | MODIFY_OI | MODIFY_EQN) == 0,
            Fail::bad_param(s::CQ_MODIFY_BAD_SELECT),
        )?;
        let new_eqn = new.c_eqn_or_apu_element();
        if bits & MODIFY_EQN != 0 {
            cx.m.eqs.check(new_eqn, s::CQ_EQ_UNKNOWN)?;
        }
        let cq = cx.m.cqs.get_mut(cqn)?;
        let old_eqn = cq.eqn;
        if bits & MODIFY_PERIOD != 0 {
            cq.ctx.set_cq_period(new.cq_period());
        }
        if bits & MODIFY_COUNT != 0 {
            cq.ctx.set_cq_max_count(new.cq_max_count());
        }
        if bits & MODIFY_OI != 0 {
            cq.ctx.set_oi(new.oi());
        }
        if bits & MODIFY_EQN != 0 {
            cq.ctx.set_c_eqn_or_apu_element(new_eqn);
            cq.eqn = new_eqn;
            cx.m.eqs.release(old_eqn);
            cx.m.eqs.hold(new_eqn);
        }
    } else {
        let bits = select.resize_field_select().resize_field_select();
        ensure(
            bits & !(RESIZE_SIZE | RESIZE_OFFSET | RESIZE_PAGE) == 0,
            Fail::bad_param(s::CQ_MODIFY_BAD_SELECT),
        )?;
        let mut ctx = cx.m.cqs.get(cqn)?.ctx;
        if bits & RESIZE_SIZE != 0 {
            ctx.set_log_cq_size(new.log_cq_size());
        }
        if bits & RESIZE_OFFSET != 0 {
            ctx.set_page_offset(new.page_offset());
        }
        if bits & RESIZE_PAGE != 0 {
            ctx.set_log_page_size(new.log_page_size());
        }
        let ring = ring(cx, &ctx, input.pas_len(), input.pas_iter())?;
        let old = cx.m.cqs.get(cqn)?.ring.charged();
        cx.m.storage.replace(old, ring.charged())?;
        let cq = cx.m.cqs.get_mut(cqn)?;
        cq.ctx = ctx;
        cq.ring = ring;
    }
    Ok(out::<cmd::ModifyCq>(0))
}
