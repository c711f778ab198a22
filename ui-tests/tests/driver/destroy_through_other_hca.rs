// The cross-device destroy: queues of HCA A destroyed through HCA B. A resource is
// destroyed through the HCA it borrows, so `destroy` takes no HCA: the call cannot be written.
use mlx5_driver::backend::Backend;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::{Hca, HcaConfig};

fn cross<B: Backend>(a: B, b: B) {
    let ha = Hca::bring_up(a, &HcaConfig::default()).unwrap();
    let mut hb = Hca::bring_up(b, &HcaConfig::default()).unwrap();
    let pa = Pool::new(&ha, 64, 2048).unwrap();
    let eth_a = EthQueues::create(&pa, &EthConfig::default()).unwrap();
    let _ = eth_a.destroy(&mut hb);
}

fn main() {}
