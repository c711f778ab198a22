// A resource cannot outlive its HCA: a CQ made on a local HCA cannot be returned.
use mlx5_driver::backend::Backend;
use mlx5_driver::cq::Cq;
use mlx5_driver::{Hca, HcaConfig};

fn make<B: Backend>(backend: B) -> Cq<'static, B> {
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    Cq::create(&hca, 6).unwrap()
}

fn main() {}
