//! Every memory key the driver makes has a new variant byte (bits 7:0), so a key kept after
//! its region went (a peer's rkey, say) does not name the region that later gets its mkey
//! index: the device refuses the stale key instead.

mod common;

use common::ALL;
use mlx5_driver::mr::Region;
use mlx5_sim::Mode;
use std::collections::HashSet;

#[test]
fn each_key_gets_the_next_variant_byte() {
    let (hca, _dev) = common::up(Mode::Inline);
    let mut variants = Vec::new();
    // Past a wrap of the byte: 300 keys, each region dropped (its key destroyed) at once.
    for _ in 0..300 {
        let r = Region::register(&hca, 64, ALL).unwrap();
        assert_eq!(r.lkey(), r.rkey());
        variants.push(r.lkey() as u8);
    }
    for w in variants.windows(2) {
        assert_eq!(w[1], w[0].wrapping_add(1), "{variants:?}");
    }
    // Regions alive together never share a key, whatever indices the device gives.
    let live: Vec<Region<'_, _>> = (0..8)
        .map(|_| Region::register(&hca, 64, ALL).unwrap())
        .collect();
    let keys: HashSet<u32> = live.iter().map(Region::lkey).collect();
    assert_eq!(keys.len(), live.len());
    drop(live);
    hca.teardown().unwrap();
}
