//! Generated accessors against hand-written shift/mask code and against bitvec, on the same
//! CQ contexts. Each iteration reads (or writes) seven fields of 1,024 contexts.
//!
//! Run: `cargo bench -p mlx5-prm --bench accessors`

mod workload;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use workload::*;

fn bench(c: &mut Criterion) {
    let cs = contexts();
    let bs: Vec<[u8; 64]> = cs.iter().map(|c| *c.storage()).collect();
    assert_eq!(read_generated(&cs), read_hand(&bs));
    assert_eq!(read_generated(&cs), read_bitvec(&bs));

    let mut g = c.benchmark_group("get");
    g.throughput(Throughput::Elements((N * 7) as u64));
    g.bench_function("generated", |b| b.iter(|| read_generated(black_box(&cs))));
    g.bench_function("hand_written", |b| b.iter(|| read_hand(black_box(&bs))));
    g.bench_function("bitvec", |b| b.iter(|| read_bitvec(black_box(&bs))));
    g.finish();

    let mut g = c.benchmark_group("set");
    g.throughput(Throughput::Elements((N * 7) as u64));
    let mut cs2 = cs.clone();
    let mut bs2 = bs.clone();
    let mut bs3 = bs.clone();
    g.bench_function("generated", |b| {
        b.iter(|| write_generated(black_box(&mut cs2)))
    });
    g.bench_function("hand_written", |b| {
        b.iter(|| write_hand(black_box(&mut bs2)))
    });
    g.bench_function("bitvec", |b| b.iter(|| write_bitvec(black_box(&mut bs3))));
    g.finish();
    let after: Vec<[u8; 64]> = cs2.iter().map(|c| *c.storage()).collect();
    assert_eq!(
        after, bs2,
        "generated and hand-written setters write the same bytes"
    );
    assert_eq!(
        after, bs3,
        "generated setters and bitvec write the same bytes"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
