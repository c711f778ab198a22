//! What the validating relay costs: 4-byte BAR 0 REGION_READs per second through the relay
//! and straight to the protocol crate's socket (the unprotected endpoint, which exists for
//! this measurement), in the same process and run, with the crate's own client.
//!
//! Run: `cargo bench -p mlx5-vfio-user --bench relay`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_vfio_user::session::{self, Endpoint, NoHooks, Shared};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vfio_user::Client;

/// Serves `endpoint` forever on a thread (the bench process exits when done).
fn serve(endpoint: Endpoint) {
    let shared = Arc::new(Shared::default());
    std::thread::spawn(move || loop {
        session::serve_one(&endpoint, &shared, &NoHooks);
    });
}

fn client(path: &Path) -> Client {
    let t = Instant::now();
    loop {
        match Client::new(path) {
            Ok(c) => return c,
            Err(e) if t.elapsed() < Duration::from_secs(10) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("connecting to {}: {e}", path.display()),
        }
    }
}

fn bench(c: &mut Criterion) {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("mlx5-vfio-user-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (relayed, direct) = (dir.join("relayed"), dir.join("direct"));
    serve(session::bind(&relayed).unwrap());
    serve(session::bind_unprotected(&direct).unwrap());
    let mut through_relay = client(&relayed);
    let mut straight = client(&direct);

    let mut g = c.benchmark_group("bar0_read4");
    g.throughput(Throughput::Elements(1));
    let mut buf = [0u8; 4];
    g.bench_function("relay", |b| {
        b.iter(|| through_relay.region_read(0, 4, &mut buf).unwrap())
    });
    g.bench_function("direct", |b| {
        b.iter(|| straight.region_read(0, 4, &mut buf).unwrap())
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
