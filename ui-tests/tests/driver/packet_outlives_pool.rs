// A packet cannot outlive its pool: the pool cannot be dropped while one is out.
use mlx5_driver::backend::Backend;
use mlx5_driver::eth::Pool;
use mlx5_driver::Hca;

fn leak<B: Backend>(hca: &Hca<B>) {
    let pool = Pool::new(hca, 64, 2048).unwrap();
    let p = pool.alloc().unwrap();
    drop(pool);
    let _ = p.len();
}

fn main() {}
