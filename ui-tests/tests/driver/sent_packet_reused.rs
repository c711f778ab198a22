// A sent packet belongs to the send queue until its completion: the program's handle is gone.
use mlx5_driver::backend::Backend;
use mlx5_driver::eth::{EthQueues, Packet};

fn resend<'p, B: Backend>(eth: &mut EthQueues<'p, B>, p: Packet<'p>) {
    let mut batch = vec![p];
    eth.tx_batch(&mut batch).unwrap();
    let _ = p.data();
}

fn main() {}
