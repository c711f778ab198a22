// Receives are posted in INIT, RTR or RTS; a QP in RST (the generated state type) takes none.
use mlx5_driver::backend::Backend;
use mlx5_driver::mr::Region;
use mlx5_driver::qp::{Qp, Rst};

fn early<'h, B: Backend>(qp: &mut Qp<'h, B, Rst>, region: Region<'h, B>) {
    let _ = qp.post_recv(1, region);
}

fn main() {}
