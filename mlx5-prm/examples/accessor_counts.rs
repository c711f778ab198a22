//! Runs one accessor workload of the benchmark so callgrind can count its instructions, which,
//! unlike time, are the same on every run (`scripts/bench-accessors` drives it).
//!
//! Usage: `accessor_counts get|set generated|hand_written|bitvec [ROUNDS]`

#[path = "../benches/workload/mod.rs"]
mod workload;

use std::hint::black_box;
use workload::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (op, variant) = (
        args.get(1).map(String::as_str),
        args.get(2).map(String::as_str),
    );
    let rounds: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(100);
    let mut cs = contexts();
    let mut bs: Vec<[u8; 64]> = cs.iter().map(|c| *c.storage()).collect();
    let mut sum = 0u64;
    for _ in 0..rounds {
        match (op, variant) {
            (Some("get"), Some("generated")) => {
                sum = sum.wrapping_add(read_generated(black_box(&cs)))
            }
            (Some("get"), Some("hand_written")) => {
                sum = sum.wrapping_add(read_hand(black_box(&bs)))
            }
            (Some("get"), Some("bitvec")) => sum = sum.wrapping_add(read_bitvec(black_box(&bs))),
            (Some("set"), Some("generated")) => write_generated(black_box(&mut cs)),
            (Some("set"), Some("hand_written")) => write_hand(black_box(&mut bs)),
            (Some("set"), Some("bitvec")) => write_bitvec(black_box(&mut bs)),
            _ => {
                eprintln!("usage: accessor_counts get|set generated|hand_written|bitvec [ROUNDS]");
                std::process::exit(2);
            }
        }
    }
    println!("{sum}");
}
