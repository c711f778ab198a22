//! Workloads for the Ethernet data-path figures (run by `scripts/bench-eth`).
//!
//! ```text
//! eth_bench count tx|rx|fwd|pool|pool-drop BATCH ROUNDS
//!                                          one workload, for callgrind: only tx_batch and
//!                                          rx_batch are measured (--toggle-collect), the
//!                                          model's work runs outside them; pool takes
//!                                          BATCH packets from the pool and gives them back
//!                                          (alloc_batch and free_batch measured);
//!                                          pool-drop gives them back by dropping each
//! eth_bench mpps BATCH PACKETS [--link-down-at N] [--verify] [--flows N] [--device SPEC]
//!                                          loopback, wall-clock; every packet must come
//!                                          back (no packet for 2 s fails the run with what
//!                                          was lost); --link-down-at takes the model's link
//!                                          down after N sent, to show it; --verify sends
//!                                          sequence-numbered frames of varied length and
//!                                          checks every byte of each that comes back, in
//!                                          order; --flows writes each packet as one of N
//!                                          IPv4/UDP flows in turn (distinct source MACs,
//!                                          addresses and ports), so that the device parses
//!                                          and steers every frame afresh (--flows 1: the
//!                                          same writes, one flow); --device runs on another device (sim,
//!                                          sim:threaded, vfio:ADDR), whose port must be
//!                                          looped back: a loopback plug on a card, the
//!                                          vfio-user server's --loopback for the model
//! ```
//!
//! In `count`, doorbells are held by [`Deferred`] while the driver runs and released to the
//! model between batches, so the instructions collected are the driver's own: writing WQEs,
//! the doorbell record and the doorbell, reaping send CQEs and returning their buffers,
//! polling receive CQEs, handing out packets and refilling the RQ.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{Backend, Deferred};
use mlx5_driver::eth::{EthConfig, EthQueues, Packet, Pool};
use mlx5_driver::{DeviceSpec, Hca, HcaConfig};
use mlx5_prm::rt::Bytes;
use std::time::{Duration, Instant};

fn usage() -> ! {
    eprintln!(
        "usage: eth_bench count tx|rx|fwd|pool|pool-drop BATCH ROUNDS | eth_bench mpps BATCH PACKETS \
         [--link-down-at N] [--verify] [--flows N] [--device SPEC]"
    );
    std::process::exit(2)
}

fn arg(args: &[String], i: usize) -> usize {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| usage())
}

/// log2 of the receive ring's entries.
const LOG_RQ: u8 = 9;

const CONFIG: EthConfig = EthConfig {
    log_sq_size: 9,
    log_rq_size: LOG_RQ,
    signal_every: 32,
    inline_l2: false,
    macs: Vec::new(),
};
/// Packet buffers and their size.
const BUFFERS: u32 = 4096;
const BUF_SIZE: u32 = 2048;

/// A 60-byte frame (every frame is steered to the RQ: no MAC filter).
fn frame() -> [u8; 60] {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

fn count(direction: &str, batch: usize, rounds: usize) {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(Deferred::new(be), &HcaConfig::default()).expect("bring-up");
    let pool = Pool::new(&hca, BUFFERS, BUF_SIZE).expect("pool");
    let mut eth = EthQueues::create(&pool, &CONFIG).expect("eth queues");
    let be = hca.backend();
    be.hold();
    let f = frame();
    let (mut pkts, mut out): (Vec<Packet>, Vec<Packet>) =
        (Vec::with_capacity(batch), Vec::with_capacity(batch));
    let mut moved = 0usize;
    for _ in 0..rounds {
        match direction {
            "tx" => {
                pool.alloc_batch(&mut pkts, batch);
                pkts.iter_mut().for_each(|p| p.set_len(60));
                moved += eth.tx_batch(&mut pkts).expect("tx");
                // SAFETY: the SQ just rung lives (`eth` outlives the loop).
                unsafe { be.release() };
            }
            "rx" => {
                for _ in 0..batch {
                    dev.receive_frame(&f);
                }
                moved += eth.rx_batch(&mut out, batch).expect("rx");
                // The packets go back to the pool as they drop.
                out.clear();
            }
            "fwd" => {
                for _ in 0..batch {
                    dev.receive_frame(&f);
                }
                eth.rx_batch(&mut out, batch).expect("rx");
                moved += eth.tx_batch(&mut out).expect("tx");
                // SAFETY: as for "tx".
                unsafe { be.release() };
            }
            "pool" => {
                // What an application pays for its packets on top of the queues: a batch
                // taken from the pool and given back.
                moved += pool.alloc_batch(&mut pkts, batch);
                pool.free_batch(&mut pkts);
            }
            "pool-drop" => {
                // The same, the packets given back by dropping them one by one (the baseline
                // of `free_batch`).
                moved += pool.alloc_batch(&mut pkts, batch);
                drop_each(&mut pkts);
            }
            _ => usage(),
        }
    }
    assert_eq!(moved, batch * rounds, "every packet moved");
    eprintln!("{direction}: {moved} packets");
}

/// Drops every packet of `pkts` (each goes back to its pool as it drops); out of line, so
/// that callgrind can count it.
#[inline(never)]
fn drop_each(pkts: &mut Vec<Packet<'_>>) {
    pkts.clear();
}

/// How long `mpps` waits for a packet to come back before calling the rest lost.
const IDLE_LIMIT: Duration = Duration::from_secs(2);

/// Frames in flight at most: half the receive ring.
const WINDOW: usize = 1 << (LOG_RQ - 1);

/// What `mpps` is asked to do.
struct Mpps {
    batch: usize,
    packets: usize,
    link_down_at: Option<usize>,
    verify: bool,
    /// Write each packet as one of this many IPv4/UDP flows, in turn.
    flows: Option<usize>,
    device: DeviceSpec,
}

/// The model's side of a run: taking its link down, and its drop counters for a report.
struct ModelHooks<'a> {
    link_down: Option<&'a dyn Fn()>,
    report: &'a dyn Fn() -> String,
}

fn mpps(m: &Mpps) {
    match m.device {
        // The figure's configuration: the concrete backend and the model's own barriers.
        DeviceSpec::Sim { threaded: false } => {
            let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
            let hca = Hca::bring_up(be, &HcaConfig::default()).expect("bring-up");
            dev.loopback(true);
            let down = || {
                if dev.tx_discarded() == 0 {
                    dev.raise_port_change(1, false);
                }
            };
            let report = || {
                format!(
                    "model: rx_dropped {}, tx_discarded {}",
                    dev.rx_dropped(),
                    dev.tx_discarded()
                )
            };
            run_mpps(
                &hca,
                m,
                ModelHooks {
                    link_down: Some(&down),
                    report: &report,
                },
            );
        }
        ref spec => {
            if m.link_down_at.is_some() {
                eprintln!("eth_bench mpps: --link-down-at needs the inline model (--device sim)");
                std::process::exit(2);
            }
            let hca = Hca::open(spec, &HcaConfig::default()).unwrap_or_else(|e| {
                eprintln!("eth_bench mpps: {spec}: {e}");
                std::process::exit(1)
            });
            #[cfg(feature = "sim")]
            if let Some(dev) = hca.backend().sim_device() {
                dev.loopback(true);
            }
            let report = || String::from("the port must be looped back");
            run_mpps(
                &hca,
                m,
                ModelHooks {
                    link_down: None,
                    report: &report,
                },
            );
            if let Some(irqs) = hca.backend().interrupts() {
                println!("MSI-X interrupts per vector: {irqs:?}");
            }
        }
    }
}

/// Frame `seq` of a verified run: to the RQ's MAC, sequence number at bytes 14..22, then a
/// pattern that depends on the sequence number; 60 to 1514 bytes.
fn numbered(seq: u64, out: &mut Vec<u8>) {
    let len = 60 + (seq % 1455) as usize;
    out.clear();
    out.extend_from_slice(&frame()[..14]);
    out.extend_from_slice(&seq.to_be_bytes());
    let k = (seq as u8).wrapping_mul(31);
    out.extend((22..len).map(|i| k.wrapping_add(i as u8)));
}

/// Flow `k`'s 60-byte IPv4/UDP frame to the RQ's MAC: source MAC, addresses and ports
/// distinct per flow, the IPv4 header checksum right and the UDP checksum zero ("none"), as a
/// mix of connections would arrive.
fn flow_frame(k: usize) -> [u8; 60] {
    let mut f = frame();
    let k16 = (k % 0xffff) as u16;
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0xf1, (k16 >> 8) as u8, k16 as u8]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&46u16.to_be_bytes()); // 20 + 8 + 18 bytes of payload
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 1, (k16 >> 8) as u8, k16 as u8]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 1]);
    let sum = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&(1024 + k16 % 60000).to_be_bytes());
    udp[2..4].copy_from_slice(&9000u16.to_be_bytes());
    udp[4..6].copy_from_slice(&26u16.to_be_bytes());
    f
}

fn run_mpps<B: Backend>(hca: &Hca<B>, m: &Mpps, hooks: ModelHooks<'_>) {
    let (batch, packets) = (m.batch, m.packets);
    let flows: Vec<[u8; 60]> = (0..m.flows.unwrap_or(0)).map(flow_frame).collect();
    let pool = Pool::new(hca, BUFFERS, BUF_SIZE).expect("pool");
    let mut eth = EthQueues::create(&pool, &CONFIG).expect("eth queues");
    let (mut pkts, mut out) = (Vec::with_capacity(batch), Vec::with_capacity(batch));
    let (mut want, mut got_bytes) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let (mut sent, mut received) = (0usize, 0usize);
    // A lost packet must fail the run, not hang it: no packet back for this long is a failure
    // that says what went missing.
    let mut progress = Instant::now();
    while received < packets {
        if let (Some(n), Some(down)) = (m.link_down_at, hooks.link_down) {
            if sent >= n {
                down();
            }
        }
        // At most half the receive ring in flight: a device that runs apart from the driver
        // (threaded model, hardware) would otherwise outrun the refills and drop frames, as
        // a NIC does when its receive queue is empty.
        if sent < packets && sent - received + batch <= WINDOW {
            pool.alloc_batch(&mut pkts, batch.min(packets - sent));
            for (i, p) in pkts.iter_mut().enumerate() {
                if m.verify {
                    numbered((sent + i) as u64, &mut want);
                    p.write(&want).expect("frame fits");
                } else if !flows.is_empty() {
                    p.write(&flows[(sent + i) % flows.len()])
                        .expect("frame fits");
                } else {
                    p.set_len(60);
                }
            }
            sent += eth.tx_batch(&mut pkts).expect("tx");
            pool.free_batch(&mut pkts);
        }
        let got = eth.rx_batch(&mut out, batch).expect("rx");
        if m.verify {
            for p in &out {
                let seq = received as u64;
                numbered(seq, &mut want);
                got_bytes.resize(p.len(), 0);
                p.data().read_bytes(0, &mut got_bytes);
                if got_bytes != want {
                    let at = got_bytes.iter().zip(&want).position(|(a, b)| a != b);
                    eprintln!(
                        "eth_bench mpps: frame {seq} came back wrong: {} bytes (sent {}), first \
                         difference at {at:?}",
                        got_bytes.len(),
                        want.len()
                    );
                    std::process::exit(1);
                }
                received += 1;
            }
        } else {
            received += got;
        }
        pool.free_batch(&mut out);
        if got > 0 {
            progress = Instant::now();
        } else if progress.elapsed() > IDLE_LIMIT {
            eprintln!(
                "eth_bench mpps: {received} of {sent} sent packets came back, none for {:?}: \
                 {} lost ({})",
                IDLE_LIMIT,
                sent - received,
                (hooks.report)()
            );
            std::process::exit(1);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "loopback batch {batch}: {received} packets in {secs:.3} s = {:.2} Mpps{}{}",
        received as f64 / secs / 1e6,
        if m.verify {
            ", every byte of every frame checked, in order"
        } else {
            ""
        },
        if flows.is_empty() {
            String::new()
        } else {
            format!(", {} IPv4/UDP flows in turn", flows.len())
        }
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("count") => count(
            args.get(1).map_or_else(|| usage(), String::as_str),
            arg(&args, 2),
            arg(&args, 3),
        ),
        Some("mpps") => {
            let mut m = Mpps {
                batch: arg(&args, 1),
                packets: arg(&args, 2),
                link_down_at: None,
                verify: false,
                flows: None,
                device: DeviceSpec::default(),
            };
            let mut i = 3;
            while i < args.len() {
                match args[i].as_str() {
                    "--link-down-at" => {
                        m.link_down_at = Some(arg(&args, i + 1));
                        i += 1;
                    }
                    "--verify" => m.verify = true,
                    "--flows" => {
                        m.flows = Some(arg(&args, i + 1).max(1));
                        i += 1;
                    }
                    "--device" => {
                        let text = args.get(i + 1).unwrap_or_else(|| usage());
                        m.device = text.parse().unwrap_or_else(|e| {
                            eprintln!("eth_bench: {e}");
                            std::process::exit(2)
                        });
                        i += 1;
                    }
                    _ => usage(),
                }
                i += 1;
            }
            if m.verify && m.flows.is_some() {
                eprintln!("eth_bench mpps: --verify writes its own frames; drop --flows");
                std::process::exit(2);
            }
            mpps(&m)
        }
        _ => usage(),
    }
}
