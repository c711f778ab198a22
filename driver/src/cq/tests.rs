use super::*;
use crate::backend::sim::SimBackend;
use crate::backend::{SeqCstBarriers, WithBarriers};
use crate::HcaConfig;
use mlx5_prm::rt::{Bytes, BytesMut};
use proptest::prelude::*;
use std::collections::VecDeque;

/// A stand-in producer: writes CQEs the way the device must (owner = pass parity).
struct Producer {
    index: u32,
}

impl Producer {
    fn write(&mut self, ring: &Ring<CQE>, log_size: u8, seq: u16) {
        let mut c = Cqe64::new_unchecked(ring.slot(self.index));
        c.storage_mut().write_bytes(0, &[0u8; 60]);
        c.set_wqe_counter(seq);
        c.set_qpn(0x42);
        c.set_byte_cnt(u32::from(seq) * 3);
        c.set_opcode(CqeOpcode::Req);
        SeqCstBarriers::to_device();
        c.set_owner((self.index >> log_size) & 1 == 1);
        self.index += 1;
    }
}

/// Arming writes the record's arm word, then the 64-bit doorbell carrying the same
/// sequence number, command and index and the CQ number (checked here against the
/// kernel's layout by hand: sn << 28 | cmd << 24 | ci, then the CQN); the model arms the
/// CQ it names, so the next completion raises one event.
#[test]
fn arming_writes_the_record_then_the_doorbell() {
    let (be, dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
    let mut cq = Cq::create(&hca, 4).unwrap();
    let (uar, cqn) = (hca.info().uar, u64::from(cq.cqn()));
    assert!(!dev.raise_completion(cq.cqn()), "not armed yet");
    cq.consumer = 0xab45_6789; // 0x456789 in 24 bits
    for (round, solicited) in [(0u64, false), (1, true), (2, false), (3, true), (4, false)] {
        cq.arm(solicited);
        let (sn, cmd, ci) = (round & 3, u64::from(solicited), 0x45_6789u64);
        let high = (sn << 28) | (cmd << 24) | ci;
        assert_eq!(dev.last_cq_doorbell(uar), Some((high << 32) | cqn));
        let rec = CqDoorbellRecord::new_unchecked(cq.record.slot(0));
        assert_eq!(rec.storage().read_be32(4), high as u32, "round {round}");
        assert_eq!(
            rec.consumer_index(),
            0,
            "the consumer index word is left alone"
        );
        assert!(dev.raise_completion(cq.cqn()), "armed by round {round}");
        assert!(!dev.raise_completion(cq.cqn()), "one event per arm");
    }
}

/// The ring a [`Feeding`] device keeps writing into, and how many more CQEs it writes.
struct Feed {
    ring: Ring<CQE>,
    log_size: u8,
    producer: Producer,
    left: u32,
}

std::thread_local! {
    static FEED: std::cell::RefCell<Option<Feed>> = const { std::cell::RefCell::new(None) };
}

/// Barriers of a device that hands over the next CQE each time the driver takes one (at
/// the from-device barrier after the ownership check), never minding the consumer index:
/// a device that keeps a poll loop fed.
struct Feeding;

impl Barriers for Feeding {
    fn to_device() {
        SeqCstBarriers::to_device()
    }
    fn from_device() {
        SeqCstBarriers::from_device();
        FEED.with(|f| {
            if let Some(f) = f.borrow_mut().as_mut().filter(|f| f.left > 0) {
                f.left -= 1;
                let seq = f.producer.index as u16;
                f.producer.write(&f.ring, f.log_size, seq);
            }
        });
    }
    fn wc_flush() {
        SeqCstBarriers::wc_flush()
    }
}

/// The model, its barriers those of [`Feeding`].
type FeedingBackend = WithBarriers<SimBackend, Feeding>;

/// A device that keeps handing over CQEs cannot keep one poll going: each call, plain or
/// timestamped, reads at most the ring's capacity, however large `max`.
#[test]
fn one_poll_reads_at_most_the_ring() {
    let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
    let hca = Hca::bring_up(FeedingBackend::new(be), &HcaConfig::default()).unwrap();
    let log_size = 3;
    let mut cq = Cq::create(&hca, log_size).unwrap();
    let entries = cq.capacity();
    let mut producer = Producer { index: 0 };
    producer.write(&cq.cqes, log_size, 0);
    let feed = Feed {
        ring: cq.cqes,
        log_size,
        producer,
        left: 100 * entries as u32,
    };
    FEED.with(|f| *f.borrow_mut() = Some(feed));
    let mut out = Vec::new();
    assert_eq!(cq.poll(usize::MAX, &mut out), entries);
    assert_eq!(out.len(), entries);
    let mut stamped = Vec::new();
    assert_eq!(cq.poll_timestamped(usize::MAX, &mut stamped), entries);
    assert_eq!(stamped.len(), entries);
    // Each call picks up where the last stopped: nothing lost, nothing read twice.
    let seqs = out.iter().chain(stamped.iter().map(|(c, _)| c));
    assert!(seqs.map(|c| c.wqe_counter).eq(0..2 * entries as u16));
    FEED.with(|f| *f.borrow_mut() = None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random interleavings of producing and polling, over many ring wraps, against a
    /// reference queue: nothing lost, nothing duplicated, order kept, and the consumer
    /// index the driver publishes is exactly what it consumed. (The CQ is a real one of
    /// the model, which writes nothing to it: no queue reports to it.)
    #[test]
    fn interleavings_match_a_reference_queue(
        log_size in 1u8..5,
        steps in proptest::collection::vec((any::<bool>(), 1usize..40), 1..200),
    ) {
        let (be, _dev) = SimBackend::new(mlx5_sim::Config::default());
        let hca = Hca::bring_up(be, &HcaConfig::default()).unwrap();
        let entries = 1usize << log_size;
        let mut cq = Cq::create(&hca, log_size).unwrap();
        let mut producer = Producer { index: 0 };
        let mut reference: VecDeque<u16> = VecDeque::new();
        let mut seq: u16 = 0;
        let mut out = Vec::new();
        for (produce, n) in steps {
            if produce {
                // The device never overwrites a CQE the driver has not consumed.
                let room = entries - reference.len();
                for _ in 0..n.min(room) {
                    producer.write(&cq.cqes, log_size, seq);
                    reference.push_back(seq);
                    seq = seq.wrapping_add(1);
                }
            } else {
                out.clear();
                let got = cq.poll(n, &mut out);
                prop_assert_eq!(got, out.len());
                for c in &out {
                    prop_assert_eq!(Some(c.wqe_counter), reference.pop_front());
                    prop_assert_eq!(c.byte_cnt, u32::from(c.wqe_counter) * 3);
                    prop_assert!(c.status.is_ok());
                }
                let published = CqDoorbellRecord::new_unchecked(cq.record.slot(0)).consumer_index();
                prop_assert_eq!(published, cq.consumer & 0xff_ffff);
            }
        }
        // Drain: everything produced comes out exactly once.
        out.clear();
        cq.poll(usize::MAX, &mut out);
        prop_assert_eq!(out.len(), reference.len());
    }
}
