//! Queue pairs: CREATE_QP, DESTROY_QP, QUERY_QP and the state transitions, validated against
//! the generated RC state machine (`mlx5_prm::QP_STATE_MACHINE`): a transition must start in
//! the QP's state (else BAD_QP_STATE), its opt_param_mask may only hold the bits the
//! transition accepts (else BAD_PARAM), and it applies exactly the context fields the table
//! lists: every required field, and each optional field whose mask bit is set.
//!
//! A QP's timestamp format is chosen at creation from qpc.ts_format against what the device
//! offers for QPs ([`qp_ts_caps`]; refused with QP_BAD_TS_FORMAT) and kept: no transition
//! writes ts_format, so the context keeps it as created. So with the receive WQE stride,
//! checked against max_wqe_sz_rq at creation.

use super::{eq::ring_offset, out, Ctx, Req};
use crate::bits::copy_bits;
use crate::budget::Charged;
use crate::clock::Stamp;
use crate::fail::{ensure, Fail, Outcome};
use crate::model::Model;
use crate::pas::{check_dbr, PageList, PasErrors};
use crate::syndrome as s;
use mlx5_prm::cmd;
use mlx5_prm::rt::{sm::Transition, Command, View};
use mlx5_prm::{
    CmdHcaCap, CreateQpIn, CreateQpOut, DestroyQpIn, Init2initQpIn, Init2rtrQpIn, Qp2errIn,
    Qp2rstIn, QpMtu, QpOptParam, QpRqType, QpServiceType, QpState, Qpc, QueryQpIn, QueryQpOut,
    Rst2initQpIn, Rtr2rtsQpIn, Rts2rtsQpIn, Sqerr2rtsQpIn, QP_STATE_MACHINE,
};

const PAS_ERRORS: PasErrors = PasErrors {
    short: s::QP_PAS_SHORT,
    unaligned: s::QP_PAS_UNALIGNED,
    unmapped: s::QP_PAS_UNMAPPED,
};

/// Bit offset of the QP context in the create and transition inputs (all put it at 0x18).
const QPC_BIT: usize = Rst2initQpIn::QPC.bit_offset;
/// Size of a send WQE basic block.
const SEND_WQEBB: u64 = 64;

/// One queue pair.
#[derive(Debug, Clone)]
pub(crate) struct Qp {
    /// The context; `state` holds the QP state.
    pub ctx: Qpc,
    pub buf: Option<PageList>,
    pub pd: u32,
    pub cqn_snd: Option<u32>,
    pub cqn_rcv: Option<u32>,
    pub uar: u32,
    /// What its CQEs' timestamps carry (send and receive).
    pub stamp: Stamp,
    /// Byte offset of the send queue in the buffer (the receive queue comes first).
    pub sq_base: u64,
    /// Data path: WQEBB counter of the next send WQE to execute (16 bits, like the driver's).
    pub sq_ci: u16,
    /// Data path: receive WQEs consumed.
    pub rq_ci: u16,
    /// Data path: receiver-not-ready retries left for the WQE at the head of the send queue
    /// (7: forever), while it waits for a receive at the responder.
    pub rnr: Option<u8>,
    /// Data path: the RoCE transport's state (`RcTransport::Roce`), made on first use.
    pub roce: Option<crate::datapath::roce::Conn>,
}

impl Charged for Qp {
    fn charged(&self) -> u64 {
        self.buf.as_ref().map_or(0, PageList::charged)
    }
}

/// Reads a QP context out of `input`.
fn owned(ctx: Qpc<&[u8]>) -> Qpc {
    let mut c = Qpc::zeroed();
    c.storage_mut().copy_from_slice(ctx.storage());
    c
}

/// CREATE_QP: a QP in RST over the listed buffer pages.
pub(super) fn create(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let input = CreateQpIn::new_unchecked(req.input);
    let mut ctx = owned(input.qpc());
    ensure(ctx.st().is_ok(), Fail::bad_param(s::QP_BAD_SERVICE_TYPE))?;
    let has_rq = match ctx.rq_type() {
        Ok(QpRqType::Regular) => true,
        Ok(QpRqType::ZeroLen) => false,
        _ => return Err(Fail::bad_param(s::QP_BAD_RQ_TYPE)),
    };
    let has_sq = !ctx.no_sq();
    let stamp = Stamp::for_queue(ctx.ts_format_raw(), qp_ts_caps(&cx.m.cur))
        .ok_or(Fail::bad_param(s::QP_BAD_TS_FORMAT))?;
    let gen = cx.m.gen();
    let max = gen.log_max_qp_sz();
    ensure(
        (!has_sq || ctx.log_sq_size() <= max) && (!has_rq || ctx.log_rq_size() <= max),
        Fail::bad_param(s::QP_BAD_SIZE),
    )?;
    check_rq_stride(gen, &ctx, has_rq)?;
    let (pd, uar) = (ctx.pd(), ctx.uar_page());
    cx.m.pds.check(pd, s::QP_PD_UNKNOWN)?;
    cx.m.uars.check(uar, s::QP_UAR_UNKNOWN)?;
    let cqn_snd = has_sq.then(|| ctx.cqn_snd());
    let cqn_rcv = has_rq.then(|| ctx.cqn_rcv());
    if let Some(cqn) = cqn_snd {
        cx.m.cqs.check(cqn, s::QP_CQ_SND_UNKNOWN)?;
    }
    if let Some(cqn) = cqn_rcv {
        cx.m.cqs.check(cqn, s::QP_CQ_RCV_UNKNOWN)?;
    }
    let rq_bytes = if has_rq {
        (16u64 << ctx.log_rq_stride()) << ctx.log_rq_size()
    } else {
        0
    };
    let sq_bytes = if has_sq {
        SEND_WQEBB << ctx.log_sq_size()
    } else {
        0
    };
    let buf = if rq_bytes + sq_bytes > 0 {
        let list = PageList::new(
            cx.dma,
            input.pas_len(),
            input.pas_iter(),
            ctx.log_page_size(),
            ring_offset(ctx.page_offset(), ctx.log_page_size()),
            rq_bytes + sq_bytes,
            PAS_ERRORS,
        )?;
        check_dbr(cx.dma, ctx.dbr_addr(), 8, 8, s::QP_DBR_BAD)?;
        Some(list)
    } else {
        None
    };
    ctx.set_state(QpState::Rst);
    let limit = Model::limit(cx.m.gen().log_max_qp());
    let qp = Qp {
        ctx,
        buf,
        pd,
        cqn_snd,
        cqn_rcv,
        uar,
        stamp,
        sq_base: rq_bytes,
        sq_ci: 0,
        rq_ci: 0,
        rnr: None,
        roce: None,
    };
    let qpn = cx.m.qps.insert_charged(qp, limit, &mut cx.m.storage)?;
    cx.m.pds.hold(pd);
    cx.m.uars.hold(uar);
    for cqn in cqn_snd.into_iter().chain(cqn_rcv) {
        cx.m.cqs.hold(cqn);
    }
    let mut o = out::<cmd::CreateQp>(0);
    CreateQpOut::new_unchecked(&mut o[..]).set_qpn(qpn);
    Ok(o)
}

/// A receive WQE (the stride, 16 << log_rq_stride bytes) no larger than max_wqe_sz_rq, as an
/// RQ's (`wq.rs`): the data path reads a WQE's scatter list up to the stride. Without a
/// receive queue the field means nothing. No transition writes it (`spec/qp_states.yaml`),
/// so CREATE_QP is the one place to check it.
fn check_rq_stride(gen: &CmdHcaCap, ctx: &Qpc, has_rq: bool) -> Outcome<()> {
    ensure(
        !has_rq || 16u32 << ctx.log_rq_stride() <= u32::from(gen.max_wqe_sz_rq()),
        Fail::bad_param(s::QP_RQ_STRIDE_TOO_LARGE),
    )
}

/// The timestamp formats the device offers QPs (raw): the RoCE page's qp_ts_format while
/// RoCE is on, else sq_ts_format, as Linux reads them (`mlx5_get_qp_default_ts`, qp.h).
pub(crate) fn qp_ts_caps(caps: &crate::caps::Caps) -> u8 {
    if caps.general_cur.roce() {
        caps.roce_cur.qp_ts_format_raw()
    } else {
        caps.general_cur.sq_ts_format_raw()
    }
}

/// DESTROY_QP, in any state.
pub(super) fn destroy(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let qpn = DestroyQpIn::new_unchecked(req.input).qpn();
    let qp = cx.m.qps.remove_charged(qpn, &mut cx.m.storage)?;
    cx.m.pds.release(qp.pd);
    cx.m.uars.release(qp.uar);
    for cqn in qp.cqn_snd.into_iter().chain(qp.cqn_rcv) {
        cx.m.cqs.release(cqn);
    }
    Ok(out::<cmd::DestroyQp>(0))
}

/// QUERY_QP: the context (with the state) and as much of the page list as fits.
pub(super) fn query(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let qp = cx.m.qps.get(QueryQpIn::new_unchecked(req.input).qpn())?;
    let fixed = super::out_size::<cmd::QueryQp>();
    let pages = qp.buf.as_ref().map_or(&[][..], |b| b.pages());
    let n = pages.len().min(req.out_len.saturating_sub(fixed) / 8);
    let mut o = out::<cmd::QueryQp>(n * 8);
    let mut v = QueryQpOut::new_unchecked(&mut o[..]);
    let mut ctx = v.qpc_mut();
    ctx.storage_mut().copy_from_slice(qp.ctx.storage());
    ctx.set_hw_sq_wqebb_counter(qp.sq_ci);
    ctx.set_hw_rq_counter(qp.rq_ci.into());
    for (i, &p) in pages.iter().take(n).enumerate() {
        let _ = v.set_pas(i, p);
    }
    Ok(o)
}

/// The QP number and optional-parameter mask of a transition input, by opcode.
fn qpn_and_mask(opcode: u16, input: &[u8]) -> (u32, u32) {
    macro_rules! with_mask {
        ($in:ident) => {{
            let v = $in::new_unchecked(input);
            (v.qpn(), v.opt_param_mask())
        }};
    }
    match opcode {
        cmd::Rst2initQp::OPCODE => with_mask!(Rst2initQpIn),
        cmd::Init2initQp::OPCODE => with_mask!(Init2initQpIn),
        cmd::Init2rtrQp::OPCODE => with_mask!(Init2rtrQpIn),
        cmd::Rtr2rtsQp::OPCODE => with_mask!(Rtr2rtsQpIn),
        cmd::Rts2rtsQp::OPCODE => with_mask!(Rts2rtsQpIn),
        cmd::Sqerr2rtsQp::OPCODE => with_mask!(Sqerr2rtsQpIn),
        cmd::Qp2err::OPCODE => (Qp2errIn::new_unchecked(input).qpn(), 0),
        _ => (Qp2rstIn::new_unchecked(input).qpn(), 0),
    }
}

/// Mask bits a transition accepts: the table's for RC QPs; for the other service types,
/// which the RC table does not describe, any documented optional-parameter bit.
fn allowed_mask(
    t: &Transition<QpState>,
    st: Result<QpServiceType, mlx5_prm::rt::UnknownValue>,
) -> u64 {
    match st {
        Ok(QpServiceType::Rc) => t.allowed_mask(),
        _ => QpOptParam::ALL.iter().fold(0, |m, b| m | b.raw() as u64),
    }
}

/// True when the transition writes the context field at `path`, given the mask.
fn writes(t: &Transition<QpState>, mask: u64, path: &str) -> bool {
    t.requires.iter().any(|f| f.path == path)
        || t.optional
            .iter()
            .any(|o| o.field.path == path && mask & o.mask != 0)
}

/// Every QP state transition command.
pub(super) fn transition(cx: &mut Ctx<'_>, req: &Req<'_>) -> Outcome {
    let t = QP_STATE_MACHINE
        .by_opcode(req.opcode)
        .ok_or(Fail::bad_op(s::UNKNOWN_OPCODE))?;
    let (qpn, mask) = qpn_and_mask(req.opcode, req.input);
    let mask = u64::from(mask);
    let qp = cx.m.qps.get(qpn)?;
    let state = qp
        .ctx
        .state()
        .map_err(|_| Fail::bad_qp_state(s::QP_BAD_STATE))?;
    ensure(t.starts_in(state), Fail::bad_qp_state(s::QP_BAD_STATE))?;
    ensure(
        mask & !allowed_mask(t, qp.ctx.st()) == 0,
        Fail::bad_param(s::QP_BAD_OPT_MASK),
    )?;
    let mut ctx = qp.ctx;
    let fields = t.requires.iter().chain(
        t.optional
            .iter()
            .filter(|o| mask & o.mask != 0)
            .map(|o| &o.field),
    );
    for f in fields {
        if let Some(dst) = f.bit_offset.checked_sub(QPC_BIT) {
            copy_bits(
                req.input,
                f.bit_offset,
                ctx.storage_mut(),
                dst,
                f.width as usize,
            );
        }
    }
    let gen = cx.m.gen();
    if writes(t, mask, "qpc.primary_address_path.vhca_port_num") {
        let port = ctx.primary_address_path().vhca_port_num();
        ensure(
            (1..=gen.num_ports()).contains(&port),
            Fail::bad_param(s::QP_BAD_PORT),
        )?;
    }
    if writes(t, mask, "qpc.mtu") {
        ensure(
            matches!(ctx.mtu(), Ok(m) if m != QpMtu::RawEthernetQp || ctx.st_raw() != 0),
            Fail::bad_param(s::QP_BAD_MTU),
        )?;
    }
    if writes(t, mask, "qpc.counter_set_id") {
        let id = ctx.counter_set_id();
        if id != 0 {
            cx.m.qcounters.check(id.into(), s::QCNT_UNKNOWN)?;
        }
    }
    if writes(t, mask, "qpc.log_msg_max") {
        ensure(
            ctx.log_msg_max() <= gen.log_max_msg(),
            Fail::bad_param(s::QP_BAD_MSG_MAX),
        )?;
    }
    // The responder keeps the reads and atomics it may have to answer again, as many as
    // log_rra_max allows (datapath::roce::resp); the requester keeps log_sra_max in flight.
    if writes(t, mask, "qpc.log_rra_max") {
        ensure(
            ctx.log_rra_max() <= gen.log_max_ra_res_qp(),
            Fail::bad_param(s::QP_BAD_RRA_MAX),
        )?;
    }
    if writes(t, mask, "qpc.log_sra_max") {
        ensure(
            ctx.log_sra_max() <= gen.log_max_ra_req_qp(),
            Fail::bad_param(s::QP_BAD_SRA_MAX),
        )?;
    }
    ctx.set_state(t.to);
    let qp = cx.m.qps.get_mut(qpn)?;
    qp.ctx = ctx;
    match t.to {
        QpState::Rst => {
            qp.sq_ci = 0;
            qp.rq_ci = 0;
            qp.rnr = None;
            qp.roce = None;
        }
        QpState::Err => crate::datapath::qp_to_err(cx.m, cx.dma, qpn),
        _ => {}
    }
    // Every transition output is the 16-byte header with ece = 0.
    let size = <mlx5_prm::Rst2initQpOut<&[u8]> as View<&[u8]>>::SIZE;
    Ok(vec![0; size])
}
