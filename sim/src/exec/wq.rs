//! Ethernet send and receive queues: CREATE/MODIFY/DESTROY_SQ and _RQ. Both are created in
//! RST and move RST → RDY → ERR → RST; MODIFY names the state the queue is in (checked, else
//! BAD_RES_STATE) and the state to move to (in the context).
//!
//! A queue's timestamp format is chosen at creation from its context's ts_format against
//! what sq_ts_format / rq_ts_format offer ([`Stamp::for_queue`]; refused with
//! SQ_BAD_TS_FORMAT / RQ_BAD_TS_FORMAT) and kept for the queue's life: MODIFY_SQ and
//! MODIFY_RQ have no bitmask bit for it, so a modify leaves it as created.

use super::{eq::ring_offset, out, Ctx, Req};
use crate::budget::Charged;
use crate::clock::Stamp;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::pas::{check_dbr, PageList, PasErrors};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt;
use mlx5_prm::{
    CreateRqIn, CreateRqOut, CreateSqIn, CreateSqOut, DestroyRqIn, DestroySqIn, ModifyRqIn,
    ModifySqIn, QuerySqIn, QuerySqOut, RqMemType, RqState, Rqc, SqState, Sqc, Wq, WqType,
};

/// Byte offset of the wq inside the create inputs (the same for SQ and RQ: context at 0x20,
/// wq at context + 0x30). Its page list trails the input, past what the nested `wq()` view
/// covers, so the model reads it over the rest of the input.
const WQ: usize = (CreateSqIn::CTX.bit_offset + Sqc::WQ.bit_offset) / 8;
/// Byte offset of the wq's page list inside the wq.
const WQ_PAS: usize = Wq::PAS.bit_offset / 8;
/// log2 of the SQ stride: 64-byte WQE basic blocks.
const SQ_LOG_STRIDE: u8 = 6;
/// MODIFY_SQ bitmask bit: packet_pacing_rate_limit_index.
const SQ_MODIFY_RATE_LIMIT: u64 = 0x1;
/// MODIFY_RQ bitmask bits: vsd, scatter_fcs, counter_set_id.
const RQ_MODIFY_VSD: u64 = 0x2;
const RQ_MODIFY_SCATTER_FCS: u64 = 0x4;
const RQ_MODIFY_COUNTER_SET: u64 = 0x8;

/// One send queue.
#[derive(Debug, Clone)]
pub(crate) struct Sq {
    pub ctx: Sqc,
    /// The ring, for the data path (which executes WQEs from it).
    pub ring: PageList,
    pub cqn: u32,
    pub tis: Option<u32>,
    pub pd: u32,
    pub uar: u32,
    /// What its CQEs' timestamps carry.
    pub stamp: Stamp,
    /// Data path: WQEBB counter of the next WQE to execute.
    pub ci: u16,
}

/// One receive queue.
#[derive(Debug, Clone)]
pub(crate) struct Rq {
    pub ctx: Rqc,
    /// The ring, for the data path (which fills its WQEs' buffers).
    pub ring: PageList,
    pub cqn: u32,
    pub pd: u32,
    /// What its CQEs' timestamps carry.
    pub stamp: Stamp,
    /// Data path: receive WQEs consumed.
    pub ci: u16,
}

impl Charged for Sq {
    fn charged(&self) -> u64 {
        self.ring.charged()
    }
}

impl Charged for Rq {
    fn charged(&self) -> u64 {
        self.ring.charged()
    }
}

/// The ring described by the wq of a create input: geometry and page list.
fn ring(cx: &Ctx<'_>, input: &[u8], log_stride: u8, errors: PasErrors) -> Outcome<PageList> {
    let wq = Wq::new_unchecked(&input[WQ..]);
    let first = WQ + WQ_PAS;
    let count = input.len().saturating_sub(first) / 8;
    let pas = (0..count).map(|i| rt::get64(input, first + i * 8));
    PageList::new(
        cx.dma,
        count,
        pas,
        wq.log_wq_pg_sz(),
        ring_offset(wq.page_offset(), wq.log_wq_pg_sz()),
        1u64 << (u32::from(wq.log_wq_sz()) + u32::from(log_stride)),
        errors,
    )
}

/// CREATE_SQ: cyclic ring of 64-byte blocks, completing into a CQ, sending through a TIS.
pub(super) fn create_sq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateSqIn::new_unchecked(req.input);
    let ctx = input.ctx();
    let wq = ctx.wq();
    ensure(
        ctx.state() == Ok(SqState::Rst),
        Fail::bad_param(s::SQ_CREATE_NOT_RST),
    )?;
    ensure(
        wq.wq_type() == Ok(WqType::Cyclic)
            && wq.log_wq_stride() == SQ_LOG_STRIDE
            && wq.log_wq_sz() <= cx.m.gen().log_max_wq_sz(),
        Fail::bad_param(s::SQ_BAD_WQ),
    )?;
    let stamp = Stamp::for_queue(ctx.ts_format_raw(), cx.m.gen().sq_ts_format_raw())
        .ok_or(Fail::bad_param(s::SQ_BAD_TS_FORMAT))?;
    let cqn = ctx.cqn();
    cx.m.cqs.check(cqn, s::SQ_CQ_UNKNOWN)?;
    let tis = match ctx.tis_lst_sz() {
        0 => None,
        1 => Some(ctx.tis_num_0()),
        _ => return Err(Fail::bad_param(s::SQ_BAD_TIS_LIST)),
    };
    if let Some(tis) = tis {
        cx.m.tises.check(tis, s::SQ_TIS_UNKNOWN)?;
    }
    let (pd, uar) = (wq.pd(), wq.uar_page());
    cx.m.pds.check(pd, s::SQ_PD_UNKNOWN)?;
    cx.m.uars.check(uar, s::SQ_UAR_UNKNOWN)?;
    let errors = PasErrors {
        short: s::SQ_PAS_SHORT,
        unaligned: s::SQ_PAS_UNALIGNED,
        unmapped: s::SQ_PAS_UNMAPPED,
    };
    let ring = ring(cx, req.input, SQ_LOG_STRIDE, errors)?;
    // The device reads the send counter from the record's second dword.
    check_dbr(cx.dma, wq.dbr_addr(), 8, 4, s::SQ_DBR_BAD)?;
    let mut stored = Sqc::zeroed();
    // The context view runs on to the input's end (its wq's page list): keep the fixed part.
    stored
        .storage_mut()
        .copy_from_slice(&ctx.storage()[..Sqc::SIZE]);
    let limit = Model::limit(cx.m.gen().log_max_sq());
    let sq = Sq {
        ctx: stored,
        ring,
        cqn,
        tis,
        pd,
        uar,
        stamp,
        ci: 0,
    };
    let sqn = cx.m.sqs.insert_charged(sq, limit, &mut cx.m.storage)?;
    cx.m.cqs.hold(cqn);
    cx.m.pds.hold(pd);
    cx.m.uars.hold(uar);
    if let Some(tis) = tis {
        cx.m.tises.hold(tis);
    }
    let mut o = out::<cmd::CreateSq>(0);
    CreateSqOut::new_unchecked(&mut o[..]).set_sqn(sqn);
    Ok(o)
}

/// The moves of the SQ and RQ state machines (RST 0, RDY 1, ERR 3).
fn may_move(from: u8, to: u8) -> bool {
    matches!((from, to), (0, 1) | (1, 1) | (1, 3) | (1, 0) | (3, 0))
}

/// MODIFY_SQ: a state move and, under modify_bitmask bit 0, the rate limit index.
pub(super) fn modify_sq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ModifySqIn::new_unchecked(req.input);
    let sq = cx.m.sqs.get_mut(input.sqn())?;
    let cur = sq.ctx.state_raw();
    ensure(
        input.sq_state_raw() == cur,
        Fail::bad_res_state(s::SQ_STATE_MISMATCH),
    )?;
    let new = input
        .ctx()
        .state()
        .map_err(|_| Fail::bad_res_state(s::SQ_BAD_TRANSITION))?;
    ensure(
        may_move(cur, new.raw()),
        Fail::bad_res_state(s::SQ_BAD_TRANSITION),
    )?;
    let bits = input.modify_bitmask();
    ensure(
        bits & !SQ_MODIFY_RATE_LIMIT == 0,
        Fail::bad_param(s::SQ_BAD_BITMASK),
    )?;
    if bits & SQ_MODIFY_RATE_LIMIT != 0 {
        sq.ctx
            .set_packet_pacing_rate_limit_index(input.ctx().packet_pacing_rate_limit_index());
    }
    sq.ctx.set_state(new);
    match new {
        SqState::Rst => sq.ci = 0,
        SqState::Err => crate::datapath::sq_to_err(cx.m, cx.dma, input.sqn()),
        _ => {}
    }
    Ok(out::<cmd::ModifySq>(0))
}

/// QUERY_SQ: the context as created and modified, with the state the SQ is in now (ERR
/// after an error CQE: what Linux's TX recovery waits to see), then as much of the ring's
/// page list as the output has room for (Linux asks for none).
pub(super) fn query_sq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let sq = cx.m.sqs.get(QuerySqIn::new_unchecked(req.input).sqn())?;
    let fixed = super::out_size::<cmd::QuerySq>();
    let pages = sq.ring.pages();
    let n = pages.len().min(req.out_len.saturating_sub(fixed) / 8);
    let mut o = out::<cmd::QuerySq>(n * 8);
    let mut v = QuerySqOut::new_unchecked(&mut o[..]);
    v.sq_context_mut().storage_mut()[..Sqc::SIZE].copy_from_slice(sq.ctx.storage());
    // The page list trails the output, past the context's fixed part.
    for (i, &p) in pages.iter().take(n).enumerate() {
        rt::set64(&mut o, fixed + i * 8, p);
    }
    Ok(o)
}

/// DESTROY_SQ, in any state.
pub(super) fn destroy_sq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let sqn = DestroySqIn::new_unchecked(req.input).sqn();
    let sq = cx.m.sqs.remove_charged(sqn, &mut cx.m.storage)?;
    cx.m.cqs.release(sq.cqn);
    cx.m.pds.release(sq.pd);
    cx.m.uars.release(sq.uar);
    if let Some(tis) = sq.tis {
        cx.m.tises.release(tis);
    }
    Ok(out::<cmd::DestroySq>(0))
}

/// CREATE_RQ: a cyclic ring of its own (striding too, with the striding_rq capability),
/// completing into a CQ.
pub(super) fn create_rq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateRqIn::new_unchecked(req.input);
    let ctx = input.ctx();
    let wq = ctx.wq();
    ensure(
        ctx.state() == Ok(RqState::Rst),
        Fail::bad_param(s::RQ_CREATE_NOT_RST),
    )?;
    ensure(
        ctx.mem_rq_type() == Ok(RqMemType::MemoryRqInline),
        Fail::bad_param(s::RQ_BAD_MEM_TYPE),
    )?;
    ensure(
        matches!(wq.wq_type(), Ok(WqType::Cyclic | WqType::CyclicStridingRq))
            && (4..=15).contains(&wq.log_wq_stride())
            && wq.log_wq_sz() <= cx.m.gen().log_max_wq_sz(),
        Fail::bad_param(s::RQ_BAD_WQ),
    )?;
    check_rq_caps(cx, &wq)?;
    let stamp = Stamp::for_queue(ctx.ts_format_raw(), cx.m.gen().rq_ts_format_raw())
        .ok_or(Fail::bad_param(s::RQ_BAD_TS_FORMAT))?;
    let cqn = ctx.cqn();
    cx.m.cqs.check(cqn, s::RQ_CQ_UNKNOWN)?;
    // PD 0 is never allocated (handles start at 0x11) and means "no PD": Linux creates its
    // drop RQ (the RQ its RQTs point at while no channel is open) without one. Such an RQ
    // can take no receive buffer, as every mkey belongs to an allocated PD; any other
    // value must name a live PD.
    let pd = wq.pd();
    if pd != 0 {
        cx.m.pds.check(pd, s::RQ_PD_UNKNOWN)?;
    }
    check_counter_set(cx, ctx.counter_set_id())?;
    let errors = PasErrors {
        short: s::RQ_PAS_SHORT,
        unaligned: s::RQ_PAS_UNALIGNED,
        unmapped: s::RQ_PAS_UNMAPPED,
    };
    let ring = ring(cx, req.input, wq.log_wq_stride(), errors)?;
    check_dbr(cx.dma, wq.dbr_addr(), 4, 4, s::RQ_DBR_BAD)?;
    let mut stored = Rqc::zeroed();
    // The context view runs on to the input's end (its wq's page list): keep the fixed part.
    stored
        .storage_mut()
        .copy_from_slice(&ctx.storage()[..Rqc::SIZE]);
    let limit = Model::limit(cx.m.gen().log_max_rq());
    let rq = Rq {
        ctx: stored,
        ring,
        cqn,
        pd,
        stamp,
        ci: 0,
    };
    let rqn = cx.m.rqs.insert_charged(rq, limit, &mut cx.m.storage)?;
    cx.m.cqs.hold(cqn);
    if pd != 0 {
        cx.m.pds.hold(pd);
    }
    let mut o = out::<cmd::CreateRq>(0);
    CreateRqOut::new_unchecked(&mut o[..]).set_rqn(rqn);
    Ok(o)
}

/// What a receive WQ may be on this device: striding only with the striding_rq capability
/// (which no profile sets: the receive path would drop every frame of such an RQ), and a
/// WQE (the stride) no larger than max_wqe_sz_rq.
fn check_rq_caps(cx: &Ctx<'_>, wq: &Wq<&[u8]>) -> Outcome<()> {
    let gen = cx.m.gen();
    ensure(
        wq.wq_type() != Ok(WqType::CyclicStridingRq) || gen.striding_rq(),
        Fail::bad_param(s::RQ_STRIDING_UNSUPPORTED),
    )?;
    ensure(
        1u32 << wq.log_wq_stride() <= u32::from(gen.max_wqe_sz_rq()),
        Fail::bad_param(s::RQ_STRIDE_TOO_LARGE),
    )
}

/// An RQ's counter_set_id names an allocated queue counter set, or is 0 (none: Linux
/// leaves 0 when its ALLOC_Q_COUNTER failed).
fn check_counter_set(cx: &Ctx<'_>, id: u8) -> Outcome<()> {
    if id == 0 {
        return Ok(());
    }
    cx.m.qcounters.check(id.into(), s::QCNT_UNKNOWN)
}

/// MODIFY_RQ: a state move and the fields modify_bitmask selects.
pub(super) fn modify_rq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = ModifyRqIn::new_unchecked(req.input);
    if input.modify_bitmask() & RQ_MODIFY_COUNTER_SET != 0 {
        check_counter_set(cx, input.ctx().counter_set_id())?;
    }
    let rq = cx.m.rqs.get_mut(input.rqn())?;
    let cur = rq.ctx.state_raw();
    ensure(
        input.rq_state_raw() == cur,
        Fail::bad_res_state(s::RQ_STATE_MISMATCH),
    )?;
    let new_ctx = input.ctx();
    let new = new_ctx
        .state()
        .map_err(|_| Fail::bad_res_state(s::RQ_BAD_TRANSITION))?;
    ensure(
        may_move(cur, new.raw()),
        Fail::bad_res_state(s::RQ_BAD_TRANSITION),
    )?;
    let bits = input.modify_bitmask();
    let known = RQ_MODIFY_VSD | RQ_MODIFY_SCATTER_FCS | RQ_MODIFY_COUNTER_SET;
    ensure(bits & !known == 0, Fail::bad_param(s::RQ_BAD_BITMASK))?;
    if bits & RQ_MODIFY_VSD != 0 {
        rq.ctx.set_vsd(new_ctx.vsd());
    }
    if bits & RQ_MODIFY_SCATTER_FCS != 0 {
        rq.ctx.set_scatter_fcs(new_ctx.scatter_fcs());
    }
    if bits & RQ_MODIFY_COUNTER_SET != 0 {
        rq.ctx.set_counter_set_id(new_ctx.counter_set_id());
    }
    rq.ctx.set_state(new);
    match new {
        RqState::Rst => rq.ci = 0,
        RqState::Err => crate::datapath::rq_to_err(cx.m, cx.dma, input.rqn()),
        _ => {}
    }
    Ok(out::<cmd::ModifyRq>(0))
}

/// DESTROY_RQ: fails while a TIR or RQT points at it.
pub(super) fn destroy_rq(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let rqn = DestroyRqIn::new_unchecked(req.input).rqn();
    let rq = cx.m.rqs.remove_charged(rqn, &mut cx.m.storage)?;
    cx.m.cqs.release(rq.cqn);
    if rq.pd != 0 {
        cx.m.pds.release(rq.pd);
    }
    Ok(out::<cmd::DestroyRq>(0))
}
