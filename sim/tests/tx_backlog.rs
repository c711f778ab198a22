//! What one doorbell can make the model hold: frames queue at the port while the model is
//! locked and leave once it is not, so a run of an SQ stops before its next WQE once 4 MiB
//! are queued, lets them leave, and goes on. The doorbell still returns with every WQE done,
//! in order; the link sees the first frames before the last WQEs have run.

mod common;

use common::tx::{parse, payload, Spec, Tx, Wqe};
use mlx5_prm::{CqeOpcode, SendOpcode};
use mlx5_sim::{Device, Link};
use std::sync::{Arc, Mutex, Weak};

/// A link that notes, for each frame, its length and how many frames the device had sent
/// by then.
#[derive(Default)]
struct Watch {
    dev: Mutex<Weak<Device>>,
    seen: Mutex<Vec<(usize, u64, Vec<u8>)>>,
}

impl Link for Watch {
    fn transmit(&self, frame: &[u8]) {
        let sent = self
            .dev
            .lock()
            .unwrap()
            .upgrade()
            .map_or(0, |d| d.tx_frames());
        self.seen
            .lock()
            .unwrap()
            .push((frame.len(), sent, frame.to_vec()));
    }
}

#[test]
fn a_doorbell_of_8_mib_leaves_in_rounds_and_completes() {
    let t = Tx::new();
    let watch = Arc::new(Watch::default());
    *watch.dev.lock().unwrap() = Arc::downgrade(t.e.n.dev());
    t.e.n.dev().attach_link(watch.clone());
    let data = payload(1 << 19);
    let (addr, key) = t.buffer(&data);
    let spec = Spec::TCP4;
    let hdr = spec.headers(data.len());
    let mss = 8948;
    let per = data.len().div_ceil(mss);
    // Sixteen LSOs of 512 KiB, one doorbell, only the last signaled.
    let lso = Wqe::eth(SendOpcode::Lso, 0xc0, mss as u16, &hdr).data(key, addr, 1 << 19);
    for _ in 0..15 {
        t.post(&lso.clone().unsignaled());
    }
    let last = t.pc();
    let first8 = t.post(&lso);
    t.ring(first8);
    assert_eq!(t.e.scq.expect(CqeOpcode::Req).wqe_counter(), last);
    let seen = std::mem::take(&mut *watch.seen.lock().unwrap());
    let total = 16 * per;
    assert_eq!(seen.len(), total);
    assert_eq!(t.e.n.dev().tx_frames(), total as u64);
    // The first frames left before the last WQEs ran: at most 4 MiB (and one WQE's frames)
    // were queued at a time.
    let first_round = seen[0].1 as usize;
    assert!(first_round < total, "one round of {first_round} frames");
    assert!(first_round * (mss + hdr.len()) < (4 << 20) + 2 * (1 << 19));
    // In order: each WQE's segments carry the payload from its start.
    for (k, (len, _, f)) in seen.iter().enumerate() {
        let seg = k % per;
        let p = parse(f);
        assert_eq!(p.seq, 1000 + (seg * mss) as u32);
        assert_eq!(*len, hdr.len() + p.payload.len());
        assert_eq!(
            p.payload[..],
            data[seg * mss..(seg * mss + p.payload.len())]
        );
    }
}
