// A completion hands its work back once: `complete` takes it, and it is neither `Copy` nor
// `Clone`, so it cannot be handed over again (a second hand-over would give back a receive
// the device still holds).
use mlx5_driver::backend::Backend;
use mlx5_driver::cq::Completion;
use mlx5_driver::qp::{Qp, Rts};

fn twice<'h, B: Backend>(qp: &mut Qp<'h, B, Rts>, c: Completion) {
    let _ = qp.complete(c);
    let _ = qp.complete(c);
}

fn main() {}
