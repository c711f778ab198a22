//! QUERY_SQ (opcode 0x907): the SQ's context as created and modified, with the state it is
//! in now, which Linux's TX error recovery reads before resetting an SQ
//! (`mlx5_core_query_sq_state`).

mod common;

use common::tx::Tx;
use mlx5_prm::cmd;
use mlx5_prm::SqState;

#[test]
fn query_sq_reports_each_state() {
    let t = Tx::new();
    assert_eq!(t.state(), SqState::Rdy);
    t.modify(SqState::Rdy, SqState::Err);
    assert_eq!(t.state(), SqState::Err);
    t.modify(SqState::Err, SqState::Rst);
    assert_eq!(t.state(), SqState::Rst);
    // The context comes back as created: CQ, TIS, flush_in_error_en, ring size.
    let r =
        t.e.n
            .host
            .run::<cmd::QuerySq>(0, 0, 0, |i| i.set_sqn(t.e.sqn))
            .ok();
    let out = mlx5_prm::QuerySqOut::new_unchecked(&r.out[..]);
    let ctx = out.sq_context();
    assert_eq!(ctx.cqn(), t.e.scq.cqn);
    assert!(ctx.flush_in_error_en());
    assert_eq!(ctx.wq().log_wq_sz(), 6);
    // An unknown SQ: BAD_RES; an output with room for the page list gets it.
    t.e.n
        .host
        .run::<cmd::QuerySq>(0, 0, 0, |i| i.set_sqn(t.e.sqn + 1))
        .fails(0x5, mlx5_sim::syndrome::SQ_UNKNOWN);
    let r =
        t.e.n
            .host
            .run::<cmd::QuerySq>(0, 0, 8, |i| i.set_sqn(t.e.sqn))
            .ok();
    assert_eq!(r.out.len(), 0x118);
    assert_eq!(
        u64::from_be_bytes(r.out[0x110..0x118].try_into().unwrap()),
        t.e.sq_ring
    );
}
