//! The async EQ's doorbells as the device receives them: the words the driver builds with the
//! generated word builders (`UarPageEqArmWord`, `UarPageEqUpdateWord`) carry the EQ number and
//! the consumer index where the model decodes them, the update doorbell goes out every half
//! ring while a poll reads on, and a full ring is read in one poll with nothing lost.

use mlx5_driver::backend::sim::{SimBackend, SimDma};
use mlx5_driver::backend::{Backend, Mmio};
use mlx5_driver::eq::Event;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::{UarPageEqArmWord, UarPageEqUpdateWord};
use mlx5_sim::{Config, Device};
use std::cell::RefCell;
use std::sync::Arc;

/// The model's backend, recording every 32-bit MMIO write (offset, value).
struct Recording {
    inner: SimBackend,
    writes: RefCell<Vec<(usize, u32)>>,
}

impl Mmio for Recording {
    fn len(&self) -> usize {
        self.inner.mmio().len()
    }
    fn read32(&self, offset: usize) -> u32 {
        self.inner.mmio().read32(offset)
    }
    fn write32(&self, offset: usize, value: u32) {
        self.writes.borrow_mut().push((offset, value));
        self.inner.mmio().write32(offset, value)
    }
    fn write64(&self, offset: usize, value: u64) {
        self.inner.mmio().write64(offset, value)
    }
}

impl Backend for Recording {
    type Mmio = Self;
    type Dma = SimDma;
    type Events = <SimBackend as Backend>::Events;
    type Barriers = <SimBackend as Backend>::Barriers;
    fn mmio(&self) -> &Self {
        self
    }
    fn dma(&self) -> &SimDma {
        self.inner.dma()
    }
    fn events(&self) -> &Self::Events {
        self.inner.events()
    }
}

const LOG_EQ: u8 = 3;

fn up() -> (Hca<Recording>, Arc<Device>) {
    let (inner, device) = SimBackend::new(Config::default());
    let backend = Recording {
        inner,
        writes: RefCell::new(Vec::new()),
    };
    let config = HcaConfig {
        eq_log_size: LOG_EQ,
        ..HcaConfig::default()
    };
    (Hca::bring_up(backend, &config).unwrap(), device)
}

/// The EQ doorbells written since the last call: `(arm, eqn, consumer index)` each.
fn eq_doorbells(hca: &Hca<Recording>) -> Vec<(bool, u32, u32)> {
    let uar_page = hca.info().uar as usize * 4096;
    hca.backend()
        .writes
        .borrow_mut()
        .drain(..)
        .filter_map(|(offset, value)| {
            let arm = match offset.checked_sub(uar_page) {
                Some(UarPageEqArmWord::OFFSET) => true,
                Some(UarPageEqUpdateWord::OFFSET) => false,
                _ => return None,
            };
            // Decoded by hand, the way the model reads them (EQN in the top byte).
            Some((arm, value >> 24, value & 0xff_ffff))
        })
        .collect()
}

#[test]
fn a_full_ring_is_read_in_one_poll_with_an_update_halfway_and_an_arm_at_the_end() {
    let (hca, device) = up();
    let entries = 1u32 << LOG_EQ;
    let eqn = u32::from(hca.info().eqn);
    eq_doorbells(&hca);
    for round in 0..3 {
        for k in 0..entries {
            device.raise_port_change(1, k % 2 == 0);
        }
        let events = hca.poll_events().unwrap();
        assert_eq!(events.len(), entries as usize, "round {round}");
        assert!(events
            .iter()
            .all(|e| matches!(e, Event::PortChange { port: 1, .. })));
        let rung = eq_doorbells(&hca);
        assert_eq!(rung.len(), 2, "round {round}: {rung:x?}");
        let (update, arm) = (rung[0], rung[1]);
        assert_eq!((update.0, update.1), (false, eqn), "{rung:x?}");
        assert_eq!((arm.0, arm.1), (true, eqn), "{rung:x?}");
        assert_eq!(arm.2 - update.2, entries / 2, "halfway, then the end");
        assert_eq!(device.eq_overruns(hca.info().eqn), Some(0));
    }
}

#[test]
fn a_poll_with_nothing_new_rings_nothing_and_a_short_batch_only_arms() {
    let (hca, device) = up();
    eq_doorbells(&hca);
    assert!(hca.poll_events().unwrap().is_empty());
    assert!(eq_doorbells(&hca).is_empty());
    device.raise_port_change(1, false);
    assert_eq!(hca.poll_events().unwrap().len(), 1);
    let rung = eq_doorbells(&hca);
    assert_eq!(rung.len(), 1, "{rung:x?}");
    assert!(rung[0].0, "the arm doorbell");
}
