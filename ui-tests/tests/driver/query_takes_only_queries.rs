// `Hca::query` is the safe way to run a command, and it takes only the driver's `Query`
// commands (they read the device's state and hand it no memory): CREATE_MKEY, which names
// host memory, is not one.
use mlx5_driver::backend::Backend;
use mlx5_driver::Hca;
use mlx5_prm::cmd::CreateMkey;

fn make_a_key_over_any_address<B: Backend>(hca: &Hca<B>) {
    let _ = hca.query::<CreateMkey>(0, |i| {
        i.memory_key_mkey_entry_mut().set_start_addr(0x1000);
    });
}

fn main() {}
