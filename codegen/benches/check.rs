//! `prmc check` on a synthetic spec the size of a large PRM subset: 700 structures and 12,000
//! fields in 20 files. Measures the library call `prmc check` makes (read, parse, resolve,
//! every check), without printing.
//!
//! Run: `cargo bench -p prm-codegen --bench check`

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("prmc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = prm_codegen::synth::synthetic_spec(700, 12_000, 20);
    for (name, text) in &files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let first = prm_codegen::compile_dir(&dir).unwrap();
    assert!(first.is_ok(), "{}", first.render_human());
    let fields: usize = first.ir.structs.iter().map(|s| s.fields.len()).sum();
    assert_eq!((first.ir.structs.len(), fields), (700, 12_000));

    let mut group = c.benchmark_group("check");
    group.sample_size(20);
    group.bench_function("synthetic_700_structs_12000_fields", |b| {
        b.iter(|| black_box(prm_codegen::compile_dir(black_box(&dir)).unwrap()))
    });
    group.finish();
    std::fs::remove_dir_all(&dir).ok();
}

criterion_group!(benches, bench);
criterion_main!(benches);
