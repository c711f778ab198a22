// A QP in RESET has no move straight to RTS: the transition exists only on RTR.
use mlx5_driver::backend::Backend;
use mlx5_driver::qp::{Qp, Reset, RtsParams};

fn skip<B: Backend>(qp: Qp<'_, B, Reset>, p: &RtsParams) {
    let _ = qp.to_rts(p);
}

fn main() {}
