// PCAM is read-only in the spec (`access: read`), so the generated `reg::Pcam` is not
// `Writable` and `write_reg` does not take it.
use mlx5_driver::backend::Backend;
use mlx5_driver::Hca;
use mlx5_prm::reg::Pcam;

fn write<B: Backend>(hca: &Hca<B>) {
    let _ = hca.write_reg::<Pcam>(|r| r.set_feature_group(0));
}

fn main() {}
