//! Brings an HCA up and down and shows what happened: every command with its time, the
//! device's capabilities, and the firmware pages at each stage.
//!
//! Runs on the device model (the default device) or on a function bound to vfio-pci:
//!
//! ```text
//! cargo run --example bringup                          # the model executes commands inline
//! cargo run --example bringup -- --device sim:threaded # the model runs on its own thread
//! cargo run --example bringup --features vfio -- --device vfio:0000:03:00.0
//! RUST_LOG=mlx5_driver::cmd=trace cargo run --example bringup   # hex dumps of every command
//! ```

use clap::Parser;
use mlx5_driver::{DeviceSpec, Hca, HcaConfig};
use std::time::Instant;

#[derive(Parser)]
#[command(about = "Brings an HCA up and down and shows every command")]
struct Args {
    /// The device: sim, sim:threaded or vfio:DDDD:BB:DD.F.
    #[arg(long, default_value = "sim")]
    device: DeviceSpec,
    /// The same as --device sim:threaded.
    #[arg(long)]
    threaded: bool,
}

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The error's own words (what failed and what to do), not its Debug form.
        Err(e) => {
            eprintln!("bringup: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> mlx5_driver::Result<()> {
    let spec = match args.device {
        DeviceSpec::Sim { .. } if args.threaded => DeviceSpec::Sim { threaded: true },
        d => d,
    };
    println!("device {spec}");

    let start = Instant::now();
    let hca = Hca::open(&spec, &HcaConfig::default())?;
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
    println!("firmware pages held by the device: {}", hca.pages_held());
    if let Some(irqs) = hca.backend().interrupts() {
        println!("MSI-X interrupts per vector: {irqs:?}");
    }

    // The model counts what it holds itself; on hardware the driver's ledger is what there
    // is (a teardown that returns reclaimed every page, or it fails and says how many not).
    #[cfg(feature = "sim")]
    let model = hca.backend().sim_device().cloned();
    let start = Instant::now();
    let quarantine = hca.teardown()?;
    #[cfg(feature = "sim")]
    let held = model.map_or(0, |d| d.pages_held());
    #[cfg(not(feature = "sim"))]
    let held = 0;
    println!(
        "\nteardown: {:.2} ms; firmware pages held after teardown: {held}; DMA buffers in quarantine: {}",
        start.elapsed().as_secs_f64() * 1e3,
        quarantine.buffers
    );
    Ok(())
}
