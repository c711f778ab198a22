//! CREATE_EQ, DESTROY_EQ and QUERY_EQ. The ring lives in DMA memory at the listed pages; the
//! device keeps the context, the event mask, the MSI-X vector (`intr`) it interrupts on and
//! its producer and consumer counters. A new EQ is not armed: the driver arms it with its
//! first doorbell (Linux does so as it enables the EQ).

use super::{out, Ctx, Req};
use crate::budget::Charged;
use crate::events::{self, Eq, EQE_SIZE};
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::pas::{PageList, PasErrors};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::{
    CreateEqIn, CreateEqOut, DestroyEqIn, EqState, EqStatus, EventType, QueryEqIn, QueryEqOut,
};

const PAS_ERRORS: PasErrors = PasErrors {
    short: s::EQ_PAS_SHORT,
    unaligned: s::EQ_PAS_UNALIGNED,
    unmapped: s::EQ_PAS_UNMAPPED,
};

impl Charged for Eq {
    fn charged(&self) -> u64 {
        self.ring.charged()
    }
}

/// Byte offset of a ring that starts `page_offset` 64ths into pages of 4 KiB << `log_page`.
pub(crate) fn ring_offset(page_offset: u8, log_page: u8) -> u64 {
    u64::from(page_offset) * ((4096u64 << log_page.min(18)) / 64)
}

/// CREATE_EQ.
pub(super) fn create(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateEqIn::new_unchecked(req.input);
    let ctx = input.eq_context_entry();
    let log_size = ctx.log_eq_size();
    ensure(
        log_size <= cx.m.gen().log_max_eq_sz(),
        Fail::bad_param(s::EQ_BAD_SIZE),
    )?;
    ensure(
        ctx.intr() < cx.m.msix_vectors,
        Fail::bad_param(s::EQ_BAD_INTR),
    )?;
    let uar = ctx.uar_page();
    cx.m.uars.check(uar, s::EQ_UAR_UNKNOWN)?;
    let ring = PageList::new(
        cx.dma,
        input.pas_len(),
        input.pas_iter(),
        ctx.log_page_size(),
        ring_offset(ctx.page_offset(), ctx.log_page_size()),
        EQE_SIZE << log_size,
        PAS_ERRORS,
    )?;
    let mut bitmask = [0u64; 4];
    for (i, word) in input.event_bitmask_iter().enumerate().take(4) {
        bitmask[i] = word;
    }
    let mut stored = mlx5_prm::Eqc::zeroed();
    stored.storage_mut().copy_from_slice(ctx.storage());
    let eq = Eq {
        ctx: stored,
        bitmask,
        ring,
        log_size,
        uar,
        intr: ctx.intr(),
        oi: ctx.oi(),
        producer: 0,
        consumer: 0,
        armed: false,
        overruns: 0,
    };
    let pages_eq = eq.subscribed(EventType::PageRequest.raw());
    let limit = Model::limit(cx.m.gen().log_max_eq());
    let eqn = cx.m.eqs.insert_charged(eq, limit, &mut cx.m.storage)?;
    cx.m.uars.hold(uar);
    if pages_eq {
        // Firmware asks for its regular pages once it has somewhere to ask.
        events::announce_page_demand(cx.m, cx.dma);
    }
    let mut o = out::<cmd::CreateEq>(0);
    CreateEqOut::new_unchecked(&mut o[..]).set_eq_number(eqn as u8);
    Ok(o)
}

/// DESTROY_EQ: fails while a CQ reports to the EQ.
pub(super) fn destroy(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let eqn = DestroyEqIn::new_unchecked(req.input).eq_number();
    let eq = cx.m.eqs.remove_charged(eqn.into(), &mut cx.m.storage)?;
    cx.m.uars.release(eq.uar);
    Ok(out::<cmd::DestroyEq>(0))
}

/// QUERY_EQ: the context with live counters and arming state, the first event mask word, and
/// as much of the page list as the output has room for.
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let eqn = QueryEqIn::new_unchecked(req.input).eq_number();
    let eq = cx.m.eqs.get(eqn.into())?;
    let fixed = super::out_size::<cmd::QueryEq>();
    let pages = eq.ring.pages();
    let n = pages.len().min(req.out_len.saturating_sub(fixed) / 8);
    let mut o = out::<cmd::QueryEq>(n * 8);
    let mut v = QueryEqOut::new_unchecked(&mut o[..]);
    let mut ctx = v.eq_context_entry_mut();
    ctx.storage_mut().copy_from_slice(eq.ctx.storage());
    ctx.set_status(EqStatus::Ok);
    ctx.set_st(if eq.armed {
        EqState::Armed
    } else {
        EqState::Fired
    });
    ctx.set_consumer_counter(eq.consumer & 0xff_ffff);
    ctx.set_producer_counter(eq.producer & 0xff_ffff);
    v.set_event_bitmask(eq.bitmask[0]);
    for (i, &p) in pages.iter().take(n).enumerate() {
        let _ = v.set_pas(i, p);
    }
    Ok(o)
}
