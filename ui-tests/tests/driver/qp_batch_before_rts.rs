// A batch of sends is started only in RTS; a QP in RTR cannot start one.
use mlx5_driver::backend::Backend;
use mlx5_driver::qp::{Qp, Rtr};

fn early<B: Backend>(qp: &mut Qp<'_, B, Rtr>) {
    let _batch = qp.batch();
}

fn main() {}
