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
use mlx5_driver::backend::DmaAlloc;
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
    /// First open and close the device this many times (with DMA memory each time) and check
    /// that the process's open files and memory mappings are as before.
    #[arg(long, default_value_t = 0)]
    reopen: u32,
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

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let spec = match args.device {
        DeviceSpec::Sim { .. } if args.threaded => DeviceSpec::Sim { threaded: true },
        d => d,
    };
    println!("device {spec}");
    if args.reopen > 0 {
        reopen(&spec, args.reopen)?;
    }

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

/// Opens the device, takes and frees DMA memory (a page, 64 KiB, 1 MiB and 2 MiB: huge pages
/// when the system has them free), closes it: `n` times after three warm-up rounds, then
/// compares the open files and mappings with before.
fn reopen(spec: &DeviceSpec, n: u32) -> Result<(), Box<dyn std::error::Error>> {
    // Returns the huge pages in use while the buffers were held.
    let once = || -> Result<u64, Box<dyn std::error::Error>> {
        let be = spec.open()?;
        let bufs = [
            be.alloc(4096, 4096)?,
            be.alloc(64 << 10, 4096)?,
            be.alloc(1 << 20, 4096)?,
            be.alloc(2 << 20, 4096)?,
        ];
        let huge = huge_pages_in_use()?;
        // The buffers go back first (declared last), then the device closes.
        let _ = &bufs;
        Ok(huge)
    };
    // Warm-up: the memory allocator reaches its high-water mark in the first rounds.
    let huge_before = huge_pages_in_use()?;
    let mut huge_held = 0;
    for _ in 0..3 {
        huge_held = once()? - huge_before;
    }
    println!("DMA memory held in each round: 3.1 MiB, of it {huge_held} huge pages");
    let (fds, maps) = (open_files()?, mappings()?);
    let start = Instant::now();
    for _ in 0..n {
        once()?;
    }
    if huge_pages_in_use()? != huge_before {
        return Err("huge pages still in use after the last round".into());
    }
    let took = start.elapsed();
    let (fds_after, maps_after) = (open_files()?, mappings()?);
    // The memory allocator's heap may settle at a higher mark; everything else (device
    // mappings, DMA memory, BAR) must be exactly as before.
    let heap = |m: &[(u64, u64, String)]| kib(m.iter().filter(|m| m.2 == "[heap]"));
    let other = |m: &[(u64, u64, String)]| {
        let v: Vec<_> = m.iter().filter(|m| m.2 != "[heap]").cloned().collect();
        v
    };
    println!(
        "reopened {n} times in {:.1} ms: open files {} -> {}, mappings {} ({} KiB) -> {} ({} \
         KiB), heap {} -> {} KiB",
        took.as_secs_f64() * 1e3,
        fds.len(),
        fds_after.len(),
        maps.len(),
        kib(other(&maps).iter()),
        maps_after.len(),
        kib(other(&maps_after).iter()),
        heap(&maps),
        heap(&maps_after)
    );
    if fds != fds_after {
        return Err(format!("open files changed: {fds:?} -> {fds_after:?}").into());
    }
    let (before, after) = (other(&maps), other(&maps_after));
    if before != after {
        let b: std::collections::BTreeSet<_> = before.iter().collect();
        let a: std::collections::BTreeSet<_> = after.iter().collect();
        return Err(format!(
            "mappings changed: gone {:x?}, new {:x?}",
            b.difference(&a).collect::<Vec<_>>(),
            a.difference(&b).collect::<Vec<_>>()
        )
        .into());
    }
    Ok(())
}

/// Huge pages in use system-wide (`HugePages_Total - HugePages_Free` of /proc/meminfo).
fn huge_pages_in_use() -> Result<u64, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("no {name} in /proc/meminfo"))
    };
    Ok(field("HugePages_Total:")? - field("HugePages_Free:")?)
}

/// This process's open files: (descriptor, what it names).
fn open_files() -> std::io::Result<Vec<(String, String)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd")? {
        let e = e?;
        let target =
            std::fs::read_link(e.path()).map_or_else(|_| "?".into(), |p| p.display().to_string());
        v.push((e.file_name().to_string_lossy().into_owned(), target));
    }
    // The directory's own descriptor differs from one listing to the next.
    v.retain(|(_, t)| !t.starts_with("/proc/"));
    v.sort();
    Ok(v)
}

/// This process's mappings: (start, bytes, what is mapped).
fn mappings() -> std::io::Result<Vec<(u64, u64, String)>> {
    let text = std::fs::read_to_string("/proc/self/maps")?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, b) = f.next()?.split_once('-')?;
            let (a, b) = (
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            );
            Some((a, b - a, f.nth(4).unwrap_or("").to_owned()))
        })
        .collect())
}

fn kib<'a>(maps: impl Iterator<Item = &'a (u64, u64, String)>) -> u64 {
    maps.map(|m| m.1).sum::<u64>() / 1024
}
