// A posted region belongs to the QP until its completion gives it back: it cannot be read
// meanwhile (the device may be writing it).
use mlx5_driver::backend::Backend;
use mlx5_driver::mr::Region;
use mlx5_driver::qp::{Qp, Rts};

fn peek<'h, B: Backend>(qp: &mut Qp<'h, B, Rts>, region: Region<'h, B>) {
    let _ = qp.post_recv(1, region);
    let _ = region.bytes();
}

fn main() {}
