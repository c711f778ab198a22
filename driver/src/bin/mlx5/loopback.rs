//! `mlx5 loopback`: a self-test of the data path through the port, as `ethtool -t` runs one:
//! numbered frames to the port's own MAC address, each checked byte by byte when it comes
//! back, then what the port's counters (PPCNT) say moved. The port must be looped back: the
//! model is made to loop its port; a card needs a loopback plug or cable.

use crate::{table, Output};
use mlx5_driver::backend::AnyBackend;
use mlx5_driver::eth::{EthConfig, EthQueues, Pool};
use mlx5_driver::port::{CounterGroup, Counters};
use mlx5_driver::Hca;
use mlx5_prm::rt::Bytes as _;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Frames to send.
    #[arg(long, default_value_t = 1000)]
    frames: usize,
    /// Frame length in bytes (without FCS), 60..=1514; without it, lengths cycle through
    /// 60..=1514 so every length bucket of the counters sees frames.
    #[arg(long)]
    size: Option<usize>,
}

/// The destination (and source) MAC of the frames: locally administered, steered to the RQ.
const MAC: [u8; 6] = [0x02, 0x4d, 0x4c, 0x35, 0x00, 0x01];
/// Frames in flight at most: half the receive ring, so the device never finds it empty.
const WINDOW: usize = 256;
/// No frame back for this long fails the test.
const IDLE_LIMIT: Duration = Duration::from_secs(2);

fn frame(seq: usize, size: Option<usize>, out: &mut Vec<u8>) {
    let len = size.unwrap_or(60 + seq % 1455);
    out.clear();
    out.extend_from_slice(&MAC);
    out.extend_from_slice(&MAC);
    out.extend_from_slice(&0x88b5u16.to_be_bytes()); // IEEE local experimental EtherType
    out.extend_from_slice(&(seq as u64).to_be_bytes());
    let k = (seq as u8).wrapping_mul(31);
    out.extend((out.len()..len).map(|i| k.wrapping_add(i as u8)));
}

fn groups(hca: &Hca<AnyBackend>, port: u8) -> Result<Vec<Counters>, String> {
    [CounterGroup::Ieee8023, CounterGroup::Rfc2819]
        .iter()
        .map(|&g| hca.port(port).counters(g, false).map_err(|e| e.to_string()))
        .collect()
}

pub fn run(hca: &Hca<AnyBackend>, port: u8, args: &Args, as_json: bool) -> Result<Output, String> {
    if let Some(s) = args.size {
        if !(60..=1514).contains(&s) {
            return Err(format!("--size {s}: frames are 60 to 1514 bytes"));
        }
    }
    #[cfg(feature = "sim")]
    if let Some(dev) = hca.backend().sim_device() {
        dev.loopback(true);
    }
    let before = groups(hca, port)?;
    let e = |e: mlx5_driver::Error| e.to_string();
    let pool = Pool::new(hca, 2048, 2048).map_err(e)?;
    let config = EthConfig {
        log_sq_size: 9,
        log_rq_size: 9,
        signal_every: 32,
        inline_l2: false,
        macs: vec![MAC],
    };
    let mut eth = EthQueues::create(&pool, &config).map_err(e)?;
    let (mut pkts, mut got) = (Vec::new(), Vec::new());
    let (mut want, mut back) = (Vec::new(), Vec::new());
    let (mut sent, mut received) = (0usize, 0usize);
    let start = Instant::now();
    let mut progress = Instant::now();
    while received < args.frames {
        if sent < args.frames && sent - received < WINDOW {
            pool.alloc_batch(&mut pkts, (args.frames - sent).min(32));
            for (i, p) in pkts.iter_mut().enumerate() {
                frame(sent + i, args.size, &mut want);
                p.write(&want).map_err(e)?;
            }
            sent += eth.tx_batch(&mut pkts).map_err(e)?;
            pkts.clear();
        }
        let n = eth.rx_batch(&mut got, 32).map_err(e)?;
        for p in got.drain(..) {
            frame(received, args.size, &mut want);
            back.resize(p.len(), 0);
            p.data().read_bytes(0, &mut back);
            if back != want {
                return Err(format!(
                    "frame {received} came back wrong: {} bytes (sent {}), first difference at {:?}",
                    back.len(),
                    want.len(),
                    back.iter().zip(&want).position(|(a, b)| a != b)
                ));
            }
            received += 1;
        }
        if n > 0 {
            progress = Instant::now();
        } else if progress.elapsed() > IDLE_LIMIT {
            return Err(format!(
                "{received} of {sent} frames came back, none for {IDLE_LIMIT:?}: is the port looped back?"
            ));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    drop(eth);
    let after = groups(hca, port)?;
    let moved: Vec<(String, u64)> = after
        .iter()
        .zip(&before)
        .flat_map(|(a, b)| a.counters.iter().zip(&b.counters))
        .filter_map(|(a, b)| {
            let d = a.value.wrapping_sub(b.value);
            Some((a.ethtool.clone()?, d)).filter(|_| d != 0)
        })
        .collect();
    if as_json {
        return Ok(Output::Json(serde_json::json!({
            "frames": received,
            "seconds": secs,
            "verified": true,
            "counters_moved": moved
                .iter()
                .map(|(l, d)| (l.clone(), serde_json::Value::from(*d)))
                .collect::<serde_json::Map<String, serde_json::Value>>(),
        })));
    }
    let rows: Vec<(String, String)> = moved
        .into_iter()
        .map(|(l, d)| (l, format!("+{d}")))
        .collect();
    Ok(Output::Text(format!(
        "Loopback test on port {port}: {received} frames sent and received, every byte checked, in {:.3} s\nPort counters that moved:\n{}",
        secs,
        table(&rows)
    )))
}
