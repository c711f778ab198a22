//! Freed DMA regions give their memory back: a driver that allocates and frees in a loop (queue
//! create/destroy cycles, mailboxes) does not grow the process. Its own test binary, as it
//! measures the process's resident memory.

use mlx5_sim::{Config, Device};

/// Resident set size of this process, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
// Under Miri: measures resident memory through /proc, which the interpreter does not model.
#[cfg_attr(miri, ignore)]
fn freed_regions_are_released() {
    let dev = Device::new(Config::default());
    let dma = dev.dma();
    let before = rss();
    for i in 0..8192u32 {
        let r = dma.alloc(64 << 10, 4096).unwrap();
        // Touch every page, as a driver filling a ring or buffer does.
        for page in 0..16 {
            dma.write(r.iova + page * 4096, &i.to_be_bytes()).unwrap();
        }
        dma.free(r.iova).unwrap();
    }
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 32 << 20,
        "8192 alloc/free cycles of 64 KiB grew the process by {} MiB",
        grown >> 20
    );
    assert_eq!((dma.allocated(), dma.regions()), (0, 0));
}
