//! Brings an HCA up and down and shows what happened: every command with its time, the
//! device's capabilities, and the firmware pages at each stage.
//!
//! Runs on the device model (the default device):
//!
//! ```text
//! cargo run --example bringup               # the model executes commands inline
//! cargo run --example bringup -- --threaded # the model runs on its own thread
//! RUST_LOG=mlx5_driver::cmd=trace cargo run --example bringup   # hex dumps of every command
//! ```

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::{Config, Mode};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let threaded = std::env::args().any(|a| a == "--threaded");
    let config = Config {
        mode: if threaded {
            Mode::Threaded
        } else {
            Mode::Inline
        },
        ..Config::default()
    };
    let (backend, device) = SimBackend::new(config);
    println!(
        "device model, {} mode",
        if threaded { "threaded" } else { "inline" }
    );

    let start = Instant::now();
    let hca = Hca::bring_up(backend, &HcaConfig::default())?;
    let up = start.elapsed();

    println!(
        "\n{:<26} {:>7} {:>7} {:>10}",
        "command", "opcode", "op_mod", "time"
    );
    for c in hca.history() {
        println!(
            "{:<26} {:>#7x} {:>#7x} {:>8.1}µs",
            c.command,
            c.opcode,
            c.op_mod,
            c.elapsed.as_secs_f64() * 1e6
        );
    }
    println!(
        "\nbring-up: {} commands in {:.2} ms",
        hca.history().len(),
        up.as_secs_f64() * 1e3
    );

    let info = hca.info();
    let caps = info.caps();
    println!(
        "\nfirmware {}.{}.{}, ISSI {}",
        info.fw_version.0, info.fw_version.1, info.fw_version.2, info.issi
    );
    println!("capabilities (current):");
    println!("  ports {} ({:?})", caps.num_ports(), caps.port_type());
    println!(
        "  log_max_qp {}  log_max_cq {}  log_max_eq {}  log_max_pd {}  log_max_mkey {}",
        caps.log_max_qp(),
        caps.log_max_cq(),
        caps.log_max_eq(),
        caps.log_max_pd(),
        caps.log_max_mkey()
    );
    println!(
        "  ethernet offloads {}  roce {}  cqe_version {}  log_bf_reg_size {}",
        caps.eth_net_offloads(),
        caps.roce(),
        caps.cqe_version(),
        caps.log_bf_reg_size()
    );
    println!(
        "objects: UAR {}  EQ {}  PD {}  transport domain {}  reserved lkey 0x{:x}",
        info.uar, info.eqn, info.pd, info.transport_domain, info.resd_lkey
    );
    println!("firmware pages held by the device: {}", device.pages_held());

    let start = Instant::now();
    hca.teardown()?;
    println!(
        "\nteardown: {:.2} ms; firmware pages held after teardown: {}",
        start.elapsed().as_secs_f64() * 1e3,
        device.pages_held()
    );
    Ok(())
}
