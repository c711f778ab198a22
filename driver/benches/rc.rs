//! RC operations through the model, driver and model together, wall clock: SEND, RDMA WRITE,
//! RDMA READ and the two atomics between two model devices joined by a wire (one RC QP each,
//! the in-memory fabric of `Config::default()`), with the model inline (it runs inside each
//! doorbell write) and threaded (`Mode::Threaded`: a firmware thread per device, as hardware
//! runs beside the driver).
//!
//! - `rc/<model>/<op>_<size>[_inline]`, functions `signal_1` and `signal_32`: throughput
//!   with 32 requests outstanding, a completion asked for by every request or by every 32nd.
//!   One criterion iteration is one request, so `thrpt` is requests per second.
//! - `rc_latency/<model>`, one function per operation: one request at a time, each timed
//!   from `post_send` to the poll that returns its completion (round trip through the model).
//!   Criterion's estimate is the mean per request; the median and the 99th percentile of the
//!   individual round trips (every one criterion ran, warm-up included, each timed with two
//!   clock reads that add some 20 to 40 ns) are printed after each function.
//!
//! The driver's own instruction counts, which do not depend on the machine's load, are
//! `scripts/bench-rc counts`; this benchmark is the time it all takes.
//!
//! Run: `cargo bench -p mlx5-driver --bench rc` (`-- rc/inline` for a part).

#[path = "../examples/common/rc_link.rs"]
mod rc_link;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::backend::Backend;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_sim::{Config, Mode, Wire};
use rc_link::{err, Link, Op, Workload};
use std::time::{Duration, Instant};

/// What the throughput groups run: operation, bytes, inline.
const CASES: [(Op, usize, bool); 9] = [
    (Op::Send, 64, false),
    (Op::Send, 44, true),
    (Op::Write, 64, false),
    (Op::Write, 28, true),
    (Op::Write, 4096, false),
    (Op::Read, 64, false),
    (Op::Read, 4096, false),
    (Op::FetchAdd, 8, false),
    (Op::CompareSwap, 8, false),
];

/// Requests outstanding in the throughput groups (the window of `scripts/bench-rc`'s batch).
const DEPTH: usize = 32;

/// Prints `e` and ends the process: a benchmark that cannot run has nothing to report, and
/// criterion's closures have no error path.
fn fail(e: String) -> ! {
    eprintln!("rc bench: {e}");
    std::process::exit(1)
}

fn name(op: Op, size: usize, inline: bool) -> String {
    let op = match op {
        Op::Send => "send",
        Op::Write => "write",
        Op::Read => "read",
        Op::FetchAdd => "fetch_add",
        Op::CompareSwap => "compare_swap",
    };
    format!("{op}_{size}B{}", if inline { "_inline" } else { "" })
}

fn bench(c: &mut Criterion) {
    for (model, mode) in [("inline", Mode::Inline), ("threaded", Mode::Threaded)] {
        let config = Config {
            mode,
            ..Config::default()
        };
        let (ba, da) = SimBackend::new(config.clone());
        let (bb, db) = SimBackend::new(config);
        let _wire = Wire::connect(&da, &db);
        let ha = Hca::bring_up(ba, &HcaConfig::default())
            .map_err(err("bring-up"))
            .unwrap_or_else(|e| fail(e));
        let hb = Hca::bring_up(bb, &HcaConfig::default())
            .map_err(err("bring-up"))
            .unwrap_or_else(|e| fail(e));
        throughput(c, model, &ha, &hb);
        latency(c, model, &ha, &hb);
        for h in [ha, hb] {
            if let Err(e) = h.teardown() {
                fail(format!("teardown: {e}"));
            }
        }
    }
}

fn throughput<A: Backend, B: Backend>(c: &mut Criterion, model: &str, ha: &Hca<A>, hb: &Hca<B>) {
    for (op, size, inline) in CASES {
        let mut g = c.benchmark_group(format!("rc/{model}/{}", name(op, size, inline)));
        g.throughput(Throughput::Elements(1));
        for signal_every in [1, DEPTH] {
            let work = Workload {
                op,
                size,
                inline,
                depth: DEPTH,
                signal_every,
            };
            let mut link = Link::new(ha, hb, work).unwrap_or_else(|e| fail(e));
            g.bench_function(format!("signal_{signal_every}"), |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    link.run(iters, &|| ()).unwrap_or_else(|e| fail(e));
                    start.elapsed()
                })
            });
        }
        g.finish();
    }
}

/// Round trips in nanoseconds, one counter per nanosecond up to [`Histogram::SPAN`]: exact
/// percentiles without keeping millions of samples.
struct Histogram {
    counts: Vec<u64>,
    over: u64,
    max: Duration,
}

impl Histogram {
    const SPAN: usize = 200_000;

    fn new() -> Histogram {
        Histogram {
            counts: vec![0; Histogram::SPAN],
            over: 0,
            max: Duration::ZERO,
        }
    }

    fn add(&mut self, d: Duration) {
        match self.counts.get_mut(d.as_nanos() as usize) {
            Some(n) => *n += 1,
            None => self.over += 1,
        }
        self.max = self.max.max(d);
    }

    /// The nearest-rank `p` quantile in nanoseconds; `None` beyond the span.
    fn quantile(&self, p: f64) -> Option<usize> {
        let total = self.counts.iter().sum::<u64>() + self.over;
        let rank = ((p * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (ns, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(ns);
            }
        }
        None
    }

    fn report(&self, what: &str) {
        let show = |q: Option<usize>| {
            q.map_or(format!("> {} us", Histogram::SPAN / 1000), |ns| {
                format!("{:.2} us", ns as f64 / 1e3)
            })
        };
        let total = self.counts.iter().sum::<u64>() + self.over;
        if total == 0 {
            // Filtered out on the command line.
            return;
        }
        println!(
            "{what}: {total} round trips timed one by one: median {}, p99 {}, max {:.2} us",
            show(self.quantile(0.5)),
            show(self.quantile(0.99)),
            self.max.as_secs_f64() * 1e6
        );
    }
}

fn latency<A: Backend, B: Backend>(c: &mut Criterion, model: &str, ha: &Hca<A>, hb: &Hca<B>) {
    let mut g = c.benchmark_group(format!("rc_latency/{model}"));
    let cases = [
        (Op::Write, 64, false),
        (Op::Write, 28, true),
        (Op::Read, 64, false),
        (Op::Send, 64, false),
        (Op::FetchAdd, 8, false),
    ];
    for (op, size, inline) in cases {
        let work = Workload {
            op,
            size,
            inline,
            depth: 1,
            signal_every: 1,
        };
        let mut link = Link::new(ha, hb, work).unwrap_or_else(|e| fail(e));
        let mut rounds = Histogram::new();
        let id = name(op, size, inline);
        g.bench_function(&id, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    link.run(1, &|| ()).unwrap_or_else(|e| fail(e));
                    let d = t.elapsed();
                    rounds.add(d);
                    total += d;
                }
                total
            })
        });
        rounds.report(&format!("rc_latency/{model}/{id}"));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    // Many short cases: a second of warm-up and two of measurement each keep the whole run
    // near two and a half minutes.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
