//! The driver with the barriers it uses on real hardware ([`HostBarriers`]: `sfence` on
//! x86-64, `dsb st` / `dmb oshld` on aarch64) instead of the model backend's language fences:
//! a backend that is the model's in all but its barriers brings the HCA up, moves frames
//! through the Ethernet queues and tears down. Every barrier site of the command, EQ, CQ and
//! data paths runs the hardware instructions, the code a VFIO backend runs, with the model
//! inline (on the driver's thread) and threaded (racing it).

mod common;

use common::{frame, MAC_A};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::{HostBarriers, WithBarriers};
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::rt::Bytes;
use mlx5_sim::{Config, Mode};
use std::time::{Duration, Instant};

/// The model's backend with the host's barriers.
type Hardware = WithBarriers<SimBackend, HostBarriers>;

/// Receive WQEs posted: at most this many frames are in flight.
const RQ_SIZE: u32 = 128;

fn loopback(mode: Mode) {
    let (be, dev) = SimBackend::new(Config {
        mode,
        ..Config::default()
    });
    let hca = Hca::bring_up(Hardware::new(be), &HcaConfig::default()).unwrap();
    dev.loopback(true);
    let pool = Pool::new(&hca, 512, 2048).unwrap();
    let config = EthConfig {
        log_sq_size: 6,
        log_rq_size: RQ_SIZE.trailing_zeros() as u8,
        signal_every: 8,
        macs: vec![MAC_A],
        ..EthConfig::default()
    };
    let mut eth = EthQueues::create(&pool, &config).unwrap();
    let total = 2000u32;
    let (mut next, mut got) = (0u32, 0u32);
    let (mut batch, mut rx) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(20);
    while got < total {
        assert!(
            Instant::now() < deadline,
            "{mode:?}: {got} of {total} frames back"
        );
        // At most a receive ring of frames between the send and the check: the threaded
        // model completes a send as it takes the frame, and the wire may hold frames a while
        // before delivering them, so without this bound a burst could find the receive queue
        // empty, and the model then drops frames (out_of_buffer), as a NIC does.
        while next < total && batch.len() < 32 && next - got < RQ_SIZE {
            let Some(mut p) = pool.alloc() else { break };
            p.write(&frame(MAC_A, next, 60 + (next as usize * 53) % 1400))
                .unwrap();
            batch.push(p);
            next += 1;
        }
        eth.tx_batch(&mut batch).unwrap();
        if eth.rx_batch(&mut rx, 32).unwrap() == 0 {
            dev.tick();
            std::thread::yield_now();
        }
        for p in rx.drain(..) {
            let mut bytes = vec![0u8; p.len()];
            p.data().read_bytes(0, &mut bytes);
            let want = frame(MAC_A, got, 60 + (got as usize * 53) % 1400);
            // On a mismatch, say what came instead and what the model counted as lost, so
            // that a failure tells a dropped frame from a torn or reordered one.
            if bytes != want {
                let seq =
                    (0..total).find(|&n| bytes == frame(MAC_A, n, 60 + (n as usize * 53) % 1400));
                panic!(
                    "{mode:?}: frame {got} expected, got {} ({} bytes); model: {} sent, {} \
                     received, {} dropped, {} discarded, {} CQEs dropped",
                    seq.map_or("no frame of the sequence".to_string(), |n| format!(
                        "frame {n}"
                    )),
                    bytes.len(),
                    dev.tx_frames(),
                    dev.rx_frames(),
                    dev.rx_dropped(),
                    dev.tx_discarded(),
                    dev.dropped_cqes()
                );
            }
            got += 1;
        }
    }
    assert_eq!(dev.rx_frames(), u64::from(total));
    // Events and commands after the traffic: a page request served and a clean teardown.
    dev.request_pages(3);
    let held = hca.pages_held();
    let deadline = Instant::now() + Duration::from_secs(5);
    while hca.pages_held() < held + 3 {
        assert!(
            Instant::now() < deadline,
            "{mode:?}: the page request was not served"
        );
        hca.poll_events().unwrap();
        std::thread::yield_now();
    }
    drop((batch, rx));
    eth.destroy().unwrap();
    drop(pool);
    let left = hca.teardown().unwrap();
    assert_eq!(left.buffers, 0, "{mode:?}: quarantined {left:?}");
    assert_eq!(dev.pages_held(), 0);
}

#[test]
fn the_hardware_barriers_drive_the_model_inline() {
    loopback(Mode::Inline);
}

#[test]
fn the_hardware_barriers_drive_the_threaded_model() {
    loopback(Mode::Threaded);
}
