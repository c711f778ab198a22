// The use after free: bring up, create queues, write a packet, drop the HCA, read
// the packet. The packet borrows its pool, which borrows the HCA: the HCA cannot go first.
use mlx5_driver::backend::Backend;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::{Hca, HcaConfig};

fn use_after_free<B: Backend>(backend: B) {
    let hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let pool = Pool::new(&hca, 64, 2048).unwrap();
    let _eth = EthQueues::create(&pool, &EthConfig::default()).unwrap();
    let mut p = pool.alloc().unwrap();
    p.write(&[0xab; 64]).unwrap();
    drop(hca);
    for i in 0..64 {
        let _ = mlx5_prm::rt::Bytes::read_u8(&p.data(), i);
    }
}

fn main() {}
