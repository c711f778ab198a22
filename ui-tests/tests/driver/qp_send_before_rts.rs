// Sends are posted only in RTS; a QP in INIT cannot post one.
use mlx5_driver::backend::Backend;
use mlx5_driver::qp::{Init, Qp, SendRequest};

fn early<'h, B: Backend>(qp: &mut Qp<'h, B, Init>, req: SendRequest<'h, B>) {
    let _ = qp.post_send(req);
}

fn main() {}
