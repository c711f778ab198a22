// A QP in RST has no move straight to RTS: RTR2RTS leaves only RTR in the spec's state
// machine, so the generated method's bound is not met.
use mlx5_driver::backend::Backend;
use mlx5_driver::qp::{Qp, Rst, Rtr2rts, Transitions as _};

fn skip<B: Backend>(qp: Qp<'_, B, Rst>, args: Rtr2rts) {
    let _ = qp.rtr2rts(args);
}

fn main() {}
